//! `pthread_mutex_*` on scalelock's [`RawMutex`].
//!
//! # The 40 bytes of `pthread_mutex_t` (x86_64 glibc)
//!
//! ```text
//!  offset  glibc's field         here
//!   0..8   __lock, __count       scalelock::RawMutex (state word, learned spin estimate);
//!                                all-zero is unlocked
//!   8..16  __owner, __nusers     owner: pthread_self() of the holder (recursive, errorcheck;
//!                                0 when free; unused by normal/adaptive mutexes)
//!  16..20  __kind                kind, exactly as glibc and its static initialisers define it:
//!                                  bits 0..1  type: 0 normal, 1 recursive, 2 errorcheck,
//!                                             3 adaptive
//!                                  bits 4..7  robust 16, prio-inherit 32, prio-protect 64,
//!                                             process-shared 128: glibc's flags. Written only
//!                                             by glibc's own pthread_mutex_init; any of them
//!                                             set means "glibc's mutex": pass through.
//!  20..24  __spins, __elision    count: recursion depth (recursive mutexes)
//!  24..40  __list                hold: the hold being timed while lockstat records
//!                                (start, call site; see `stats::Hold`), else zero
//! ```
//!
//! Normal and adaptive mutexes are scalelock's mutex as is (scalelock's mutex adapts its spinning
//! by itself, which is what `PTHREAD_MUTEX_ADAPTIVE_NP` asks for). Recursive and errorcheck
//! mutexes add the owner check in front of it. Unlocking a normal mutex the caller does not hold
//! is undefined in POSIX; here it is harmless (the state word only loses its `LOCKED` bit).

use crate::real;
use crate::route::{decide, route, serve, Route, Served};
use crate::stats;
use core::ffi::c_int;
use core::mem::{align_of, offset_of, size_of};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use libc::{clockid_t, pthread_mutex_t, pthread_mutexattr_t, timespec};
use scalelock::wait::{Clock, Deadline};
use scalelock::RawMutex;

/// The in-place view of a `pthread_mutex_t` (see the module's drawing).
#[repr(C)]
pub(crate) struct Mutex {
    raw: RawMutex,
    owner: AtomicU64,
    kind: AtomicI32,
    count: AtomicU32,
    hold: stats::Hold,
}

const _: () = {
    assert!(size_of::<Mutex>() == size_of::<pthread_mutex_t>());
    assert!(size_of::<pthread_mutex_t>() == 40);
    assert!(align_of::<Mutex>() <= align_of::<pthread_mutex_t>());
    assert!(size_of::<RawMutex>() == 8);
    assert!(offset_of!(Mutex, owner) == 8);
    assert!(offset_of!(Mutex, kind) == 16);
    assert!(offset_of!(Mutex, count) == 20);
    assert!(offset_of!(Mutex, hold) == 24);
};

const TYPE_MASK: i32 = 3;
const RECURSIVE: i32 = libc::PTHREAD_MUTEX_RECURSIVE;
const ERRORCHECK: i32 = libc::PTHREAD_MUTEX_ERRORCHECK;
/// glibc's `PTHREAD_MUTEX_ROBUST_NORMAL_NP | PRIO_INHERIT_NP | PRIO_PROTECT_NP | PSHARED_BIT`.
const GLIBC_ONLY: i32 = 16 | 32 | 64 | 128;

const _: () = assert!(RECURSIVE == 1 && ERRORCHECK == 2 && libc::PTHREAD_MUTEX_NORMAL == 0);

extern "C" {
    fn pthread_mutexattr_gettype(a: *const pthread_mutexattr_t, t: *mut c_int) -> c_int;
    fn pthread_mutexattr_getpshared(a: *const pthread_mutexattr_t, p: *mut c_int) -> c_int;
    fn pthread_mutexattr_getrobust(a: *const pthread_mutexattr_t, r: *mut c_int) -> c_int;
    fn pthread_mutexattr_getprotocol(a: *const pthread_mutexattr_t, p: *mut c_int) -> c_int;
}

