//! scalelock's reader-writer lock: one state word, one atomic operation per uncontended read.
//!
//! - `protocol`: the state word (its drawing and transitions), the fast paths and the contended
//!   paths, which wait through the wait layer's `Waiter`;
//! - `held`: debug-build tracking of each thread's read locks, which catches a nested plain
//!   `read` that would deadlock behind a waiting writer;
//! - `api`: lock_api's traits, for this lock and [`RawBiasedRwLock`](crate::RawBiasedRwLock)
//!   (one macro forwards both);
//! - the guard types.

#[cfg(not(loom))]
pub(crate) mod api;
mod held;
mod protocol;

pub use protocol::RawRwLock;

/// The guard of a read lock on an [`RwLock`](crate::RwLock).
///
/// ```
/// let lock = scalelock::RwLock::new(1);
/// let g: scalelock::RwLockReadGuard<'_, i32> = lock.read();
/// assert_eq!(*g, 1);
/// ```
#[cfg(not(loom))]
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;

/// The guard of the write lock on an [`RwLock`](crate::RwLock).
///
/// ```
/// let lock = scalelock::RwLock::new(1);
/// let mut g: scalelock::RwLockWriteGuard<'_, i32> = lock.write();
/// *g = 2;
/// let r = scalelock::RwLockWriteGuard::downgrade(g); // atomically becomes a read lock
/// assert_eq!(*r, 2);
/// ```
#[cfg(not(loom))]
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;

/// The guard of an upgradable read lock on an [`RwLock`](crate::RwLock): shared with readers, exclusive with
/// writers and other upgradable readers, and upgradable to the write lock.
///
/// ```
/// use scalelock::{RwLock, RwLockUpgradableReadGuard};
///
/// let lock = RwLock::new(vec![1]);
/// let u = lock.upgradable_read();
/// let _r = lock.read(); // readers may still enter
/// drop(_r);
/// let mut w = RwLockUpgradableReadGuard::upgrade(u);
/// w.push(2);
/// assert_eq!(w.len(), 2);
/// ```
#[cfg(not(loom))]
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;

/// A read guard mapped to a part of the protected data.
///
/// ```
/// use scalelock::{RwLock, RwLockReadGuard};
///
/// let lock = RwLock::new((1, 2));
/// let second = RwLockReadGuard::map(lock.read(), |p| &p.1);
/// assert_eq!(*second, 2);
/// ```
#[cfg(not(loom))]
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;

/// A write guard mapped to a part of the protected data.
///
/// ```
/// use scalelock::{RwLock, RwLockWriteGuard};
///
/// let lock = RwLock::new((1, 2));
/// let mut first = RwLockWriteGuard::map(lock.write(), |p| &mut p.0);
/// *first = 10;
/// drop(first);
/// assert_eq!(*lock.read(), (10, 2));
/// ```
#[cfg(not(loom))]
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;
