//! # scalelock
//!
//! Self-tuning locks for servers on many-core machines, with the API of `parking_lot` (built on
//! [`lock_api`]): switching is mostly a change of the `use` line.
//!
//! **Linux only.** Every lock sleeps on a futex, and the reader-biased rwlock reads the CPU
//! number from the thread's rseq area (falling back to `sched_getcpu`).
//!
//! ```
//! use scalelock::{Condvar, Mutex};
//! use std::sync::Arc;
//!
//! let pair = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
//! let pair2 = Arc::clone(&pair);
//! std::thread::spawn(move || {
//!     pair2.0.lock().push(42);
//!     pair2.1.notify_one();
//! });
//! let mut items = pair.0.lock();
//! pair.1.wait_while(&mut items, |v| v.is_empty());
//! assert_eq!(items[0], 42);
//! ```
//!
//! # Which lock for which workload
//!
//! | workload | use | why |
//! | --- | --- | --- |
//! | short critical sections, any number of threads | [`Mutex`] | spins only while spinning has paid on this lock (learned per lock), sleeps otherwise; a waiter that has been away from its CPU (yielding or asleep) for over [`STARVATION_NS`] starves: it watches for the release for up to a wake-up latency (one waiter per lock at a time), then sleeps and gets the lock handed to it; when threads outnumber cores, a thread that keeps taking it yields its CPU to the waiters runnable behind it a few times a millisecond, so that a waiter waits for a round of those turns rather than a round of scheduler slices: the bench's *longest stall* measures that tail |
//! | long critical sections | [`Mutex`] | the learned spin budget decays to a short probe: waiters sleep instead of burning cores |
//! | strict first-come, first-served hand-over | [`FairMutex`] | every unlock hands the lock to the longest sleeper |
//! | wait for a condition | [`Condvar`] with [`Mutex`] | exact wake-up counts, no spurious wake-ups; `notify_all` moves the waiters onto the mutex instead of waking a herd |
//! | shared data, reads and writes both common | [`RwLock`] | readers share, one atomic operation each way; readers and writers take turns (phase-fair), so neither starves |
//! | read-mostly data on several cores | [`BiasedRwLock`] | readers on different cores write no common cache line; writers pay a bounded revocation, and the bias turns itself off while writes are frequent |
//! | a thread may read-lock again while reading | `read_recursive` on [`RwLock`] / [`BiasedRwLock`] | waits only for a writer that *holds* the lock, never behind a waiting one |
//! | the owner may lock again | [`ReentrantMutex`] | counts the owner's nested locks |
//! | read-mostly data that can be copied on update | [`Rcu`] (or a table of [`Rcu`] cells) | readers take no lock at all; writers publish a new version |
//! | many threads allocating 4 KiB – 4 MiB | [`LargePool`](https://docs.rs/scalelock-alloc) as `#[global_allocator]` (crate `scalelock-alloc`) | per-thread magazines, no global lock |
//! | "which lock is hot, and who takes it?" | [`stats`] (lockstat), `SCALELOCK_LOCKSTAT=1` | contention, spin, sleeps, wait and hold times per lock and per call site |
//! | an unmodified C/C++ program | crate `scalelock-preload` (`scalelock run` / `scalelock profile` from `scalelock-cli`) | `LD_PRELOAD` puts these locks under its pthread locks |
//!
//! # Every type
//!
//! - Mutexes: [`Mutex`] (with [`MutexGuard`], [`MappedMutexGuard`]), [`FairMutex`]
//!   ([`FairMutexGuard`], [`MappedFairMutexGuard`]), [`ReentrantMutex`]
//!   ([`ReentrantMutexGuard`]); raw locks [`RawMutex`], [`RawFairMutex`], [`RawThreadId`].
//! - Reader-writer locks: [`RwLock`] and [`BiasedRwLock`], with lock_api's guards
//!   ([`RwLockReadGuard`], [`RwLockWriteGuard`], [`RwLockUpgradableReadGuard`], the mapped
//!   ones, and the `BiasedRwLock*Guard` aliases); raw locks [`RawRwLock`], [`RawBiasedRwLock`].
//! - [`Condvar`] and [`WaitTimeoutResult`].
//! - [`rcu`]: [`Rcu`], [`RcuReadGuard`], [`rcu::synchronize`], [`rcu::RcuReader`].
//! - `const` constructors as in parking_lot: [`const_mutex`], [`const_fair_mutex`],
//!   [`const_rwlock`], [`const_biased_rwlock`], [`const_reentrant_mutex`] (every `new` is
//!   `const` as well).
//! - With `arc_lock`: the owned guards `ArcMutexGuard`, `ArcRwLockReadGuard`,
//!   `ArcRwLockWriteGuard`, `ArcRwLockUpgradableReadGuard` and `ArcReentrantMutexGuard`.
//! - [`stats`]: lockstat ([`stats::report`], [`stats::enable`], ...).
//! - [`wait`]: the one wait layer every lock shares (futex, deadlines, calibrated spinning, the
//!   process-wide [`SpinPolicy`](wait::SpinPolicy), `SCALELOCK_SPIN`).
//! - Sister crates: `scalelock-alloc` (`LargePool`), `scalelock-preload` (the `LD_PRELOAD`
//!   library), `scalelock-cli` (the `scalelock` command: bench, run, profile).
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `lockstat` | yes | lock statistics ([`stats`]); without it every hook compiles to nothing and the lock wrappers shrink by 24 bytes |
//! | `arc_lock` | no | guards that own an `Arc` of their lock: `Mutex::lock_arc`, `RwLock::{read_arc, write_arc, upgradable_read_arc}` and their `try_` and timed forms, on [`Mutex`], [`RwLock`], [`BiasedRwLock`] and [`ReentrantMutex`] |
//! | `send_guard` | no | [`RwLock`]'s guards become `Send` (and the debug-build check for a nested `read` that would deadlock is off). [`Mutex`] and [`FairMutex`] guards are `Send` without it; [`BiasedRwLock`]'s never are, as its readers keep per-thread records |
//! | `serde` | no | `Serialize` / `Deserialize` for the locks: they serialize as the value they hold |
//!
//! # Differences from parking_lot
//!
//! - [`Mutex`], [`RwLock`] and [`BiasedRwLock`] are thin wrappers around lock_api's types (so that
//!   lockstat can name the caller of `lock`): lock_api's methods they do not define themselves are
//!   reached through `Deref`, and their guards are lock_api's.
//! - One [`Condvar`] may serve several mutexes, even at once (parking_lot panics).
//! - There is no `Once` (use `std::sync::Once` / `OnceLock`) and no `deadlock_detection`.
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
