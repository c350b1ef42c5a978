//! The reader-biased rwlock ([`RawBiasedRwLock`], BRAVO-style visible readers).
//!
//! - `protocol`: the bias, its revocation and its return (the drawing of the lock's state and
//!   of the readers table is there), on top of the plain [`RawRwLock`](crate::RawRwLock);
//! - `payoff`: whether the bias pays for its revocations (the verdict, with table-driven
//!   tests);
//! - `table`: the process-wide visible-readers table, one row per CPU;
//! - `held`: each thread's record of the deferred read locks it holds;
//! - `api`: lock_api's traits (the forwarding macro both raw rwlocks share);
//! - the guard types.

#[cfg(not(loom))]
mod api;
mod held;
mod payoff;
mod protocol;
mod table;

pub use protocol::RawBiasedRwLock;

/// The guard of a read lock on a [`BiasedRwLock`](crate::BiasedRwLock).
///
/// ```
/// let lock = scalelock::BiasedRwLock::new(1);
/// let a: scalelock::BiasedRwLockReadGuard<'_, i32> = lock.read();
/// let b = lock.read(); // nested reads share this thread's slot
/// assert_eq!(*a + *b, 2);
/// ```
#[cfg(not(loom))]
pub type BiasedRwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawBiasedRwLock, T>;

/// The guard of the write lock on a [`BiasedRwLock`](crate::BiasedRwLock).
///
/// ```
/// let lock = scalelock::BiasedRwLock::new(1);
/// let mut w: scalelock::BiasedRwLockWriteGuard<'_, i32> = lock.write();
/// *w += 1;
/// let r = scalelock::BiasedRwLockWriteGuard::downgrade(w);
/// assert_eq!(*r, 2);
/// ```
#[cfg(not(loom))]
pub type BiasedRwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawBiasedRwLock, T>;

/// The guard of an upgradable read lock on a [`BiasedRwLock`](crate::BiasedRwLock).
///
/// ```
/// use scalelock::{BiasedRwLock, BiasedRwLockUpgradableReadGuard};
///
/// let lock = BiasedRwLock::new(1);
/// let u = lock.upgradable_read();
/// assert_eq!(*lock.read(), 1); // readers still enter
/// let mut w = BiasedRwLockUpgradableReadGuard::upgrade(u);
/// *w = 2;
/// ```
#[cfg(not(loom))]
pub type BiasedRwLockUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawBiasedRwLock, T>;

/// A [`BiasedRwLockReadGuard`] mapped to a part of the protected data.
///
/// ```
/// use scalelock::{BiasedRwLock, BiasedRwLockReadGuard};
///
/// let lock = BiasedRwLock::new((1, 2));
/// let second = BiasedRwLockReadGuard::map(lock.read(), |p| &p.1);
/// assert_eq!(*second, 2);
/// ```
#[cfg(not(loom))]
pub type MappedBiasedRwLockReadGuard<'a, T> =
    lock_api::MappedRwLockReadGuard<'a, RawBiasedRwLock, T>;

/// A [`BiasedRwLockWriteGuard`] mapped to a part of the protected data.
///
/// ```
/// use scalelock::{BiasedRwLock, BiasedRwLockWriteGuard};
///
/// let lock = BiasedRwLock::new((1, 2));
/// *BiasedRwLockWriteGuard::map(lock.write(), |p| &mut p.0) = 5;
/// assert_eq!(*lock.read(), (5, 2));
/// ```
#[cfg(not(loom))]
pub type MappedBiasedRwLockWriteGuard<'a, T> =
    lock_api::MappedRwLockWriteGuard<'a, RawBiasedRwLock, T>;
