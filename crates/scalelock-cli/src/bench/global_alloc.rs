//! The `scalelock` binary's global allocator: glibc, unless the environment names another.
//!
//! `large-alloc` measures each allocator the way its users run it: as the global allocator of
//! a process of its own (see [`super::child`]). A Rust program picks its global allocator at
//! compile time, so this binary carries all four and picks one when it starts, from
//! [`ENV`] (`system`, `mimalloc`, `jemalloc` or `scalelock-pool`). Without it (every normal
//! run), every allocation goes to glibc, as before.
//!
//! The choice is read once, at the process's first allocation (before `main`), with
//! `getenv`, which does not allocate; a later change of the variable changes nothing, so every
//! block is freed by the allocator that made it.
//!
//! ```text
//!   CHOICE: UNREAD --first allocation--> SYSTEM | MIMALLOC | JEMALLOC | POOL   (never changes)
//! ```

use scalelock_alloc::LargePool;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable naming the global allocator of this process.
pub const ENV: &str = "SCALELOCK_BENCH_GLOBAL_ALLOC";

const UNREAD: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;
const JEMALLOC: u8 = 3;
const POOL: u8 = 4;

/// The allocators [`ENV`] may name, in the order of their codes (1..).
pub const NAMES: [&str; 4] = ["system", "mimalloc", "jemalloc", "scalelock-pool"];

static CHOICE: AtomicU8 = AtomicU8::new(UNREAD);

/// The pool serving the process when [`ENV`] is `scalelock-pool` (default settings, over glibc:
/// what `#[global_allocator] static A: LargePool = LargePool::new();` gives a user).
pub static GLOBAL_POOL: LargePool = LargePool::new();

/// Dispatches every allocation to the allocator chosen at start (see the module docs).
///
/// ```ignore
/// #[global_allocator]
/// static GLOBAL: Switch = Switch;
/// ```
pub struct Switch;

/// The name of this process's global allocator (`system` unless [`ENV`] named another).
///
/// ```ignore
/// assert_eq!(current(), "system");
/// ```
pub fn current() -> &'static str {
    NAMES[choice() as usize - 1]
}

#[inline]
fn choice() -> u8 {
    match CHOICE.load(Ordering::Relaxed) {
        UNREAD => read_choice(),
        c => c,
    }
}

#[cold]
fn read_choice() -> u8 {
    // SAFETY: the name is a NUL-terminated string; getenv returns null or a NUL-terminated
    // string owned by the environment, read here before anything could change it.
    let value = unsafe { libc::getenv(c"SCALELOCK_BENCH_GLOBAL_ALLOC".as_ptr()) };
    let c = if value.is_null() {
        SYSTEM
    } else {
        // SAFETY: non-null, NUL-terminated (above).
        let v = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
        match NAMES.iter().position(|n| n.as_bytes() == v) {
            Some(i) => i as u8 + 1,
            None => SYSTEM,
        }
    };
    // Every thread that gets here computes the same value from the same environment.
    CHOICE.store(c, Ordering::Relaxed);
    c
}

// SAFETY: every call is forwarded to one allocator, the same one for the whole life of the
// process (the choice never changes once read), so each block is freed or resized by the
// allocator that made it.
unsafe impl GlobalAlloc for Switch {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY (all four): forwarded from the caller.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.alloc(l),
                JEMALLOC => tikv_jemallocator::Jemalloc.alloc(l),
                POOL => GLOBAL_POOL.alloc(l),
                _ => System.alloc(l),
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY (all four): forwarded from the caller.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.alloc_zeroed(l),
                JEMALLOC => tikv_jemallocator::Jemalloc.alloc_zeroed(l),
                POOL => GLOBAL_POOL.alloc_zeroed(l),
                _ => System.alloc_zeroed(l),
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY (all four): forwarded from the caller; the same allocator made `p`.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.dealloc(p, l),
                JEMALLOC => tikv_jemallocator::Jemalloc.dealloc(p, l),
                POOL => GLOBAL_POOL.dealloc(p, l),
                _ => System.dealloc(p, l),
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // SAFETY (all four): forwarded from the caller; the same allocator made `p`.
        unsafe {
            match choice() {
                MIMALLOC => mimalloc::MiMalloc.realloc(p, l, new_size),
                JEMALLOC => tikv_jemallocator::Jemalloc.realloc(p, l, new_size),
                POOL => GLOBAL_POOL.realloc(p, l, new_size),
                _ => System.realloc(p, l, new_size),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_variable_the_process_runs_on_glibc() {
        if std::env::var_os(ENV).is_none() {
            assert_eq!(current(), "system");
        }
    }
}
