//! `pthread_spin_*`: a test-and-test-and-set lock that stops burning a core it cannot use.
//!
//! # The 4 bytes of `pthread_spinlock_t`
//!
//! ```text
//!  0 free, 1 held: glibc's own encoding, so a process-shared spinlock in shared memory works
//!  between a process that runs under this library and one that does not.
//! ```
//!
//! A waiter waits in the wait layer's [`spin_until`]: it re-reads the word with calibrated
//! backoff for up to `MAX_ADAPTIVE_SPIN_NS`, then yields the CPU before spinning again, so that
//! when threads outnumber cores the holder gets to run instead of being starved by spinners (glibc
//! spins without ever yielding). With `SCALELOCK_LOCK=spin` it never yields.
//!
//! The word stays a plain flag (no futex sleep) because the same 4 bytes may be shared between
//! processes and carry no room to say so.

use crate::config::{mode, Mode};
use crate::real;
use crate::route::{serve, Served};
use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, Ordering};
use libc::pthread_spinlock_t;
use scalelock::wait::{spin_until, Awake};

const _: () = assert!(core::mem::size_of::<pthread_spinlock_t>() == 4);

/// A spinlock as [`serve`] sees it: its word, and never glibc's by its bytes (the 4 bytes have
/// no room for a marker: glibc serves spinlocks only under `SCALELOCK_LOCK=glibc`).
/// (`pthread_spinlock_t` is glibc's plain `int`.)
impl Served for pthread_spinlock_t {
    type Ours<'a> = &'a AtomicI32;

    #[inline(always)]
    unsafe fn view<'a>(s: *mut pthread_spinlock_t) -> (&'a AtomicI32, bool) {
        // SAFETY: the caller's promise; AtomicI32 has the size and alignment of the C int.
        (unsafe { AtomicI32::from_ptr(s) }, false)
    }
}

/// Frees the word: `pthread_spin_init` and `pthread_spin_unlock` on scalelock's side.
#[inline]
fn set_free(w: &AtomicI32) -> c_int {
    w.store(0, Ordering::Release);
    0
}

#[inline]
fn try_take(w: &AtomicI32) -> bool {
    w.load(Ordering::Relaxed) == 0
        && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
}

#[cold]
fn lock_slow(w: &AtomicI32) {
    let awake = if mode() == Mode::Spin {
        Awake::Spin
    } else {
        Awake::SpinThenYield
    };
    spin_until(|| try_take(w), awake, None);
}

/// `pthread_spin_init`: process-shared or not, the same 0/1 word (see the module comment).
///
/// # Safety
/// `s` points at writable memory for a `pthread_spinlock_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_init(s: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe { serve(s, set_free, || real::spin_init(s, pshared)) }
}

/// `pthread_spin_destroy`.
///
/// # Safety
/// `s` points at an initialised `pthread_spinlock_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(s: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe { serve(s, |_| 0, || real::spin_destroy(s)) }
}

/// `pthread_spin_lock`.
///
/// # Safety
/// `s` points at an initialised `pthread_spinlock_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(s: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            s,
            |w| {
                if w.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    lock_slow(w);
                }
                0
            },
            || real::spin_lock(s),
        )
    }
}

/// `pthread_spin_trylock`: `EBUSY` if held.
///
/// # Safety
/// `s` points at an initialised `pthread_spinlock_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_trylock(s: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            s,
            |w| match w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => 0,
                Err(_) => libc::EBUSY,
            },
            || real::spin_trylock(s),
        )
    }
}

/// `pthread_spin_unlock`.
///
/// # Safety
/// `s` points at an initialised `pthread_spinlock_t` the caller holds.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(s: *mut pthread_spinlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe { serve(s, set_free, || real::spin_unlock(s)) }
}
