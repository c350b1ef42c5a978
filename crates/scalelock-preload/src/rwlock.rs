//! `pthread_rwlock_*` on scalelock's [`RawRwLock`].
//!
//! # The 56 bytes of `pthread_rwlock_t` (x86_64 glibc)
//!
//! ```text
//!  offset  glibc's field            here
//!   0..16  __readers, __writers,    scalelock::RawRwLock (state word, writer sequence, learned
//!          __wrphase_futex,         spin estimate, sleeping writers); all-zero is unlocked
//!          __writers_futex
//!  16..24  __pad3, __pad4           writer: pthread_self() of the write holder, 0 otherwise
//!  24..28  __cur_writer             spinning_writers: writers waiting under SCALELOCK_LOCK=spin
//!  28..32  __shared                 non-zero: process-shared. Written only by glibc's own
//!                                   pthread_rwlock_init; set means "glibc's rwlock": pass through
//!  32..48  __rwelision, __pad1/2    hold: the hold being timed while lockstat records (the
//!                                   writer's, or one reader's; see `stats::Hold`), else zero
//!  48..52  __flags                  kind, as glibc and its static initialisers define it:
//!                                   0 prefer readers (default), 1 prefer writers (glibc treats
//!                                   it as 0), 2 prefer writers, non-recursive
//!  52..56  padding                  unused
//! ```
//!
//! # Readers and writers
//!
//! POSIX lets a thread take a read lock it already holds, and glibc's default kind (prefer
//! readers) makes that safe even while a writer waits. So, for kinds 0 and 1, `rdlock` is
//! scalelock's *recursive* read (it enters whenever no writer holds the lock); writers still get
//! their turn because scalelock's rwlock is phase-fair once readers have to wait. Kind 2 (prefer
//! writers, non-recursive) uses the plain read, which stays out while a writer waits for the
//! readers to leave.
//!
//! `pthread_rwlock_unlock` does not say which lock it releases: if the lock is held for writing,
//! the caller (which must hold it) is the writer; otherwise it is a reader.

use crate::config::{mode, Mode};
use crate::mutex::{clock_of, deadline_of, me};
use crate::real;
use crate::route::{decide, serve, Route, Served};
use crate::stats;
use core::ffi::c_int;
use core::mem::{align_of, offset_of, size_of};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use libc::{clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};
use scalelock::wait::{spin_until, Awake, Clock, Deadline};
use scalelock::RawRwLock;

/// The in-place view of a `pthread_rwlock_t` (see the module's drawing).
#[repr(C)]
pub(crate) struct RwLock {
    raw: RawRwLock,
    writer: AtomicU64,
    spinning_writers: AtomicU32,
    shared: AtomicI32,
    hold: stats::Hold,
    kind: AtomicI32,
    _unused_52: AtomicU32,
}

const _: () = {
    assert!(size_of::<RwLock>() == size_of::<pthread_rwlock_t>());
    assert!(size_of::<pthread_rwlock_t>() == 56);
    assert!(align_of::<RwLock>() <= align_of::<pthread_rwlock_t>());
    assert!(size_of::<RawRwLock>() == 16);
    assert!(offset_of!(RwLock, writer) == 16);
    assert!(offset_of!(RwLock, shared) == 28);
    assert!(offset_of!(RwLock, hold) == 32);
    assert!(offset_of!(RwLock, kind) == 48);
};

/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
const PREFER_WRITER_NONRECURSIVE: i32 = 2;

extern "C" {
    fn pthread_rwlockattr_getpshared(a: *const pthread_rwlockattr_t, p: *mut c_int) -> c_int;
    fn pthread_rwlockattr_getkind_np(a: *const pthread_rwlockattr_t, k: *mut c_int) -> c_int;
}

/// An rwlock as [`serve`] sees it: the in-place view; glibc serves the process-shared ones.
impl Served for pthread_rwlock_t {
    type Ours<'a> = &'a RwLock;

    #[inline(always)]
    unsafe fn view<'a>(l: *mut pthread_rwlock_t) -> (&'a RwLock, bool) {
        // SAFETY: the caller's promise; every field of `RwLock` is an atomic (or scalelock's raw
        // rwlock, made of atomics), so any bytes are valid.
        let rw = unsafe { &*(l as *const RwLock) };
        (rw, rw.shared.load(Ordering::Relaxed) != 0)
    }
}