/// The calling thread's identity: `pthread_self()`, which a forked child's thread keeps.
#[inline]
pub(crate) fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// A mutex as [`serve`] sees it: the in-place view with the mutex's type; glibc serves the
/// robust, priority-inherit/protect and process-shared kinds.
impl Served for pthread_mutex_t {
    type Ours<'a> = (&'a Mutex, i32);

    #[inline(always)]
    unsafe fn view<'a>(m: *mut pthread_mutex_t) -> ((&'a Mutex, i32), bool) {
        // SAFETY: the caller's promise; every field of `Mutex` is an atomic, so any bytes are
        // valid.
        let mx = unsafe { &*(m as *const Mutex) };
        let kind = mx.kind.load(Ordering::Relaxed);
        ((mx, kind & TYPE_MASK), kind & GLIBC_ONLY != 0)
    }
}

/// Whether glibc serves `m` (robust, priority-inherit/protect or process-shared).
///
/// # Safety
/// As for [`Served::view`].
pub(crate) unsafe fn served_by_glibc(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's promise.
    let (_, glibc_object) = unsafe { pthread_mutex_t::view(m) };
    glibc_object
}

impl Mutex {
    fn addr(&self) -> usize {
        self as *const Mutex as usize
    }

    /// Takes the raw lock, attributing a wait to `caller` and counting the acquisition. The
    /// uncontended case is one compare-exchange and one look at lockstat's switch; the rest is
    /// out of line, so that the caller's frame stays small.
    #[inline]
    fn take(&self, caller: usize) {
        if !self.raw.try_lock_idle() {
            self.take_contended(caller);
        }
        self.count_acquired(caller);
    }

    /// The rest of [`take`](Self::take): a lock that is free but not idle (a woken thread left
    /// its mark) is taken without counting a wait, as a plain `try_lock` would have taken it.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, caller: usize) {
        if !self.raw.try_lock() {
            stats::waiting_at(caller, || self.raw.lock());
        }
    }

    /// [`take`](Self::take) for a thread just woken from a condvar wait (see
    /// `RawMutex::lock_woken`).
    #[inline(never)]
    fn take_woken(&self, caller: usize) {
        if !self.raw.try_lock() {
            stats::waiting_at(caller, || self.raw.lock_woken());
        }
        self.count_acquired(caller);
    }

    /// Counts an acquisition at `caller` and starts timing the hold, while lockstat records.
    #[inline]
    fn count_acquired(&self, caller: usize) {
        stats::when_recording(|| {
            stats::acquired(self.addr(), caller);
            self.hold.begin(caller);
        });
    }

    #[inline]
    fn lock(&self, ty: i32, caller: usize) -> c_int {
        if ty == RECURSIVE || ty == ERRORCHECK {
            return self.lock_owned(ty, caller);
        }
        self.take(caller);
        0
    }

    /// [`lock`](Self::lock) for the types that record their owner (out of line, so that a
    /// default mutex's lock needs no stack frame).
    #[inline(never)]
    fn lock_owned(&self, ty: i32, caller: usize) -> c_int {
        let me = me();
        if self.owner.load(Ordering::Relaxed) == me {
            return if ty == RECURSIVE {
                self.relock_recursive()
            } else {
                libc::EDEADLK
            };
        }
        self.take(caller);
        self.owner.store(me, Ordering::Relaxed);
        if ty == RECURSIVE {
            self.count.store(1, Ordering::Relaxed);
        }
        0
    }

    /// One more level of a recursive mutex this thread holds. (Only the owner reads its own id
    /// back from `owner`, so relaxed accesses suffice: a thread never sees a stale copy of its
    /// own store, and other threads' values never equal its id.)
    fn relock_recursive(&self) -> c_int {
        let c = self.count.load(Ordering::Relaxed);
        if c == u32::MAX {
            return libc::EAGAIN;
        }
        self.count.store(c.wrapping_add(1), Ordering::Relaxed);
        0
    }

    #[inline]
    fn try_lock(&self, ty: i32, caller: usize) -> c_int {
        if ty == RECURSIVE && self.owner.load(Ordering::Relaxed) == me() {
            return self.relock_recursive();
        }
        if !self.raw.try_lock() {
            return libc::EBUSY;
        }
        self.count_acquired(caller);
        self.acquired(ty);
        0
    }

    /// Records the new owner after the raw lock was taken.
    #[inline]
    fn acquired(&self, ty: i32) {
        if ty == RECURSIVE || ty == ERRORCHECK {
            self.owner.store(me(), Ordering::Relaxed);
            self.count.store(1, Ordering::Relaxed);
        }
    }

    fn lock_until(&self, ty: i32, clock: Clock, ts: *const timespec, caller: usize) -> c_int {
        let me = me();
        if self.owner.load(Ordering::Relaxed) == me {
            match ty {
                RECURSIVE => return self.relock_recursive(),
                ERRORCHECK => return libc::EDEADLK,
                _ => {}
            }
        }
        // As glibc: a free mutex is taken without looking at the deadline.
        if self.raw.try_lock() {
            self.count_acquired(caller);
            self.acquired(ty);
            return 0;
        }
        if ts.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: non-null `timespec` from the caller, read once.
        let Some(deadline) = deadline_of(clock, unsafe { ts.read() }) else {
            return libc::EINVAL;
        };
        // (Under SCALELOCK_LOCK=spin the policy is SpinPolicy::Always: the wait layer spins
        // until the deadline instead of sleeping.)
        let acquired = stats::waiting_at(caller, || self.raw.try_lock_until(&deadline));
        if !acquired {
            return libc::ETIMEDOUT;
        }
        self.count_acquired(caller);
        self.acquired(ty);
        0
    }

    #[inline]
    fn unlock(&self, ty: i32) -> c_int {
        if ty == RECURSIVE || ty == ERRORCHECK {
            return self.unlock_owned(ty);
        }
        self.hold.end(self.addr());
        // SAFETY: POSIX makes unlocking a normal mutex one does not hold undefined; for
        // scalelock's mutex it only clears the state word (see the module comment).
        unsafe { self.raw.unlock() };
        0
    }

    /// [`unlock`](Self::unlock) for the types that record their owner (out of line, as
    /// [`lock_owned`](Self::lock_owned)).
    #[inline(never)]
    fn unlock_owned(&self, ty: i32) -> c_int {
        if self.owner.load(Ordering::Relaxed) != me() {
            return libc::EPERM;
        }
        let c = self.count.load(Ordering::Relaxed);
        if ty == RECURSIVE && c > 1 {
            self.count.store(c.wrapping_sub(1), Ordering::Relaxed);
            return 0;
        }
        self.count.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::Relaxed);
        self.hold.end(self.addr());
        // SAFETY: this thread owns the mutex (checked above).
        unsafe { self.raw.unlock() };
        0
    }
}

