//! `pthread_cond_*`, replaced entirely.
//!
//! glibc's `pthread_cond_wait` re-takes the mutex through glibc-internal functions, so it cannot
//! work with a replaced mutex: every condvar that is not process-shared is served here.
//!
//! # The 48 bytes of `pthread_cond_t` (x86_64 glibc)
//!
//! ```text
//!  offset  glibc's field         here
//!   0..4   __wseq (low)          seq: futex word, bumped by every signal and broadcast (wrapping)
//!   4..8   __wseq (high)         waiters: threads inside wait (bits 0..30)
//!                                | DESTROYING (bit 31): pthread_cond_destroy waits for them to leave
//!   8..36  ...                   unused (zero)
//!  36..40  __wrefs               flags, with glibc's meaning of the two low bits:
//!                                  bit 0  process-shared: written only by glibc's
//!                                         pthread_cond_init; set means "glibc's condvar"
//!                                  bit 1  the condattr clock is CLOCK_MONOTONIC (else REALTIME)
//!  40..48  __g_signals           unused (zero)
//! ```
//!
//! # Protocol
//!
//! `wait` counts itself in `waiters` and reads `seq` while it still holds the mutex, releases the
//! mutex, and sleeps on `seq` until it moves (or the deadline passes). `signal` and `broadcast` do
//! nothing when `waiters` is zero; otherwise they bump `seq` and wake one, or all, sleepers. A
//! signaller that holds the mutex after a waiter released it sees that waiter counted (the mutex
//! orders the two), and its bump makes the waiter's futex wait fail or wakes it: no lost wake-up.
//!
//! A woken waiter leaves `waiters` *before* it re-takes the mutex and touches the condvar no more
//! after that. `pthread_cond_destroy` waits until `waiters` is zero, so a program may destroy and
//! free a condvar right after a broadcast, even while it still holds the mutex (as glibc allows).
//! That ordering is why this is not scalelock's `Condvar`, which requeues broadcast waiters onto
//! the mutex and leaves its count only once they are running again; it also lets a condvar wait
//! on a mutex that glibc serves (robust, priority-inherit), which scalelock's cannot.
//!
//! # Limitation: thread cancellation
//!
//! glibc's `pthread_cond_wait` is a cancellation point; this one is not: a thread that
//! `pthread_cancel` targets while it waits here is cancelled at its next cancellation point
//! after the wait returns (a notification or, for timed waits, the deadline), not during the wait.

use crate::config::{mode, Mode};
use crate::mutex::{clock_of, reacquire_after_wait, release_for_wait};
use crate::real;
use core::ffi::c_int;
use core::mem::{align_of, offset_of, size_of};
use core::sync::atomic::{AtomicU32, Ordering};
use libc::{clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec};
use scalelock::wait::{futex, Clock, Deadline};

/// The in-place view of a `pthread_cond_t` (see the module's drawing).
#[repr(C, align(8))]
pub(crate) struct Cond {
    seq: AtomicU32,
    waiters: AtomicU32,
    _unused: [AtomicU32; 7],
    flags: AtomicU32,
    _unused_tail: [AtomicU32; 2],
}

const _: () = {
    assert!(size_of::<Cond>() == size_of::<pthread_cond_t>());
    assert!(size_of::<pthread_cond_t>() == 48);
    assert!(align_of::<Cond>() <= align_of::<pthread_cond_t>());
    assert!(offset_of!(Cond, flags) == 36);
};

const SHARED: u32 = 1;
const MONOTONIC: u32 = 2;
const DESTROYING: u32 = 1 << 31;
const COUNT: u32 = DESTROYING - 1;

extern "C" {
    fn pthread_condattr_getpshared(a: *const pthread_condattr_t, p: *mut c_int) -> c_int;
    fn pthread_condattr_getclock(a: *const pthread_condattr_t, c: *mut clockid_t) -> c_int;
}

/// Who serves a call on a condvar.
enum Route<'a> {
    Ours(&'a Cond),
    Glibc,
    Unavailable,
}

/// # Safety
/// `c` is non-null, aligned and points at a live `pthread_cond_t`.
#[inline]
unsafe fn route<'a>(c: *mut pthread_cond_t) -> Route<'a> {
    // SAFETY: the caller's promise; every field of `Cond` is an atomic, so any bytes are valid.
    let cv = unsafe { &*(c as *const Cond) };
    let glibc_object = cv.flags.load(Ordering::Relaxed) & SHARED != 0;
    if mode() == Mode::Glibc || glibc_object {
        if real::available() {
            return Route::Glibc;
        }
        if glibc_object {
            return Route::Unavailable;
        }
    }
    Route::Ours(cv)
}

