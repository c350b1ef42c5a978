//! `libscalelock_preload.so`: scalelock's locks under an unmodified C/C++ program.
//!
//! ```text
//! LD_PRELOAD=target/release/libscalelock_preload.so  mariadbd ...
//! ```
//!
//! The library exports plain, unversioned `pthread_mutex_*`, `pthread_rwlock_*`,
//! `pthread_cond_*` and `pthread_spin_*` (and the old `__pthread_mutex_*` and `__pthread_rwlock_*`
//! aliases). The dynamic linker binds every caller's reference to them, whatever glibc version it
//! was linked against, ahead of glibc's own.
//!
//! # Where the state lives
//!
//! In place, inside the caller's `pthread_*_t`: nothing is allocated, and the all-zero static
//! initialisers (`PTHREAD_MUTEX_INITIALIZER`, `PTHREAD_COND_INITIALIZER`, ...) are valid unlocked
//! objects. Each module draws its type's bytes: [`mutex`] (40 bytes), [`rwlock`] (56), [`cond`]
//! (48), [`spin`] (4).
//!
//! # What is passed through to glibc
//!
//! Process-shared, robust and priority-inherit/protect mutexes and process-shared rwlocks and
//! condvars keep glibc's implementation (found with `dlsym(RTLD_NEXT, ..)`,
//! `dlvsym(.., "GLIBC_2.3.2")` for condvars): their `init` is glibc's, which records the attribute
//! in the object in glibc's own way (flag bits in the mutex's `__kind`, the rwlock's `__shared`,
//! bit 0 of the condvar's `__wrefs`), and every later call reads that marker and routes to glibc.
//! Static initialisers never create these kinds.
//!
//! # Configuration
//!
//! - `SCALELOCK_LOCK=scalelock|spin|glibc`: scalelock's adaptive mutex (default); the same with
//!   `SpinPolicy::Always` (a pure spinlock, for comparison); or pure pass-through to glibc (A/B runs).
//! - `SCALELOCK_SPIN`: as in the library (`auto`, nanoseconds, `0`, `always`); `SCALELOCK_LOCK=spin`
//!   overrides it with `always`.
//!
//! - `SCALELOCK_LOCKSTAT=1` (`on`, `exit`): lockstat for every lock the library serves; the table
//!   is written at exit (and on a SIGINT left at its default action) to
//!   `SCALELOCK_LOCKSTAT_FILE`, else stderr, `SCALELOCK_LOCKSTAT_TOP` rows (see [`stats`]).
//!
//! A bad value gets one line on stderr and the default.
//!
//! # Safety in someone else's process
//!
//! No lock path allocates, formats or panics (every `extern "C"` function aborts rather than
//! unwinds; arithmetic is explicit about wrapping). The condvar waits are cancellation points:
//! glibc's forced unwind of a cancelled thread crosses only their C part (`csrc/cond_wait.c`),
//! never a Rust frame (see [`cond`]). Initialisation is lazy and re-entrancy-safe:
//! the configuration is read with `getenv` on the first call (which may come before any
//! constructor), glibc's functions are resolved once, and a call that arrives from inside that
//! resolution (an interposed `malloc` called by `dlsym`) is served without it. Thread identity is
//! `pthread_self()`, never a Rust thread-local, so locks work until the program's very last
//! instruction and in a `fork()`ed child (whose only thread keeps its `pthread_self`).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

/// Defines an exported C entry point that hands its caller's return address to `$imp` as one
/// more (last) argument, `caller: usize`, for lockstat's call sites.
///
/// With `cfg(caller_trampolines)` (x86_64, Rust 1.88+) the entry point is two instructions: the
/// return address, on top of the stack at entry, is loaded into the register of the next integer
/// argument (`$reg`), and a jump (not a call) goes to `$imp`, which therefore returns straight to
/// the C caller with the stack as the caller left it. Elsewhere it is a plain function passing 0.
macro_rules! entry_with_caller {
    ($(#[$attr:meta])* pub fn $name:ident($($arg:ident: $ty:ty),*) -> c_int = $imp:ident, $reg:literal;) => {
        $(#[$attr])*
        #[cfg(caller_trampolines)]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> core::ffi::c_int {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {imp}",
                imp = sym $imp,
            )
        }

        $(#[$attr])*
        #[cfg(not(caller_trampolines))]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> core::ffi::c_int {
            // SAFETY: the same contract as `$imp`'s, with an unknown caller.
            unsafe { $imp($($arg,)* 0) }
        }
    };
}

/// Defines an exported C entry point that is implemented in C (`csrc/`), for functions through
/// which glibc's forced unwind (thread cancellation) may pass: no Rust frame may be unwound.
///
/// With `cfg(caller_trampolines)` the entry point is a single jump to `$c` (no frame of its own;
/// `$c` sees the program's return address as its own). Elsewhere it is a plain `"C-unwind"` call,
/// whose frame holds nothing to drop (a plain old frame, which a forced unwind may cross).
macro_rules! entry_in_c {
    ($(#[$attr:meta])* pub fn $name:ident($($arg:ident: $ty:ty),*) -> c_int = $c:ident;) => {
        $(#[$attr])*
        #[cfg(caller_trampolines)]
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> core::ffi::c_int {
            core::arch::naked_asm!("jmp {c}", c = sym $c)
        }

        $(#[$attr])*
        #[cfg(not(caller_trampolines))]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name($($arg: $ty),*) -> core::ffi::c_int {
            // SAFETY: the same contract as `$c`'s.
            unsafe { $c($($arg),*) }
        }
    };
}

pub mod cond;
pub mod config;
mod malloc;
pub mod mutex;
mod real;
mod route;
pub mod rwlock;
pub mod spin;
mod stacks;
pub mod stats;

use core::ffi::c_int;

/// Whether the library is loaded and serving locks: 1 with scalelock's locks, 2 with
/// `SCALELOCK_LOCK=spin`, 0 in pure pass-through (`SCALELOCK_LOCK=glibc`).
///
/// Test programs look it up with `dlsym(RTLD_DEFAULT, "scalelock_preload_active")` to check that
/// interposition happened.
#[no_mangle]
pub extern "C" fn scalelock_preload_active() -> c_int {
    match config::mode() {
        config::Mode::Scalelock => 1,
        config::Mode::Spin => 2,
        config::Mode::Glibc => 0,
    }
}

/// Runs when the library is loaded: reads the configuration, resolves glibc's functions and
/// registers the fork handlers while the process is still quiet. Calls that come earlier (other
/// libraries' constructors) initialise the same things lazily.
extern "C" fn on_load() {
    config::mode();
    real::resolve();
    stats::on_load();
    // SAFETY: registering an `extern "C" fn()` that lives as long as the process (the library is
    // never unloaded: it is preloaded). The handler only touches atomics.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// In the child only the forking thread exists: state that another thread was in the middle of
/// changing is reset so the child can use it.
extern "C" fn after_fork_child() {
    real::after_fork_child();
}