/// What a condvar wait must restore when it re-takes the mutex.
#[repr(C)]
pub(crate) struct Released {
    depth: u32,
}

/// Releases `m` for a condvar wait: fully, whatever the recursion depth.
///
/// # Safety
/// `m` is non-null, aligned and points at a live `pthread_mutex_t`.
pub(crate) unsafe fn release_for_wait(m: *mut pthread_mutex_t) -> Result<Released, c_int> {
    // SAFETY: the caller's promise.
    match unsafe { route(m) } {
        Route::Ours((mx, ty)) => {
            let mut depth = 0;
            if ty == RECURSIVE || ty == ERRORCHECK {
                if mx.owner.load(Ordering::Relaxed) != me() {
                    return Err(libc::EPERM);
                }
                depth = mx.count.load(Ordering::Relaxed);
                mx.count.store(0, Ordering::Relaxed);
                mx.owner.store(0, Ordering::Relaxed);
            }
            mx.hold.end(mx.addr());
            // SAFETY: the caller of pthread_cond_wait holds the mutex (checked for the types
            // that can check it).
            unsafe { mx.raw.unlock() };
            Ok(Released { depth })
        }
        // SAFETY: pass-through of the caller's mutex.
        Route::Glibc => match unsafe { real::mutex_unlock(m) } {
            0 => Ok(Released { depth: 0 }),
            e => Err(e),
        },
        Route::Unavailable => Err(libc::EAGAIN),
    }
}

