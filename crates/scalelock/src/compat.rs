//! parking_lot's `const_*` constructors, for code that switches from parking_lot.

use crate::mutex::{RawMutex, RawThreadId, ReentrantMutex};
use crate::mutex_wrapper::Mutex;
use crate::rwlock_wrapper::{BiasedRwLock, RwLock};

/// A [`Mutex`] built in a `const` context (parking_lot's `const_mutex`; the same as
/// [`Mutex::new`], which is `const` too).
///
/// ```
/// static M: scalelock::Mutex<u32> = scalelock::const_mutex(1);
/// assert_eq!(*M.lock(), 1);
/// ```
#[track_caller]
pub const fn const_mutex<T>(value: T) -> Mutex<T> {
    Mutex::new(value)
}

/// A [`RwLock`] built in a `const` context (parking_lot's `const_rwlock`; the same as
/// [`RwLock::new`]).
///
/// ```
/// static L: scalelock::RwLock<u32> = scalelock::const_rwlock(1);
/// assert_eq!(*L.read(), 1);
/// ```
#[track_caller]
pub const fn const_rwlock<T>(value: T) -> RwLock<T> {
    RwLock::new(value)
}

/// A [`BiasedRwLock`] built in a `const` context (the same as [`BiasedRwLock::new`]).
///
/// ```
/// static L: scalelock::BiasedRwLock<u32> = scalelock::const_biased_rwlock(1);
/// assert_eq!(*L.read(), 1);
/// ```
#[track_caller]
pub const fn const_biased_rwlock<T>(value: T) -> BiasedRwLock<T> {
    BiasedRwLock::new(value)
}

/// A [`ReentrantMutex`] built in a `const` context (parking_lot's `const_reentrant_mutex`).
///
/// ```
/// static M: scalelock::ReentrantMutex<u32> = scalelock::const_reentrant_mutex(1);
/// let a = M.lock();
/// let b = M.lock(); // the same thread may lock it again
/// assert_eq!(*a + *b, 2);
/// ```
pub const fn const_reentrant_mutex<T>(value: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(
        <RawMutex as lock_api::RawMutex>::INIT,
        <RawThreadId as lock_api::GetThreadId>::INIT,
        value,
    )
}
