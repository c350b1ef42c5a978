//! `SCALELOCK_MALLOC=pool`: large `malloc`s from scalelock's pool, everything else from glibc.
//!
//! # What is interposed
//!
//! ```text
//!   malloc calloc realloc free posix_memalign aligned_alloc memalign malloc_usable_size
//!
//!   allocation of n bytes, alignment a           free / realloc / usable size of p
//!     | pool on, 4 KiB <= n <= 4 MiB, a <= 4 KiB    | p inside the pool's reservation
//!     v                                             v          (an address comparison)
//!   scalelock_alloc::LargePool                  the pool
//!     | otherwise (or the pool is out of room)     | otherwise
//!     v                                             v
//!   glibc: __libc_malloc / __libc_calloc /      glibc: __libc_free / __libc_realloc /
//!          __libc_memalign                             malloc_usable_size (RTLD_NEXT)
//! ```
//!
//! `realloc` keeps a pool block in place while the new size stays in its size class, and moves
//! a glibc block that grows into the pool's range into the pool.
//!
//! With `SCALELOCK_MALLOC` unset (the default) or anything but `pool`, every call goes to glibc's
//! `__libc_*` entry points: one relaxed load and a branch more than glibc alone. `free` and
//! `realloc` ask the pool about a pointer only once the pool exists, so a program that never
//! turned it on never pays the address check. `valloc`/`pvalloc` and `reallocarray` are glibc's:
//! their pointers are glibc's, and the ones they free reach `free`/`realloc` here.
//!
//! # Safety in someone else's process
//!
//! No path here allocates (the pool maps its memory with `mmap`), formats or panics. The
//! setting is read with `getenv` on the first call (which may come from the dynamic linker's
//! start-up, before any constructor). The pool's per-thread caches use a Rust thread-local whose
//! destructor is registered through glibc's `__cxa_thread_atexit_impl` (which calls `calloc`:
//! a small size, served by glibc), and are flushed back when a thread exits. Blocks freed by a
//! thread other than the allocating one go to the freeing thread's cache: no lock, no atomic
//! read-modify-write on the hot paths.

use core::ffi::{c_int, c_void};
use core::ptr;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use scalelock_alloc::{Config, LargePool, PAGE};
use std::alloc::{GlobalAlloc, Layout};

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(p: *mut c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

/// glibc as the pool's backing allocator (for what the pool forwards: nothing in practice, as
/// the wrappers below send non-pooled sizes to glibc themselves, except when the pool is full).
struct Glibc;

/// glibc's `malloc` alignment.
const MALLOC_ALIGN: usize = 16;

// SAFETY: each method forwards to the glibc function with the matching contract; alignments
// above 16 use `__libc_memalign`, whose blocks `__libc_free` and `__libc_realloc` accept.
unsafe impl GlobalAlloc for Glibc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: plain C allocation calls.
        unsafe {
            if l.align() <= MALLOC_ALIGN {
                __libc_malloc(l.size()).cast()
            } else {
                __libc_memalign(l.align(), l.size()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.align() <= MALLOC_ALIGN {
            // SAFETY: plain C allocation call.
            unsafe { __libc_calloc(1, l.size()).cast() }
        } else {
            // SAFETY: `p` holds `l.size()` bytes when not null.
            unsafe {
                let p: *mut u8 = __libc_memalign(l.align(), l.size()).cast();
                if !p.is_null() {
                    p.write_bytes(0, l.size());
                }
                p
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
        // SAFETY: `p` came from glibc (see `alloc`).
        unsafe { __libc_free(p.cast()) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        if l.align() <= MALLOC_ALIGN {
            // SAFETY: `p` came from `__libc_malloc`/`__libc_calloc`.
            return unsafe { __libc_realloc(p.cast(), new_size).cast() };
        }
        // SAFETY: a new aligned block, the old contents copied, the old block freed.
        unsafe {
            let q: *mut u8 = __libc_memalign(l.align(), new_size).cast();
            if !q.is_null() {
                ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
                __libc_free(p.cast());
            }
            q
        }
    }
}

static POOL: LargePool<Glibc> = LargePool::with_config(Glibc, Config::new());

/// 0 until read, then `OFF` or `ON`.
static STATE: AtomicU8 = AtomicU8::new(0);
const OFF: u8 = 1;
const ON: u8 = 2;

#[inline]
fn pool_on() -> bool {
    match STATE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => read_setting(),
    }
}

#[cold]
fn read_setting() -> bool {
    // SAFETY: getenv with a NUL-terminated name; it neither allocates nor locks. A non-null
    // result is a NUL-terminated string, read at once.
    let on = unsafe {
        let raw = libc::getenv(c"SCALELOCK_MALLOC".as_ptr());
        !raw.is_null() && core::ffi::CStr::from_ptr(raw).to_bytes() == b"pool"
    };
    STATE.store(if on { ON } else { OFF }, Ordering::Relaxed);
    on
}

/// Does the pool serve `n` bytes aligned to `align` (when it is on)?
#[inline]
fn pooled(n: usize, align: usize) -> bool {
    let c = POOL.config();
    n >= c.threshold && n <= c.cap && align <= PAGE && pool_on()
}

#[inline]
fn layout(n: usize, align: usize) -> Option<Layout> {
    Layout::from_size_align(n, align.max(MALLOC_ALIGN)).ok()
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// A pooled block of `n` bytes, or glibc's answer.
#[inline]
unsafe fn alloc_aligned(n: usize, align: usize, zeroed: bool) -> *mut c_void {
    if pooled(n, align) {
        if let Some(l) = layout(n, align) {
            // SAFETY: non-zero size (at least the threshold).
            let p = unsafe {
                if zeroed {
                    POOL.alloc_zeroed(l)
                } else {
                    POOL.alloc(l)
                }
            };
            if p.is_null() {
                set_errno(libc::ENOMEM);
            }
            return p.cast();
        }
    }
    // SAFETY: plain glibc allocation calls.
    unsafe {
        if align <= MALLOC_ALIGN {
            if zeroed {
                __libc_calloc(1, n)
            } else {
                __libc_malloc(n)
            }
        } else {
            let p = __libc_memalign(align, n);
            if zeroed && !p.is_null() {
                p.cast::<u8>().write_bytes(0, n);
            }
            p
        }
    }
}

/// `malloc(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn malloc(n: usize) -> *mut c_void {
    // SAFETY: forwarded.
    unsafe { alloc_aligned(n, MALLOC_ALIGN, false) }
}

/// `calloc(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        // SAFETY: forwarded.
        Some(n) if pooled(n, MALLOC_ALIGN) => unsafe { alloc_aligned(n, MALLOC_ALIGN, true) },
        // SAFETY: glibc checks the product itself.
        _ => unsafe { __libc_calloc(count, size) },
    }
}

/// `free(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if POOL.owns(p as *const u8) {
        // SAFETY: a live pool block (C contract); the pool routes by address, not by layout.
        unsafe { POOL.dealloc(p.cast(), Layout::new::<u8>()) };
    } else {
        // SAFETY: glibc's block, or null.
        unsafe { __libc_free(p) }
    }
}