/// Re-takes `m` after a condvar wait, restoring what [`release_for_wait`] released.
///
/// # Safety
/// As for [`release_for_wait`], which returned `released` for this `m`.
pub(crate) unsafe fn reacquire_after_wait(
    m: *mut pthread_mutex_t,
    released: Released,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise.
    match unsafe { route(m) } {
        Route::Ours((mx, ty)) => {
            mx.take_woken(caller);
            if ty == RECURSIVE || ty == ERRORCHECK {
                mx.owner.store(me(), Ordering::Relaxed);
                mx.count.store(released.depth, Ordering::Relaxed);
            }
            0
        }
        // SAFETY: pass-through of the caller's mutex.
        Route::Glibc => unsafe { real::mutex_lock(m) },
        Route::Unavailable => libc::EAGAIN,
    }
}

// ---------------------------------------------------------------------------------------------
// The exported functions
// ---------------------------------------------------------------------------------------------

/// `pthread_mutex_init`.
///
/// # Safety
/// As in POSIX: `m` points at writable memory for a `pthread_mutex_t`; `attr` is null or
/// initialised.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
) -> c_int {
    if m.is_null() {
        return libc::EINVAL;
    }
    let (mut ty, mut pshared, mut robust, mut protocol) = (0, 0, 0, 0);
    if !attr.is_null() {
        // SAFETY: `attr` is an initialised attribute object (the caller's promise); glibc's
        // getters only read it and write the out-parameters.
        unsafe {
            pthread_mutexattr_gettype(attr, &mut ty);
            pthread_mutexattr_getpshared(attr, &mut pshared);
            pthread_mutexattr_getrobust(attr, &mut robust);
            pthread_mutexattr_getprotocol(attr, &mut protocol);
        }
    }
    let glibc_kind = pshared != libc::PTHREAD_PROCESS_PRIVATE
        || robust != libc::PTHREAD_MUTEX_STALLED
        || protocol != libc::PTHREAD_PRIO_NONE;
    match decide((), glibc_kind) {
        // SAFETY: pass-through with the caller's arguments.
        Route::Glibc => return unsafe { real::mutex_init(m, attr) },
        Route::Unavailable => return libc::EAGAIN,
        Route::Ours(()) => {}
    }
    // SAFETY: `m` is valid for writes of a whole pthread_mutex_t (the caller's promise); nobody
    // else may use a mutex while it is being initialised.
    unsafe {
        core::ptr::write_bytes(m.cast::<u8>(), 0, size_of::<pthread_mutex_t>());
        (*(m as *const Mutex))
            .kind
            .store(ty & TYPE_MASK, Ordering::Relaxed);
    }
    // A lock whose memory was freed without `pthread_mutex_destroy` is gone too.
    stats::destroyed(m as usize);
    0
}

/// `pthread_mutex_destroy`: `EBUSY` if the mutex is held; else lockstat folds the lock's rows
/// into those of the destroyed locks (see `stats::destroyed`).
///
/// # Safety
/// `m` points at an initialised `pthread_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's mutex.
    unsafe {
        serve(
            m,
            |(mx, _)| {
                if mx.raw.is_locked() {
                    libc::EBUSY
                } else {
                    stats::destroyed(m as usize);
                    0
                }
            },
            || real::mutex_destroy(m),
        )
    }
}

entry_with_caller! {
    /// `pthread_mutex_lock`.
    ///
    /// # Safety
    /// `m` points at an initialised `pthread_mutex_t`.
    pub fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int = mutex_lock_from, "rsi";
}

/// The body of [`pthread_mutex_lock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_mutex_lock`].
unsafe extern "C" fn mutex_lock_from(m: *mut pthread_mutex_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's mutex.
    unsafe { serve(m, |(mx, ty)| mx.lock(ty, caller), || real::mutex_lock(m)) }
}

entry_with_caller! {
    /// `pthread_mutex_trylock`: `EBUSY` if held by another thread (or, errorcheck, by this one).
    ///
    /// # Safety
    /// `m` points at an initialised `pthread_mutex_t`.
    pub fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int = mutex_trylock_from, "rsi";
}

/// The body of [`pthread_mutex_trylock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_mutex_trylock`].
unsafe extern "C" fn mutex_trylock_from(m: *mut pthread_mutex_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's mutex.
    unsafe {
        serve(
            m,
            |(mx, ty)| mx.try_lock(ty, caller),
            || real::mutex_trylock(m),
        )
    }
}