/// Reads the optional timespec of a timed call on `clock` (`None`: untimed).
enum Wait {
    Forever,
    Until(Deadline),
    Invalid,
}

/// # Safety
/// `ts` is null or readable.
unsafe fn wait_of(clock: Option<Clock>, ts: *const timespec) -> Wait {
    match clock {
        None => Wait::Forever,
        Some(_) if ts.is_null() => Wait::Invalid,
        // SAFETY: non-null, readable (the caller's promise).
        Some(c) => match deadline_of(c, unsafe { ts.read() }) {
            Some(d) => Wait::Until(d),
            None => Wait::Invalid,
        },
    }
}

/// A non-recursive read under `SCALELOCK_LOCK=spin`: scalelock's own read would not see the
/// writers counted in `spinning_writers`, so retry [`RwLock::try_read`] (which does), until it
/// succeeds or `deadline` (if any) passes. Returns whether the read lock was taken.
fn spin_read(rw: &RwLock, deadline: Option<&Deadline>) -> bool {
    spin_until(|| rw.try_read(), Awake::Spin, deadline)
}

impl RwLock {
    /// Counts a read acquisition at `caller` and (for one reader at a time) times its hold,
    /// while lockstat records.
    #[inline]
    fn count_read(&self, caller: usize) {
        stats::when_recording(|| {
            stats::acquired(self.addr(), caller);
            self.hold.begin_shared();
        });
    }

    /// [`count_read`](Self::count_read) for a write acquisition.
    #[inline]
    fn count_write(&self, caller: usize) {
        stats::when_recording(|| {
            stats::acquired(self.addr(), caller);
            self.hold.begin(caller);
        });
    }

    fn addr(&self) -> usize {
        self as *const RwLock as usize
    }

    fn recursive_reads(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != PREFER_WRITER_NONRECURSIVE
    }

    fn try_read(&self) -> bool {
        if self.recursive_reads() {
            self.raw.try_lock_shared_recursive()
        } else {
            // Under SCALELOCK_LOCK=spin a waiting writer never marks the lock word (it never
            // sleeps): it counts itself in `spinning_writers`, and a non-recursive reader stays
            // out, as it does for a sleeping writer.
            self.spinning_writers.load(Ordering::Relaxed) == 0 && self.raw.try_lock_shared()
        }
    }

    fn try_write(&self) -> bool {
        self.raw.try_lock_exclusive()
    }

    /// `pthread_rwlock_tryrdlock` on this lock: 0, counted at `caller`, or `EBUSY`.
    fn tryrdlock(&self, caller: usize) -> c_int {
        if !self.try_read() {
            return libc::EBUSY;
        }
        self.count_read(caller);
        0
    }

    /// `pthread_rwlock_trywrlock` on this lock: 0, counted at `caller`, or `EBUSY`.
    fn trywrlock(&self, caller: usize) -> c_int {
        if !self.try_write() {
            return libc::EBUSY;
        }
        self.count_write(caller);
        self.writer.store(me(), Ordering::Relaxed);
        0
    }

    /// # Safety
    /// `ts` is null or readable.
    #[inline]
    unsafe fn read(&self, clock: Option<Clock>, ts: *const timespec, caller: usize) -> c_int {
        // As glibc: a bad deadline is refused before anything else, even for a free lock.
        // SAFETY: the caller's promise.
        let wait = unsafe { wait_of(clock, ts) };
        if let Wait::Invalid = wait {
            return libc::EINVAL;
        }
        // (`writer` is 0 unless a writer holds the lock: only then ask who we are.)
        let writer = self.writer.load(Ordering::Relaxed);
        if writer != 0 && writer == me() {
            return libc::EDEADLK;
        }
        if self.try_read() {
            self.count_read(caller);
            return 0;
        }
        self.read_contended(wait, caller)
    }

