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
//! The woken waiter re-takes a mutex the library serves as scalelock's `Condvar` does: spinning,
//! then sleeping, without the yields of a plain `pthread_mutex_lock` (see
//! `scalelock::RawMutex::lock_woken`).
//!
//! # Cancellation
//!
//! `pthread_cond_wait`, `_timedwait` and `_clockwait` are cancellation points, as in glibc, for
//! deferred and asynchronous cancellation. glibc acts on a cancellation by running the thread's
//! cleanup handlers and unwinding its stack with a forced unwind (`_Unwind_ForcedUnwind`), from
//! the `SIGCANCEL` handler when the thread is asleep with asynchronous cancellation enabled, or
//! from the call that enables it when a cancellation is already pending. A forced unwind must
//! not cross Rust frames this library cannot vouch for, so the wait is split:
//!
//! - The exported symbols jump (no frame) into `csrc/cond_wait.c`, which sets deferred
//!   cancellation, calls [`scalelock_cond_wait_begin`] (count the waiter, read `seq`, release the
//!   mutex), and returns from every Rust call before it enables cancellation.
//! - The sleep is glibc's own pattern (`__pthread_enable_asynccancel` around the futex system
//!   call): the C code pushes a cleanup handler with the public `pthread_cleanup_push`, switches
//!   to asynchronous cancellation (which acts at once on a pending one), makes the futex call,
//!   and switches back. Only C and glibc frames lie between the signal and the cleanup handler.
//! - The cleanup handler, [`scalelock_cond_wait_cancelled`], is an ordinary call: it passes on a
//!   wake-up the cancelled thread may have taken (`seq` moved: wake one more sleeper; a spurious
//!   wake-up at worst), leaves the condvar and re-takes the mutex, so the program's own cleanup
//!   handlers run with the mutex held, as POSIX requires. The unwind then continues from the C
//!   frame into the program's frames.
//! - Without cancellation (none pending, or cancellation disabled) the C code calls
//!   [`scalelock_cond_wait_end`]: leave, re-take the mutex, return.
//!
//! The futex call in the C region is the only sleep of this library outside the wait layer:
//! it must happen with asynchronous cancellation enabled, in a frame that glibc's unwinder may
//! cross. It makes the same `FUTEX_WAIT_BITSET` call as `scalelock::wait::futex::wait`.

use crate::config::{mode, Mode};
use crate::mutex::{clock_of, deadline_of, reacquire_after_wait, release_for_wait, Released};
use crate::real;
use crate::route::{decide, route, serve, Route, Served};
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

/// A condvar as [`serve`] sees it: the in-place view; glibc serves the process-shared ones.
impl Served for pthread_cond_t {
    type Ours<'a> = &'a Cond;

    #[inline(always)]
    unsafe fn view<'a>(c: *mut pthread_cond_t) -> (&'a Cond, bool) {
        // SAFETY: the caller's promise; every field of `Cond` is an atomic, so any bytes are
        // valid.
        let cv = unsafe { &*(c as *const Cond) };
        (cv, cv.flags.load(Ordering::Relaxed) & SHARED != 0)
    }
}