entry_with_caller! {
    /// `pthread_mutex_timedlock`: `ETIMEDOUT` at `abstime` (`CLOCK_REALTIME`), `EINVAL` for a bad
    /// `timespec` when the mutex is held.
    ///
    /// # Safety
    /// `m` points at an initialised `pthread_mutex_t`; `abstime` is null or readable.
    pub fn pthread_mutex_timedlock(m: *mut pthread_mutex_t, abstime: *const timespec) -> c_int = mutex_timedlock_from, "rdx";
}

/// The body of [`pthread_mutex_timedlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_mutex_timedlock`].
unsafe extern "C" fn mutex_timedlock_from(
    m: *mut pthread_mutex_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            m,
            |(mx, ty)| mx.lock_until(ty, Clock::Realtime, abstime, caller),
            || real::mutex_timedlock(m, abstime),
        )
    }
}

/// Maps a `clockid_t` a timed lock may use; `None` (`EINVAL`) for any other clock.
/// The deadline of a timed call, as glibc reads it: `None` (`EINVAL`) for nanoseconds outside
/// `0..1_000_000_000`; a negative second is a deadline long past (`ETIMEDOUT`), not an error.
pub(crate) fn deadline_of(clock: Clock, ts: timespec) -> Option<Deadline> {
    if ts.tv_sec < 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
        return Deadline::from_timespec(
            clock,
            timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        );
    }
    Deadline::from_timespec(clock, ts)
}

pub(crate) fn clock_of(clockid: clockid_t) -> Option<Clock> {
    match clockid {
        libc::CLOCK_MONOTONIC => Some(Clock::Monotonic),
        libc::CLOCK_REALTIME => Some(Clock::Realtime),
        _ => None,
    }
}

entry_with_caller! {
    /// `pthread_mutex_clocklock`: as `pthread_mutex_timedlock` on `CLOCK_MONOTONIC` or
    /// `CLOCK_REALTIME`; `EINVAL` for another clock.
    ///
    /// # Safety
    /// As for `pthread_mutex_timedlock`.
    pub fn pthread_mutex_clocklock(m: *mut pthread_mutex_t, clockid: clockid_t, abstime: *const timespec) -> c_int = mutex_clocklock_from, "rcx";
}

/// The body of [`pthread_mutex_clocklock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_mutex_clocklock`].
unsafe extern "C" fn mutex_clocklock_from(
    m: *mut pthread_mutex_t,
    clockid: clockid_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            m,
            |(mx, ty)| match clock_of(clockid) {
                Some(clock) => mx.lock_until(ty, clock, abstime, caller),
                None => libc::EINVAL,
            },
            || real::mutex_clocklock(m, clockid, abstime),
        )
    }
}

/// `pthread_mutex_unlock`: `EPERM` if a recursive or errorcheck mutex is not held by the caller.
///
/// # Safety
/// `m` points at an initialised `pthread_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's mutex.
    unsafe { serve(m, |(mx, ty)| mx.unlock(ty), || real::mutex_unlock(m)) }
}

// The names older binaries (and some libraries' internal PLT calls) still use.

/// `__pthread_mutex_init`, the old alias of [`pthread_mutex_init`].
///
/// # Safety
/// As for [`pthread_mutex_init`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_mutex_init(m, attr) }
}

/// `__pthread_mutex_destroy`.
///
/// # Safety
/// As for [`pthread_mutex_destroy`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_mutex_destroy(m) }
}

entry_with_caller! {
    /// `__pthread_mutex_lock`.
    ///
    /// # Safety
    /// As for [`pthread_mutex_lock`].
    pub fn __pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int = mutex_lock_from, "rsi";
}

entry_with_caller! {
    /// `__pthread_mutex_trylock`.
    ///
    /// # Safety
    /// As for [`pthread_mutex_trylock`].
    pub fn __pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int = mutex_trylock_from, "rsi";
}

/// `__pthread_mutex_unlock`.
///
/// # Safety
/// As for [`pthread_mutex_unlock`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_mutex_unlock(m) }
}