    /// The rest of [`read`](Self::read), out of line: the lock was not free for a reader.
    #[cold]
    #[inline(never)]
    fn read_contended(&self, wait: Wait, caller: usize) -> c_int {
        let recursive = self.recursive_reads();
        let ok = match wait {
            Wait::Invalid => return libc::EINVAL,
            Wait::Forever if mode() == Mode::Spin && !recursive => {
                stats::waiting_at(caller, || spin_read(self, None))
            }
            Wait::Until(d) if mode() == Mode::Spin && !recursive => {
                stats::waiting_at(caller, || spin_read(self, Some(&d)))
            }
            Wait::Forever => {
                stats::waiting_at(caller, || {
                    if recursive {
                        self.raw.lock_shared_recursive();
                    } else {
                        self.raw.lock_shared();
                    }
                });
                true
            }
            Wait::Until(d) if recursive => {
                stats::waiting_at(caller, || self.raw.try_lock_shared_recursive_until(&d))
            }
            Wait::Until(d) => stats::waiting_at(caller, || self.raw.try_lock_shared_until(&d)),
        };
        if ok {
            self.count_read(caller);
            0
        } else {
            libc::ETIMEDOUT
        }
    }

    /// # Safety
    /// `ts` is null or readable.
    #[inline]
    unsafe fn write(&self, clock: Option<Clock>, ts: *const timespec, caller: usize) -> c_int {
        // SAFETY: the caller's promise.
        let wait = unsafe { wait_of(clock, ts) };
        if let Wait::Invalid = wait {
            return libc::EINVAL;
        }
        let me = me();
        if self.writer.load(Ordering::Relaxed) == me {
            return libc::EDEADLK;
        }
        if !self.try_write() && !self.write_contended(wait, caller) {
            return libc::ETIMEDOUT;
        }
        self.count_write(caller);
        self.writer.store(me, Ordering::Relaxed);
        0
    }

    /// The wait of [`write`](Self::write), out of line: whether the write lock was taken
    /// before the deadline.
    #[cold]
    #[inline(never)]
    fn write_contended(&self, wait: Wait, caller: usize) -> bool {
        // Under SCALELOCK_LOCK=spin a waiting writer makes itself seen (see `try_read`).
        let spinning = mode() == Mode::Spin;
        if spinning {
            self.spinning_writers.fetch_add(1, Ordering::Relaxed);
        }
        let ok = match wait {
            Wait::Invalid => false, // refused by the caller
            Wait::Forever => {
                stats::waiting_at(caller, || self.raw.lock_exclusive());
                true
            }
            Wait::Until(d) => stats::waiting_at(caller, || self.raw.try_lock_exclusive_until(&d)),
        };
        if spinning {
            self.spinning_writers.fetch_sub(1, Ordering::Relaxed);
        }
        ok
    }

    #[inline]
    fn unlock(&self) -> c_int {
        if self.raw.is_locked_exclusive() {
            self.writer.store(0, Ordering::Relaxed);
            self.hold.end(self.addr());
            // SAFETY: held for writing, and the caller holds it (POSIX's precondition), so the
            // caller is the writer.
            unsafe { self.raw.unlock_exclusive() };
            0
        } else if self.raw.is_locked() {
            self.hold.end_shared(self.addr());
            // SAFETY: held, not for writing: the caller holds one of the read locks.
            unsafe { self.raw.unlock_shared() };
            0
        } else {
            // Not held: as glibc, success, and the lock is left as it is.
            0
        }
    }
}

/// `pthread_rwlock_init`: a process-shared rwlock is glibc's.
///
/// # Safety
/// `l` points at writable memory for a `pthread_rwlock_t`; `attr` is null or initialised.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    if l.is_null() {
        return libc::EINVAL;
    }
    let (mut pshared, mut kind) = (libc::PTHREAD_PROCESS_PRIVATE, 0);
    if !attr.is_null() {
        // SAFETY: an initialised attribute (the caller's promise), only read by glibc's getters.
        unsafe {
            pthread_rwlockattr_getpshared(attr, &mut pshared);
            pthread_rwlockattr_getkind_np(attr, &mut kind);
        }
    }
    let shared = pshared != libc::PTHREAD_PROCESS_PRIVATE;
    match decide((), shared) {
        // SAFETY: pass-through with the caller's arguments.
        Route::Glibc => return unsafe { real::rwlock_init(l, attr) },
        Route::Unavailable => return libc::EAGAIN,
        Route::Ours(()) => {}
    }
    // SAFETY: `l` is valid for writes of a whole pthread_rwlock_t; nobody uses an rwlock while it
    // is being initialised.
    unsafe {
        core::ptr::write_bytes(l.cast::<u8>(), 0, size_of::<pthread_rwlock_t>());
        (*(l as *const RwLock)).kind.store(kind, Ordering::Relaxed);
    }
    // A lock whose memory was freed without `pthread_rwlock_destroy` is gone too.
    stats::destroyed(l as usize);
    0
}