/// `realloc(3)`: in place when the new size stays in the block's size class.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: forwarded.
        return unsafe { malloc(n) };
    }
    match POOL.usable_size(p as *const u8) {
        Some(usable) => {
            if n == 0 {
                // glibc's behaviour: free and return null.
                // SAFETY: forwarded.
                unsafe { free(p) };
                return ptr::null_mut();
            }
            let Some(l) = layout(usable, MALLOC_ALIGN) else {
                set_errno(libc::ENOMEM);
                return ptr::null_mut();
            };
            // SAFETY: a live pool block of `usable` bytes; `n` is non-zero. The pool keeps it in
            // place within its class, moves it (to glibc below the threshold) otherwise, and
            // leaves it untouched when it returns null.
            let q = unsafe { POOL.realloc(p.cast(), l, n) };
            if q.is_null() {
                set_errno(libc::ENOMEM);
            }
            q.cast()
        }
        None => {
            // A glibc block growing into the pool's range moves there (a buffer grown by
            // realloc is as hot as one malloc'ed large).
            if pooled(n, MALLOC_ALIGN) {
                let old = libc_usable_size(p);
                if let (true, Some(l)) = (old > 0, layout(n, MALLOC_ALIGN)) {
                    // SAFETY: non-zero size; `q` holds `n` bytes and `p` at least `old`.
                    unsafe {
                        let q = POOL.alloc(l);
                        if !q.is_null() {
                            ptr::copy_nonoverlapping(p.cast::<u8>(), q, old.min(n));
                            __libc_free(p);
                            return q.cast();
                        }
                    }
                }
            }
            // SAFETY: glibc's block.
            unsafe { __libc_realloc(p, n) }
        }
    }
}

/// `posix_memalign(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, n: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    // SAFETY: forwarded.
    let p = unsafe { alloc_aligned(n, align, false) };
    if p.is_null() && n != 0 {
        return libc::ENOMEM;
    }
    // SAFETY: `out` is a valid pointer (C contract).
    unsafe { *out = p };
    0
}

/// `aligned_alloc(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, n: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        set_errno(libc::EINVAL);
        return ptr::null_mut();
    }
    // SAFETY: forwarded.
    unsafe { alloc_aligned(n, align, false) }
}

/// `memalign(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, n: usize) -> *mut c_void {
    if align.is_power_of_two() {
        // SAFETY: forwarded.
        unsafe { alloc_aligned(n, align, false) }
    } else {
        // glibc rounds a non-power-of-two alignment up; let it.
        // SAFETY: plain glibc call.
        unsafe { __libc_memalign(align, n) }
    }
}

/// glibc's `malloc_usable_size`, found once with `dlsym(RTLD_NEXT, ..)` (0 = not yet).
static LIBC_USABLE: AtomicUsize = AtomicUsize::new(0);

/// `malloc_usable_size(3)`.
///
/// # Safety
/// The C contract.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if let Some(n) = POOL.usable_size(p as *const u8) {
        return n;
    }
    libc_usable_size(p)
}

/// glibc's `malloc_usable_size` of one of its blocks (0 if it cannot be found).
fn libc_usable_size(p: *mut c_void) -> usize {
    let mut f = LIBC_USABLE.load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: dlsym with a NUL-terminated name; it may call calloc, which is served here
        // without reaching this function.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"malloc_usable_size".as_ptr()) } as usize;
        if f == 0 {
            return 0;
        }
        LIBC_USABLE.store(f, Ordering::Relaxed);
    }
    // SAFETY: `f` is glibc's `size_t malloc_usable_size(void *)`; `p` is a glibc block.
    unsafe {
        let f: unsafe extern "C" fn(*mut c_void) -> usize = core::mem::transmute(f);
        f(p)
    }
}

/// Whether the pool owns `p`: 1 or 0. For tests (`dlsym(RTLD_DEFAULT, "scalelock_malloc_owns")`).
#[no_mangle]
pub extern "C" fn scalelock_malloc_owns(p: *const c_void) -> c_int {
    c_int::from(POOL.owns(p.cast()))
}
