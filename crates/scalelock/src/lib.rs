//! # scalelock
//!
//! Self-tuning locks for servers on many-core machines.
//!
//! - [`Mutex`]: spins exactly as long as spinning has been paying on *this* lock, then sleeps on a
//!   futex; hands off to a waiter that has waited over a millisecond, so tail latency stays bounded
//!   when threads outnumber cores.
//! - [`RwLock`]: one state word; an uncontended read is one atomic operation each way, like a
//!   mutex; phase-fair (neither readers nor writers starve); `read_recursive` never waits behind
//!   a waiting writer, and debug builds catch a nested plain `read` that would deadlock.
//! - [`BiasedRwLock`]: reader-biased (BRAVO-style): while writes are rare, readers on different
//!   cores write no common cache line; writers revoke the bias and pay a bounded price.
//! - [`Condvar`]: `notify_all` moves waiters onto the mutex instead of waking a herd.
//! - [`stats`]: lockstat: acquisitions, contention, spin, sleeps, wait and hold times per lock and
//!   per call site (`SCALELOCK_LOCKSTAT=1`).
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
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(all(feature = "arc_lock", not(loom)))]
mod arc_lock;
mod biased;
#[cfg(not(loom))]
mod compat;
mod condvar;
#[cfg(not(loom))]
mod cpu;
#[cfg(not(loom))]
mod fair_mutex;
mod mutex;
#[cfg(not(loom))]
mod mutex_wrapper;
#[cfg(not(loom))]
pub mod rcu;
mod rwlock;
#[cfg(not(loom))]
mod rwlock_wrapper;
#[cfg(all(feature = "serde", not(loom)))]
mod serde_impls;
pub mod stats;
mod sync;
pub mod wait;

pub use condvar::{Condvar, WaitTimeoutResult};
#[cfg(not(loom))]
pub use mutex::{MappedMutexGuard, MutexGuard, RawThreadId, ReentrantMutex, ReentrantMutexGuard};
pub use mutex::{RawMutex, STARVATION_NS};
#[cfg(not(loom))]
pub use mutex_wrapper::Mutex;

pub use biased::RawBiasedRwLock;
#[cfg(not(loom))]
pub use biased::{
    BiasedRwLockReadGuard, BiasedRwLockUpgradableReadGuard, BiasedRwLockWriteGuard,
    MappedBiasedRwLockReadGuard, MappedBiasedRwLockWriteGuard,
};
pub use rwlock::RawRwLock;
#[cfg(not(loom))]
pub use rwlock::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
#[cfg(not(loom))]
pub use rwlock_wrapper::{BiasedRwLock, RwLock};

#[cfg(not(loom))]
pub use rcu::{Rcu, RcuReadGuard};

#[cfg(all(feature = "arc_lock", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub use arc_lock::{
    ArcLockRawMutex, ArcLockRawRwLock, ArcMutexGuard, ArcRwLockReadGuard,
    ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
};
#[cfg(not(loom))]
pub use compat::{const_biased_rwlock, const_mutex, const_reentrant_mutex, const_rwlock};
#[cfg(not(loom))]
pub use fair_mutex::{
    const_fair_mutex, FairMutex, FairMutexGuard, MappedFairMutexGuard, RawFairMutex,
};
#[cfg(all(feature = "arc_lock", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub use lock_api::ArcReentrantMutexGuard;

/// Re-export of the `lock_api` crate whose traits scalelock's raw locks implement.
pub use lock_api;