/// `pthread_rwlock_destroy`: 0, as glibc's, even for a held lock (glibc checks nothing, and
/// programs destroy locks still read-held by threads that have exited); lockstat folds the
/// lock's rows into those of the destroyed locks (see `stats::destroyed`).
///
/// # Safety
/// `l` points at an initialised `pthread_rwlock_t`.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's lock.
    unsafe {
        serve(
            l,
            |_| {
                stats::destroyed(l as usize);
                0
            },
            || real::rwlock_destroy(l),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_rdlock`: `EDEADLK` if the caller holds the write lock.
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`.
    pub fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_rdlock_from, "rsi";
}

/// The body of [`pthread_rwlock_rdlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_rdlock`].
unsafe extern "C" fn rwlock_rdlock_from(l: *mut pthread_rwlock_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise (and no timespec for ours); glibc's gets the caller's lock.
    unsafe {
        serve(
            l,
            |rw| rw.read(None, core::ptr::null(), caller),
            || real::rwlock_rdlock(l),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_tryrdlock`: `EBUSY` if a writer holds the lock (or, kind 2, waits).
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`.
    pub fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_tryrdlock_from, "rsi";
}

/// The body of [`pthread_rwlock_tryrdlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_tryrdlock`].
unsafe extern "C" fn rwlock_tryrdlock_from(l: *mut pthread_rwlock_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's lock.
    unsafe { serve(l, |rw| rw.tryrdlock(caller), || real::rwlock_tryrdlock(l)) }
}

entry_with_caller! {
    /// `pthread_rwlock_timedrdlock`: `abstime` on `CLOCK_REALTIME`; `ETIMEDOUT`, `EINVAL`.
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`; `abstime` is null or readable.
    pub fn pthread_rwlock_timedrdlock(l: *mut pthread_rwlock_t, abstime: *const timespec) -> c_int = rwlock_timedrdlock_from, "rdx";
}

/// The body of [`pthread_rwlock_timedrdlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_timedrdlock`].
unsafe extern "C" fn rwlock_timedrdlock_from(
    l: *mut pthread_rwlock_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            l,
            |rw| rw.read(Some(Clock::Realtime), abstime, caller),
            || real::rwlock_timedrdlock(l, abstime),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_clockrdlock`: `abstime` on `clockid` (monotonic or realtime).
    ///
    /// # Safety
    /// As for [`pthread_rwlock_timedrdlock`].
    pub fn pthread_rwlock_clockrdlock(l: *mut pthread_rwlock_t, clockid: clockid_t, abstime: *const timespec) -> c_int = rwlock_clockrdlock_from, "rcx";
}

/// The body of [`pthread_rwlock_clockrdlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_clockrdlock`].
unsafe extern "C" fn rwlock_clockrdlock_from(
    l: *mut pthread_rwlock_t,
    clockid: clockid_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            l,
            |rw| match clock_of(clockid) {
                Some(c) => rw.read(Some(c), abstime, caller),
                None => libc::EINVAL,
            },
            || real::rwlock_clockrdlock(l, clockid, abstime),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_wrlock`: `EDEADLK` if the caller holds the write lock.
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`.
    pub fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_wrlock_from, "rsi";
}

/// The body of [`pthread_rwlock_wrlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_wrlock`].
unsafe extern "C" fn rwlock_wrlock_from(l: *mut pthread_rwlock_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise (and no timespec for ours); glibc's gets the caller's lock.
    unsafe {
        serve(
            l,
            |rw| rw.write(None, core::ptr::null(), caller),
            || real::rwlock_wrlock(l),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_trywrlock`: `EBUSY` if held.
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`.
    pub fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_trywrlock_from, "rsi";
}

/// The body of [`pthread_rwlock_trywrlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_trywrlock`].
unsafe extern "C" fn rwlock_trywrlock_from(l: *mut pthread_rwlock_t, caller: usize) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's lock.
    unsafe { serve(l, |rw| rw.trywrlock(caller), || real::rwlock_trywrlock(l)) }
}

entry_with_caller! {
    /// `pthread_rwlock_timedwrlock`: `abstime` on `CLOCK_REALTIME`; `ETIMEDOUT`, `EINVAL`.
    ///
    /// # Safety
    /// `l` points at an initialised `pthread_rwlock_t`; `abstime` is null or readable.
    pub fn pthread_rwlock_timedwrlock(l: *mut pthread_rwlock_t, abstime: *const timespec) -> c_int = rwlock_timedwrlock_from, "rdx";
}

/// The body of [`pthread_rwlock_timedwrlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_timedwrlock`].
unsafe extern "C" fn rwlock_timedwrlock_from(
    l: *mut pthread_rwlock_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            l,
            |rw| rw.write(Some(Clock::Realtime), abstime, caller),
            || real::rwlock_timedwrlock(l, abstime),
        )
    }
}

entry_with_caller! {
    /// `pthread_rwlock_clockwrlock`: `abstime` on `clockid` (monotonic or realtime).
    ///
    /// # Safety
    /// As for [`pthread_rwlock_timedwrlock`].
    pub fn pthread_rwlock_clockwrlock(l: *mut pthread_rwlock_t, clockid: clockid_t, abstime: *const timespec) -> c_int = rwlock_clockwrlock_from, "rcx";
}

/// The body of [`pthread_rwlock_clockwrlock`], called with the caller's return address.
///
/// # Safety
/// As for [`pthread_rwlock_clockwrlock`].
unsafe extern "C" fn rwlock_clockwrlock_from(
    l: *mut pthread_rwlock_t,
    clockid: clockid_t,
    abstime: *const timespec,
    caller: usize,
) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's arguments.
    unsafe {
        serve(
            l,
            |rw| match clock_of(clockid) {
                Some(c) => rw.write(Some(c), abstime, caller),
                None => libc::EINVAL,
            },
            || real::rwlock_clockwrlock(l, clockid, abstime),
        )
    }
}

/// `pthread_rwlock_unlock`: releases the caller's write lock or one of its read locks.
///
/// # Safety
/// `l` points at an initialised `pthread_rwlock_t` the caller holds.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: the caller's promise; glibc's gets the caller's lock.
    unsafe { serve(l, |rw| rw.unlock(), || real::rwlock_unlock(l)) }
}