impl Cond {
    fn clock(&self) -> Clock {
        if self.flags.load(Ordering::Relaxed) & MONOTONIC != 0 {
            Clock::Monotonic
        } else {
            Clock::Realtime
        }
    }

    /// # Safety
    /// `m` is the mutex the caller holds (a live `pthread_mutex_t`).
    unsafe fn wait(
        &self,
        m: *mut pthread_mutex_t,
        deadline: Option<&Deadline>,
        caller: usize,
    ) -> c_int {
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // Read while the mutex is still held: see the module comment.
        let seq = self.seq.load(Ordering::Relaxed);
        // SAFETY: the caller's promise.
        let released = match unsafe { release_for_wait(m) } {
            Ok(r) => r,
            Err(e) => {
                self.leave();
                return e;
            }
        };
        let in_time = futex::wait(&self.seq, seq, deadline);
        self.leave();
        // From here on the condvar may be destroyed: it is not touched again.
        // SAFETY: `m` was released by `release_for_wait` just above.
        let r = unsafe { reacquire_after_wait(m, released, caller) };
        if r != 0 {
            r
        } else if in_time {
            0
        } else {
            libc::ETIMEDOUT
        }
    }

    /// A waiter leaves; the last one to leave wakes a waiting `pthread_cond_destroy`.
    #[inline]
    fn leave(&self) {
        // Release: a destroyer that sees the count drop sees this waiter done with the condvar.
        let before = self.waiters.fetch_sub(1, Ordering::Release);
        if before == DESTROYING | 1 {
            // The word may be freed memory by now; a futex wake on it can at worst wake some
            // other waiter of that address spuriously, which every futex user tolerates.
            futex::wake(&self.waiters, u32::MAX);
        }
    }

    fn wake(&self, n: u32) {
        if self.waiters.load(Ordering::Relaxed) & COUNT == 0 {
            return;
        }
        self.seq.fetch_add(1, Ordering::Relaxed);
        futex::wake(&self.seq, n);
    }

    fn destroy(&self) {
        let mut w = self.waiters.fetch_or(DESTROYING, Ordering::Acquire) | DESTROYING;
        while w & COUNT != 0 {
            futex::wait(&self.waiters, w, None);
            w = self.waiters.load(Ordering::Acquire);
        }
    }
}

/// `pthread_cond_init`: honours the condattr clock; a process-shared condvar is glibc's.
///
/// # Safety
/// `c` points at writable memory for a `pthread_cond_t`; `attr` is null or initialised.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    if c.is_null() {
        return libc::EINVAL;
    }
    let mut pshared = libc::PTHREAD_PROCESS_PRIVATE;
    let mut clock = libc::CLOCK_REALTIME;
    if !attr.is_null() {
        // SAFETY: an initialised attribute (the caller's promise), only read by glibc's getters.
        unsafe {
            pthread_condattr_getpshared(attr, &mut pshared);
            pthread_condattr_getclock(attr, &mut clock);
        }
    }
    let shared = pshared != libc::PTHREAD_PROCESS_PRIVATE;
    if shared || mode() == Mode::Glibc {
        if real::available() {
            // SAFETY: pass-through with the caller's arguments.
            return unsafe { real::cond_init(c, attr) };
        }
        if shared {
            return libc::EAGAIN;
        }
    }
    let flags = if clock == libc::CLOCK_MONOTONIC {
        MONOTONIC
    } else {
        0
    };
    // SAFETY: `c` is valid for writes of a whole pthread_cond_t; nobody uses a condvar while it
    // is being initialised.
    unsafe {
        core::ptr::write_bytes(c.cast::<u8>(), 0, size_of::<pthread_cond_t>());
        (*(c as *const Cond)).flags.store(flags, Ordering::Relaxed);
    }
    0
}

/// `pthread_cond_destroy`: waits until woken waiters have left the condvar.
///
/// # Safety
/// `c` points at an initialised `pthread_cond_t` on which no thread is blocked.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        Route::Ours(cv) => {
            cv.destroy();
            0
        }
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_destroy(c) },
        Route::Unavailable => libc::EAGAIN,
    }
}

