//! [`FairMutex`]: a mutex whose every unlock hands the lock to a waiting thread, as
//! parking_lot's `FairMutex`.
//!
//! The raw lock is [`RawMutex`] with `unlock` replaced by `unlock_fair`: when a thread sleeps on
//! the lock, the releasing thread hands it over (the sleeper wakes owning it) instead of letting
//! a running thread barge in. Waiters are then served in the order the kernel's futex queue keeps
//! (first come, first served), at the price of a wake-up latency on every contended hand-over.

use crate::mutex::RawMutex;
use std::time::{Duration, Instant};

/// [`RawMutex`] whose `unlock` is `unlock_fair`: the raw lock of [`FairMutex`].
///
/// ```
/// use lock_api::RawMutex as _;
/// let raw = scalelock::RawFairMutex::INIT;
/// raw.lock();
/// assert!(raw.is_locked());
/// // SAFETY: locked just above.
/// unsafe { raw.unlock() };
/// ```
pub struct RawFairMutex(RawMutex);

// SAFETY: delegates every operation to `RawMutex`, whose exclusion guarantees carry over; `unlock`
// is `RawMutex::unlock_fair`, which releases (or hands over) the lock just as `unlock` does.
unsafe impl lock_api::RawMutex for RawFairMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawFairMutex = RawFairMutex(RawMutex::new());
    type GuardMarker = <RawMutex as lock_api::RawMutex>::GuardMarker;

    #[inline]
    fn lock(&self) {
        self.0.lock()
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock (this method's contract).
        unsafe { self.0.unlock_fair() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: as above.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { self.0.unlock_fair() }
    }

    #[inline]
    unsafe fn bump(&self) {
        // SAFETY: the caller holds the lock.
        unsafe { lock_api::RawMutexFair::bump(&self.0) }
    }
}

// SAFETY: as above.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        lock_api::RawMutexTimed::try_lock_for(&self.0, timeout)
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        lock_api::RawMutexTimed::try_lock_until(&self.0, timeout)
    }
}

/// A mutex that is handed to a waiting thread on every unlock (parking_lot's `FairMutex`).
///
/// When a thread sleeps on the lock, the releasing thread hands it over (the sleeper wakes owning
/// it) instead of letting a running thread barge in: waiters are served in the order of the
/// kernel's futex queue (first come, first served), at the price of a wake-up latency on every
/// contended hand-over.
///
/// It is lock_api's `Mutex` over [`RawFairMutex`]: lockstat counts it per lock, not per call
/// site, and [`Condvar`](crate::Condvar) does not take its guards (parking_lot's does not
/// either).
///
/// ```
/// use scalelock::FairMutex;
/// use std::sync::Arc;
///
/// let m = Arc::new(FairMutex::new(0));
/// let ts: Vec<_> = (0..4)
///     .map(|_| {
///         let m = Arc::clone(&m);
///         std::thread::spawn(move || *m.lock() += 1)
///     })
///     .collect();
/// for t in ts {
///     t.join().unwrap();
/// }
/// assert_eq!(*m.lock(), 4);
/// ```
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;

/// The guard of a [`FairMutex`].
///
/// ```
/// let m = scalelock::FairMutex::new(1);
/// let g: scalelock::FairMutexGuard<'_, i32> = m.lock();
/// assert_eq!(*g, 1);
/// ```
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;

/// A [`FairMutexGuard`] narrowed to a part of the value (`FairMutexGuard::map`).
///
/// ```
/// use scalelock::{FairMutex, FairMutexGuard, MappedFairMutexGuard};
/// let m = FairMutex::new((1, 2));
/// let second: MappedFairMutexGuard<'_, i32> = FairMutexGuard::map(m.lock(), |p| &mut p.1);
/// assert_eq!(*second, 2);
/// ```
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// A [`FairMutex`] built in a `const` context (parking_lot's `const_fair_mutex`).
///
/// ```
/// static M: scalelock::FairMutex<u32> = scalelock::const_fair_mutex(7);
/// assert_eq!(*M.lock(), 7);
/// ```
pub const fn const_fair_mutex<T>(value: T) -> FairMutex<T> {
    FairMutex::const_new(<RawFairMutex as lock_api::RawMutex>::INIT, value)
}