// The names older binaries still use.

/// `__pthread_rwlock_init`.
///
/// # Safety
/// As for [`pthread_rwlock_init`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_rwlock_init(l, attr) }
}

/// `__pthread_rwlock_destroy`.
///
/// # Safety
/// As for [`pthread_rwlock_destroy`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_rwlock_destroy(l) }
}

entry_with_caller! {
    /// `__pthread_rwlock_rdlock`.
    ///
    /// # Safety
    /// As for [`pthread_rwlock_rdlock`].
    pub fn __pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_rdlock_from, "rsi";
}

entry_with_caller! {
    /// `__pthread_rwlock_tryrdlock`.
    ///
    /// # Safety
    /// As for [`pthread_rwlock_tryrdlock`].
    pub fn __pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_tryrdlock_from, "rsi";
}

entry_with_caller! {
    /// `__pthread_rwlock_wrlock`.
    ///
    /// # Safety
    /// As for [`pthread_rwlock_wrlock`].
    pub fn __pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_wrlock_from, "rsi";
}

entry_with_caller! {
    /// `__pthread_rwlock_trywrlock`.
    ///
    /// # Safety
    /// As for [`pthread_rwlock_trywrlock`].
    pub fn __pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int = rwlock_trywrlock_from, "rsi";
}

/// `__pthread_rwlock_unlock`.
///
/// # Safety
/// As for [`pthread_rwlock_unlock`].
#[no_mangle]
pub unsafe extern "C" fn __pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    // SAFETY: same contract.
    unsafe { pthread_rwlock_unlock(l) }
}
