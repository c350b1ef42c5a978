//! # scalelock
//!
//! Self-tuning locks for servers on many-core machines.
//!
//! - [`Mutex`]: spins exactly as long as spinning has been paying on *this* lock, then sleeps on a
//!   futex; hands off to a waiter that has waited over a millisecond, so tail latency stays bounded
//!   when threads outnumber cores.
//! - [`Condvar`]: `notify_all` moves waiters onto the mutex instead of waking a herd.
//! - [`wait`]: the one wait layer every lock shares (futex, calibrated spinning, learned budgets,
//!   the process-wide [`SpinPolicy`](wait::SpinPolicy)).
//!
//! ```
//! use scalelock::{Condvar, Mutex};
//!
//! let m = Mutex::new(Vec::new());
//! m.lock().push(1);
//! assert_eq!(m.lock().len(), 1);
//! let _cv = Condvar::new();
//! ```
#![warn(missing_docs)]

mod biased;
mod condvar;
mod mutex;
mod rwlock;
mod sync;
pub mod wait;

pub use condvar::{Condvar, WaitTimeoutResult};
#[cfg(not(loom))]
pub use mutex::{
    MappedMutexGuard, Mutex, MutexGuard, RawThreadId, ReentrantMutex, ReentrantMutexGuard,
};
pub use mutex::{RawMutex, STARVATION_NS};

pub use biased::RawBiasedRwLock;
#[cfg(not(loom))]
pub use biased::{
    BiasedRwLock, BiasedRwLockReadGuard, BiasedRwLockUpgradableReadGuard, BiasedRwLockWriteGuard,
    MappedBiasedRwLockReadGuard, MappedBiasedRwLockWriteGuard,
};
pub use rwlock::RawRwLock;
#[cfg(not(loom))]
pub use rwlock::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};

/// Re-export of the `lock_api` crate whose traits scalelock's raw locks implement.
pub use lock_api;