impl Cond {
    fn clock(&self) -> Clock {
        if self.flags.load(Ordering::Relaxed) & MONOTONIC != 0 {
            Clock::Monotonic
        } else {
            Clock::Realtime
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
    match decide((), shared) {
        // SAFETY: pass-through with the caller's arguments.
        Route::Glibc => return unsafe { real::cond_init(c, attr) },
        Route::Unavailable => return libc::EAGAIN,
        Route::Ours(()) => {}
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
    // SAFETY: the caller's promise; glibc's gets the caller's condvar.
    unsafe {
        serve(
            c,
            |cv| {
                cv.destroy();
                0
            },
            || real::cond_destroy(c),
        )
    }
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

/// One wait in progress, shared with `csrc/cond_wait.c` (`struct scalelock_wait`, same layout):
/// the futex sleep the C region makes, and what the end of the wait (or its cancellation) needs.
#[repr(C)]
pub struct Wait {
    word: *const AtomicU32,
    expected: u32,
    op: c_int,
    deadline: timespec,
    timed: c_int,
    real: usize,
    cond: *const Cond,
    mutex: *mut pthread_mutex_t,
    released: Released,
    caller: usize,
}

// The C side asserts the same size and offsets (`_Static_assert` in cond_wait.c).
const _: () = {
    assert!(size_of::<Wait>() == 80);
    assert!(offset_of!(Wait, deadline) == 16);
    assert!(offset_of!(Wait, released) == 64);
    assert!(offset_of!(Wait, caller) == 72);
};

/// The futex operation and absolute timeout of the sleep (`FUTEX_WAIT_BITSET`, as the wait
/// layer's `futex::wait` makes it): the C region makes the system call itself, so that
/// cancellation can interrupt it.
fn sleep_op(deadline: Option<&Deadline>) -> (c_int, timespec) {
    let op = libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG;
    match deadline {
        None => (
            op,
            timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        ),
        Some(d) => match d.clock() {
            Clock::Monotonic => (op, *d.as_timespec()),
            Clock::Realtime => (op | libc::FUTEX_CLOCK_REALTIME, *d.as_timespec()),
        },
    }
}

/// `kind` of [`scalelock_cond_wait_begin`]: `pthread_cond_wait`.
const KIND_WAIT: c_int = 0;
/// `pthread_cond_timedwait` (the condattr's clock).
const KIND_TIMEDWAIT: c_int = 1;
/// `pthread_cond_clockwait` (the clock passed).
const KIND_CLOCKWAIT: c_int = 2;
/// [`scalelock_cond_wait_begin`]: the caller is counted and the mutex released; sleep now.
const BEGIN_SLEEP: c_int = -1;
/// [`scalelock_cond_wait_begin`]: glibc serves this condvar; call `Wait::real`.
const BEGIN_GLIBC: c_int = -2;

/// The start of a condvar wait, called by `cond_wait.c` before cancellation is enabled: checks
/// the arguments, routes, and for scalelock's condvar counts the caller as a waiter, reads the
/// sequence and releases the mutex. Returns a result for the program (`>= 0`), `BEGIN_SLEEP`
/// or `BEGIN_GLIBC`; `w` is filled for the latter two.
///
/// # Safety
/// The arguments of the `pthread_cond_*wait` being served; `w` is writable.
#[no_mangle]
pub unsafe extern "C" fn scalelock_cond_wait_begin(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    kind: c_int,
    clockid: clockid_t,
    abstime: *const timespec,
    caller: usize,
    w: *mut Wait,
) -> c_int {
    if c.is_null() || m.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the caller's promise.
    let cv = match unsafe { route(c) } {
        Route::Ours(cv) => cv,
        // SAFETY: `m` is initialised (the caller's promise).
        Route::Glibc if unsafe { !glibc_can_wait_with(m) } => return libc::EINVAL,
        Route::Glibc => {
            let real = match kind {
                KIND_WAIT => real::address(real::Idx::cond_wait),
                KIND_TIMEDWAIT => real::address(real::Idx::cond_timedwait),
                KIND_CLOCKWAIT => real::address(real::Idx::cond_clockwait),
                _ => return libc::EINVAL,
            };
            if real == 0 {
                return libc::ENOSYS;
            }
            // SAFETY: `w` is writable (the caller's promise); only `real` is read back.
            unsafe { (*w).real = real };
            return BEGIN_GLIBC;
        }
        Route::Unavailable => return libc::EAGAIN,
    };
    let clock = match kind {
        KIND_WAIT => None,
        KIND_TIMEDWAIT => Some(cv.clock()),
        KIND_CLOCKWAIT => match clock_of(clockid) {
            Some(clock) => Some(clock),
            None => return libc::EINVAL,
        },
        _ => return libc::EINVAL,
    };
    let deadline = match clock {
        None => None,
        Some(clock) => {
            if abstime.is_null() {
                return libc::EINVAL;
            }
            // SAFETY: non-null timespec from the caller, read once.
            match deadline_of(clock, unsafe { abstime.read() }) {
                Some(d) => Some(d),
                None => return libc::EINVAL,
            }
        }
    };
    cv.waiters.fetch_add(1, Ordering::Relaxed);
    // Read while the mutex is still held: see the module comment.
    let expected = cv.seq.load(Ordering::Relaxed);
    // SAFETY: the caller's promise.
    let released = match unsafe { release_for_wait(m) } {
        Ok(r) => r,
        Err(e) => {
            cv.leave();
            return e;
        }
    };
    let (op, ts) = sleep_op(deadline.as_ref());
    // SAFETY: `w` is writable (the caller's promise).
    unsafe {
        w.write(Wait {
            word: &cv.seq,
            expected,
            op,
            deadline: ts,
            timed: c_int::from(deadline.is_some()),
            real: 0,
            cond: cv,
            mutex: m,
            released,
            caller,
        })
    };
    BEGIN_SLEEP
}

/// The end of a wait that [`scalelock_cond_wait_begin`] started: leaves the condvar and
/// re-takes the mutex. `err` is the sleep's errno (0 after a wake-up).
///
/// # Safety
/// `w` was filled by a [`scalelock_cond_wait_begin`] that returned `BEGIN_SLEEP`, and is
/// ended once (by this or by [`scalelock_cond_wait_cancelled`]).
#[no_mangle]
pub unsafe extern "C" fn scalelock_cond_wait_end(w: *mut Wait, err: c_int) -> c_int {
    // SAFETY: the caller's promise: `w` is initialised and its condvar is live while this
    // thread is counted among its waiters.
    let w = unsafe { w.read() };
    // SAFETY: as above.
    unsafe { (*w.cond).leave() };
    // From here on the condvar may be destroyed: it is not touched again.
    // SAFETY: `w.mutex` was released by `scalelock_cond_wait_begin`.
    let r = unsafe { reacquire_after_wait(w.mutex, w.released, w.caller) };
    if r != 0 {
        r
    } else if err == libc::ETIMEDOUT {
        libc::ETIMEDOUT
    } else {
        0
    }
}

/// The cleanup handler of a cancelled wait (pushed by `cond_wait.c`): passes on a wake-up this
/// thread may have taken, leaves the condvar and re-takes the mutex, so the program's cleanup
/// handlers run with the mutex held, as POSIX requires.
///
/// # Safety
/// As for [`scalelock_cond_wait_end`]; `w` points at a [`Wait`].
#[no_mangle]
pub unsafe extern "C" fn scalelock_cond_wait_cancelled(w: *mut core::ffi::c_void) {
    let w = w.cast::<Wait>();
    // SAFETY: the caller's promise.
    let cv = unsafe { &*(*w).cond };
    // SAFETY: as above.
    if cv.seq.load(Ordering::Relaxed) != unsafe { (*w).expected } {
        // A signal may have picked this thread: another sleeper gets the wake-up (at worst a
        // spurious one, which every condvar user tolerates).
        futex::wake(&cv.seq, 1);
    }
    // SAFETY: the caller's promise; the program learns nothing of the result (it is being
    // cancelled), and an error here means its mutex was not ours to take.
    unsafe { scalelock_cond_wait_end(w, 0) };
}

extern "C-unwind" {
    fn scalelock_c_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int;
    fn scalelock_c_cond_timedwait(
        c: *mut pthread_cond_t,
        m: *mut pthread_mutex_t,
        abstime: *const timespec,
    ) -> c_int;
    fn scalelock_c_cond_clockwait(
        c: *mut pthread_cond_t,
        m: *mut pthread_mutex_t,
        clockid: clockid_t,
        abstime: *const timespec,
    ) -> c_int;
}

entry_in_c! {
    /// `pthread_cond_wait`: a cancellation point (see the module's "Cancellation").
    ///
    /// # Safety
    /// `c` and `m` point at initialised objects; the caller holds `m`.
    pub fn pthread_cond_wait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int = scalelock_c_cond_wait;
}

entry_in_c! {
    /// `pthread_cond_timedwait`: `abstime` on the condattr clock; `ETIMEDOUT`, `EINVAL`; a
    /// cancellation point.
    ///
    /// # Safety
    /// As for [`pthread_cond_wait`]; `abstime` is null or readable.
    pub fn pthread_cond_timedwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, abstime: *const timespec) -> c_int = scalelock_c_cond_timedwait;
}

entry_in_c! {
    /// `pthread_cond_clockwait`: `abstime` on `clockid` (`CLOCK_MONOTONIC` or
    /// `CLOCK_REALTIME`); a cancellation point.
    ///
    /// # Safety
    /// As for [`pthread_cond_timedwait`].
    pub fn pthread_cond_clockwait(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, clockid: clockid_t, abstime: *const timespec) -> c_int = scalelock_c_cond_clockwait;
}

/// `pthread_cond_signal`.
///
/// # Safety
/// `c` points at an initialised `pthread_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's condvar.
    unsafe {
        serve(
            c,
            |cv| {
                cv.wake(1);
                0
            },
            || real::cond_signal(c),
        )
    }
}

/// `pthread_cond_broadcast`.
///
/// # Safety
/// `c` points at an initialised `pthread_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's condvar.
    unsafe {
        serve(
            c,
            |cv| {
                cv.wake(u32::MAX);
                0
            },
            || real::cond_broadcast(c),
        )
    }
}