/// # Safety
/// `c`, `m` non-null and initialised; `m` held by the caller.
unsafe fn wait_on(
    cv: &Cond,
    m: *mut pthread_mutex_t,
    clock: Option<Clock>,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    let deadline = match clock {
        None => None,
        Some(clock) => {
            if abstime.is_null() {
                return libc::EINVAL;
            }
            // SAFETY: non-null timespec from the caller, read once.
            match Deadline::from_timespec(clock, unsafe { abstime.read() }) {
                Some(d) => Some(d),
                None => return libc::EINVAL,
            }
        }
    };
    // SAFETY: the caller's promise.
    unsafe { cv.wait(m, deadline.as_ref(), caller) }
}

/// Whether glibc's condvar can wait with `m`: only if glibc serves `m` too (glibc's wait
/// re-takes the mutex with its internal functions). A process-shared condvar used with a private
/// mutex that scalelock serves gets `EINVAL`.
///
/// # Safety
/// `m` is non-null and points at an initialised `pthread_mutex_t`.
unsafe fn glibc_can_wait_with(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's promise.
    mode() == Mode::Glibc || unsafe { crate::mutex::served_by_glibc(m) }
}

entry_with_caller! {
    /// `pthread_cond_wait`.
    ///
    /// # Safety
    /// `c` and `m` point at initialised objects; the caller holds `m`.
    pub fn pthread_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int = cond_wait_from, "rdx";
}

/// The body of [`pthread_cond_wait`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_cond_wait`].
unsafe extern "C" fn cond_wait_from(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    caller: usize,
) -> c_int {
    if c.is_null() || m.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        // SAFETY: the caller's promise.
        Route::Ours(cv) => unsafe { wait_on(cv, m, None, core::ptr::null(), caller) },
        // SAFETY: pass-through; `m` is initialised (the caller's promise).
        Route::Glibc if unsafe { !glibc_can_wait_with(m) } => libc::EINVAL,
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_wait(c, m) },
        Route::Unavailable => libc::EAGAIN,
    }
}

entry_with_caller! {
    /// `pthread_cond_timedwait`: `abstime` on the condattr clock; `ETIMEDOUT`, `EINVAL`.
    ///
    /// # Safety
    /// As for [`pthread_cond_wait`]; `abstime` is null or readable.
    pub fn pthread_cond_timedwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, abstime: *const timespec) -> c_int = cond_timedwait_from, "rcx";
}

/// The body of [`pthread_cond_timedwait`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_cond_timedwait`].
unsafe extern "C" fn cond_timedwait_from(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    if c.is_null() || m.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        // SAFETY: the caller's promise.
        Route::Ours(cv) => unsafe { wait_on(cv, m, Some(cv.clock()), abstime, caller) },
        // SAFETY: `m` is initialised (the caller's promise).
        Route::Glibc if unsafe { !glibc_can_wait_with(m) } => libc::EINVAL,
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_timedwait(c, m, abstime) },
        Route::Unavailable => libc::EAGAIN,
    }
}

entry_with_caller! {
    /// `pthread_cond_clockwait`: `abstime` on `clockid` (`CLOCK_MONOTONIC` or `CLOCK_REALTIME`).
    ///
    /// # Safety
    /// As for [`pthread_cond_timedwait`].
    pub fn pthread_cond_clockwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, clockid: clockid_t, abstime: *const timespec) -> c_int = cond_clockwait_from, "r8";
}

/// The body of [`pthread_cond_clockwait`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_cond_clockwait`].
unsafe extern "C" fn cond_clockwait_from(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clockid: clockid_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    if c.is_null() || m.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        Route::Ours(cv) => match clock_of(clockid) {
            // SAFETY: the caller's promise.
            Some(clock) => unsafe { wait_on(cv, m, Some(clock), abstime, caller) },
            None => libc::EINVAL,
        },
        // SAFETY: `m` is initialised (the caller's promise).
        Route::Glibc if unsafe { !glibc_can_wait_with(m) } => libc::EINVAL,
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_clockwait(c, m, clockid, abstime) },
        Route::Unavailable => libc::EAGAIN,
    }
}

/// `pthread_cond_signal`.
///
/// # Safety
/// `c` points at an initialised `pthread_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        Route::Ours(cv) => {
            cv.wake(1);
            0
        }
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_signal(c) },
        Route::Unavailable => libc::EAGAIN,
    }
}

/// `pthread_cond_broadcast`.
///
/// # Safety
/// `c` points at an initialised `pthread_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    if c.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    match unsafe { route(c) } {
        Route::Ours(cv) => {
            cv.wake(u32::MAX);
            0
        }
        // SAFETY: pass-through.
        Route::Glibc => unsafe { real::cond_broadcast(c) },
        Route::Unavailable => libc::EAGAIN,
    }
}
