//! The locks under test, each adapted once.
//!
//! Two adapter traits, [`BenchMutex`] and [`BenchRwLock`], give every lock the same closure-based
//! shape (`locked(|| ..)`, `read(|| ..)`, `write(|| ..)`), so a workload is written once, generic
//! over the lock, and compiled per lock (no dynamic dispatch in the measured loop).
//!
//! A workload reaches a lock by name through [`run_mutex`] / [`run_rwlock`]: it implements
//! [`MutexBench`] or [`RwBench`] (one generic `run` method), and the dispatch function picks the
//! adapter type for the name. Adding a lock = one adapter type (one `guard_mutex!` /
//! `guard_rwlock!` for a lock whose acquisitions return guards) + one line in the dispatch
//! `match` + its name in [`MUTEXES`] / [`RWLOCKS`] + a line in [`describe`].
//!
//! The locks protect `()`: workloads keep their shared data in atomics accessed with `Relaxed`
//! loads and stores (plain moves on x86 and ARM), so a lock that failed to exclude would show up
//! as lost updates in the workload's own checks instead of undefined behaviour.

use super::harness::{Measurement, Trial};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::PoisonError;

/// Mutex-like locks compared in the mutex workloads (the `lock` column).
pub const MUTEXES: &[&str] = &[
    "scalelock",
    "std",
    "parking_lot",
    "spin",
    "pthread",
    "pthread-adaptive",
];

/// The bare test-and-set spinlock, the physical floor of `uncontended`.
pub const FLOOR: &str = "tas";

/// RwLock-like locks compared in the rwlock workloads.
pub const RWLOCKS: &[&str] = &[
    "scalelock",
    "scalelock-biased",
    "std",
    "parking_lot",
    "spin",
    "pthread",
    "crossbeam-sharded",
];

/// What a lock name stands for (shown in the report).
pub fn describe(lock: &str) -> &'static str {
    match lock {
        "scalelock" => {
            "scalelock::Mutex (adaptive spin, then futex sleep) / scalelock::RwLock (one word)"
        }
        "scalelock-biased" => {
            "scalelock::BiasedRwLock (BRAVO-style: readers publish in per-CPU slots while biased)"
        }
        "std" => "std::sync::Mutex / RwLock (futex based)",
        "parking_lot" => "parking_lot::Mutex / RwLock",
        "spin" => "spin::Mutex / spin::RwLock (pure spinning)",
        "pthread" => "glibc pthread_mutex_t (default type) / pthread_rwlock_t (default attributes)",
        "pthread-adaptive" => {
            "glibc pthread_mutex_t with PTHREAD_MUTEX_ADAPTIVE_NP (MariaDB's MY_MUTEX_INIT_FAST)"
        }
        "scalelock-preload" => {
            "preload-hammer: glibc's default pthread_mutex_t in a process started with \
             LD_PRELOAD=scalelock's library"
        }
        "crossbeam-sharded" => "crossbeam_utils::sync::ShardedLock (one std RwLock per shard)",
        "tas" => "bare test-and-set spinlock: the physical floor",
        "lockstat-off" => "scalelock::Mutex with lockstat compiled in, recording off (the default)",
        "lockstat-on" => "scalelock::Mutex with lockstat recording on (stats::enable())",
        "lock_api-bare" => "lock_api::Mutex over scalelock's RawMutex: no lockstat wrapper at all",
        "scalelock-mutex" => {
            "scalelock::Mutex (path-lookup: around one HashMap, as OSv's VFS; rcu-read: around \
             the value)"
        }
        "scalelock-rcu" => {
            "scalelock::rcu::Rcu (path-lookup: 8192 hash slots, each an Rcu cell, QSBR readers; \
             rcu-read: an outermost Rcu::read)"
        }
        "scalelock-rcu-nested" => "rcu-read: Rcu::read inside an enclosing read of the same cell",
        "dashmap" => "path-lookup: dashmap::DashMap (sharded RwLocks), the crates.io peer",
        "system" => "large-alloc: glibc malloc (mmap/munmap above the mmap threshold)",
        "mimalloc" => "large-alloc: mimalloc",
        "jemalloc" => "large-alloc: jemalloc (tikv-jemallocator)",
        "scalelock-pool" => {
            "large-alloc: scalelock_alloc::LargePool (per-thread magazines, lock-free depot)"
        }
        _ => "",
    }
}

/// A mutex-like lock under test.
pub trait BenchMutex: Send + Sync + 'static {
    /// A new, unlocked lock.
    fn new() -> Self;
    /// Runs `f` while holding the lock.
    fn locked<R>(&self, f: impl FnOnce() -> R) -> R;
}

/// How a thread that already holds a read lock takes another read lock on the same lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nesting {
    /// A plain `read` is safe while holding a read lock: waiting writers never block readers.
    Reentrant,
    /// The lock offers a dedicated recursive read (parking_lot's `read_recursive`).
    Recursive,
    /// No safe nested read exists (a waiting writer would deadlock it): the workload keeps the
    /// outer read lock and runs the nested section without a second acquisition.
    Flattened,
}

impl Nesting {
    /// Short label used in the report and JSON.
    pub fn label(self) -> &'static str {
        match self {
            Nesting::Reentrant => "nested read",
            Nesting::Recursive => "read_recursive",
            Nesting::Flattened => "flattened (no recursive read)",
        }
    }
}

/// An rwlock-like lock under test.
pub trait BenchRwLock: Send + Sync + 'static {
    /// How nested reads are taken on this lock.
    const NESTING: Nesting;
    /// A new, unlocked lock.
    fn new() -> Self;
    /// Runs `f` holding a shared (read) lock.
    fn read<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Runs `f` holding the exclusive (write) lock.
    fn write<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Runs `f` holding a nested read lock; only called by a thread that already holds a read
    /// lock, and only when [`Self::NESTING`] is not [`Nesting::Flattened`].
    fn read_nested<R>(&self, f: impl FnOnce() -> R) -> R {
        self.read(f)
    }
}

/// A workload body generic over a mutex: [`run_mutex`] calls `run::<M>` for the lock named.
pub trait MutexBench: Sync {
    /// Runs one measured point with lock type `M`.
    fn run<M: BenchMutex>(&self, trial: &Trial) -> Result<Measurement, String>;
}

/// A workload body generic over an rwlock: [`run_rwlock`] calls `run::<L>` for the lock named.
pub trait RwBench: Sync {
    /// Runs one measured point with lock type `L`.
    fn run<L: BenchRwLock>(&self, trial: &Trial) -> Result<Measurement, String>;
}

/// Runs `bench` with the mutex named `lock` (one of [`MUTEXES`] or [`FLOOR`]).
pub fn run_mutex<B: MutexBench>(
    lock: &str,
    bench: &B,
    trial: &Trial,
) -> Result<Measurement, String> {
    match lock {
        "scalelock" => bench.run::<ScalelockMutex>(trial),
        "std" => bench.run::<StdMutex>(trial),
        "parking_lot" => bench.run::<ParkingLotMutex>(trial),
        "spin" => bench.run::<SpinMutex>(trial),
        "pthread" => bench.run::<PthreadMutex>(trial),
        "pthread-adaptive" => bench.run::<PthreadAdaptiveMutex>(trial),
        "tas" => bench.run::<TasLock>(trial),
        other => Err(format!("`{other}` is not a mutex this bench knows")),
    }
}

/// Runs `bench` with the rwlock named `lock` (one of [`RWLOCKS`]).
pub fn run_rwlock<B: RwBench>(lock: &str, bench: &B, trial: &Trial) -> Result<Measurement, String> {
    match lock {
        "scalelock" => bench.run::<ScalelockRwLock>(trial),
        "scalelock-biased" => bench.run::<ScalelockBiasedRwLock>(trial),
        "std" => bench.run::<StdRwLock>(trial),
        "parking_lot" => bench.run::<ParkingLotRwLock>(trial),
        "spin" => bench.run::<SpinRwLock>(trial),
        "pthread" => bench.run::<PthreadRwLock>(trial),
        "crossbeam-sharded" => bench.run::<ShardedRwLock>(trial),
        other => Err(format!("`{other}` is not an rwlock this bench knows")),
    }
}

/// The nesting strategy of the rwlock named `lock`, if it is one.
pub fn rwlock_nesting(lock: &str) -> Option<Nesting> {
    Some(match lock {
        "scalelock" => ScalelockRwLock::NESTING,
        "scalelock-biased" => ScalelockBiasedRwLock::NESTING,
        "std" => StdRwLock::NESTING,
        "parking_lot" => ParkingLotRwLock::NESTING,
        "spin" => SpinRwLock::NESTING,
        "pthread" => PthreadRwLock::NESTING,
        "crossbeam-sharded" => ShardedRwLock::NESTING,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Mutexes
// ---------------------------------------------------------------------------------------------

/// Defines a [`BenchMutex`] adapter that wraps a lock over `()` whose acquisition, `$lock`
/// (with `$l` the wrapped lock), returns a guard.
macro_rules! guard_mutex {
    ($(#[$doc:meta])* $name:ident($inner:ty), |$l:ident| $lock:expr) => {
        $(#[$doc])*
        pub struct $name($inner);

        impl BenchMutex for $name {
            fn new() -> Self {
                $name(<$inner>::new(()))
            }
            #[inline]
            fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
                let $l = &self.0;
                let _guard = $lock;
                f()
            }
        }
    };
}

guard_mutex!(
    /// `scalelock::Mutex`.
    ScalelockMutex(scalelock::Mutex<()>),
    |l| l.lock()
);
guard_mutex!(
    /// `std::sync::Mutex`.
    StdMutex(std::sync::Mutex<()>),
    |l| l.lock().unwrap_or_else(PoisonError::into_inner)
);
guard_mutex!(
    /// `parking_lot::Mutex`.
    ParkingLotMutex(parking_lot::Mutex<()>),
    |l| l.lock()
);
guard_mutex!(
    /// `spin::Mutex` (a spinning mutex that never sleeps).
    SpinMutex(spin::Mutex<()>),
    |l| l.lock()
);

/// A bare test-and-set spinlock: `swap(true)` until it returns `false`, spinning on a plain load
/// with a PAUSE in between. The cheapest possible uncontended lock; collapses under
/// oversubscription.
pub struct TasLock(AtomicBool);

impl BenchMutex for TasLock {
    fn new() -> Self {
        TasLock(AtomicBool::new(false))
    }
    #[inline]
    fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        // Acquire pairs with the Release store below: the previous holder's writes are visible.
        while self.0.swap(true, Ordering::Acquire) {
            while self.0.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        struct Unlock<'a>(&'a AtomicBool);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _unlock = Unlock(&self.0);
        f()
    }
}

/// A glibc `pthread_mutex_t`, initialised in place on the heap (so it never moves after
/// `pthread_mutex_init`) and destroyed on drop. The cell is cache-line padded: otherwise the
/// allocator could put whatever the workload allocates next into the mutex's line, a sharing
/// the locks the workloads keep inline do not have (they pad their locks where data sits near).
struct PthreadMutexCell(Box<CachePadded<UnsafeCell<libc::pthread_mutex_t>>>);

/// glibc's `PTHREAD_MUTEX_ADAPTIVE_NP` (spin a little in user space before sleeping).
const PTHREAD_MUTEX_ADAPTIVE_NP: libc::c_int = 3;

impl PthreadMutexCell {
    fn new(kind: Option<libc::c_int>) -> Self {
        let cell = Box::new(CachePadded::new(UnsafeCell::new(
            libc::PTHREAD_MUTEX_INITIALIZER,
        )));
        // SAFETY: `attr` is initialised by pthread_mutexattr_init before use and destroyed after;
        // the mutex lives at a stable heap address that is not yet shared with any thread, so
        // initialising it in place is sound; afterwards it is never moved (the Box is only
        // dropped after pthread_mutex_destroy).
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            check(
                "pthread_mutexattr_init",
                libc::pthread_mutexattr_init(&mut attr),
            );
            if let Some(kind) = kind {
                check(
                    "pthread_mutexattr_settype",
                    libc::pthread_mutexattr_settype(&mut attr, kind),
                );
            }
            check(
                "pthread_mutex_init",
                libc::pthread_mutex_init(cell.get(), &attr),
            );
            libc::pthread_mutexattr_destroy(&mut attr);
        }
        PthreadMutexCell(cell)
    }

    #[inline]
    fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Unlock<'a>(&'a PthreadMutexCell);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                // SAFETY: this guard exists only after pthread_mutex_lock succeeded on this
                // thread, so the thread owns the mutex it unlocks.
                unsafe { libc::pthread_mutex_unlock(self.0 .0.get()) };
            }
        }
        // SAFETY: the mutex was initialised in `new` and is destroyed only in `drop`, which
        // cannot run while `&self` is borrowed.
        let rc = unsafe { libc::pthread_mutex_lock(self.0.get()) };
        check("pthread_mutex_lock", rc);
        let _unlock = Unlock(self);
        f()
    }
}

impl Drop for PthreadMutexCell {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; `&mut self` proves no thread holds or waits on it.
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

// SAFETY: a pthread mutex is designed to be shared between threads; all access goes through the
// pthread functions, which synchronise internally. It is never moved (heap, stable address).
unsafe impl Sync for PthreadMutexCell {}
// SAFETY: the mutex is unlocked whenever the owner can move it (no guard outlives `locked`), and an
// unlocked glibc mutex may be destroyed from any thread.
unsafe impl Send for PthreadMutexCell {}

/// Aborts the benchmark on a pthread error: a failing lock call would make every number wrong.
fn check(what: &str, rc: libc::c_int) {
    if rc != 0 {
        eprintln!("scalelock bench: {what} failed with error {rc}");
        std::process::exit(70);
    }
}

/// glibc's default `pthread_mutex_t` (`PTHREAD_MUTEX_DEFAULT`: sleeps at once on contention).
pub struct PthreadMutex(PthreadMutexCell);

impl BenchMutex for PthreadMutex {
    fn new() -> Self {
        PthreadMutex(PthreadMutexCell::new(None))
    }
    #[inline]
    fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.locked(f)
    }
}

/// glibc's `PTHREAD_MUTEX_ADAPTIVE_NP` mutex, set through `pthread_mutexattr_settype`.
pub struct PthreadAdaptiveMutex(PthreadMutexCell);

impl BenchMutex for PthreadAdaptiveMutex {
    fn new() -> Self {
        PthreadAdaptiveMutex(PthreadMutexCell::new(Some(PTHREAD_MUTEX_ADAPTIVE_NP)))
    }
    #[inline]
    fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.locked(f)
    }
}

// ---------------------------------------------------------------------------------------------
// RwLocks
// ---------------------------------------------------------------------------------------------

/// Defines a [`BenchRwLock`] adapter that wraps an rwlock over `()` whose acquisitions return
/// guards: `read` and `write` (and `read_nested` where the lock has its own) take the lock, with
/// `$l` the wrapped lock.
macro_rules! guard_rwlock {
    (
        $(#[$doc:meta])*
        $name:ident($inner:ty), $nesting:ident,
        read: |$r:ident| $read:expr,
        write: |$w:ident| $write:expr
        $(, read_nested: |$n:ident| $nested:expr)? $(,)?
    ) => {
        $(#[$doc])*
        pub struct $name($inner);

        impl BenchRwLock for $name {
            const NESTING: Nesting = Nesting::$nesting;
            fn new() -> Self {
                $name(<$inner>::new(()))
            }
            #[inline]
            fn read<R>(&self, f: impl FnOnce() -> R) -> R {
                let $r = &self.0;
                let _guard = $read;
                f()
            }
            #[inline]
            fn write<R>(&self, f: impl FnOnce() -> R) -> R {
                let $w = &self.0;
                let _guard = $write;
                f()
            }
            $(
                #[inline]
                fn read_nested<R>(&self, f: impl FnOnce() -> R) -> R {
                    let $n = &self.0;
                    let _guard = $nested;
                    f()
                }
            )?
        }
    };
}

guard_rwlock!(
    /// `scalelock::RwLock`; nested reads use `read_recursive` (never blocked by a waiting writer).
    ScalelockRwLock(scalelock::RwLock<()>),
    Recursive,
    read: |l| l.read(),
    write: |l| l.write(),
    read_nested: |l| l.read_recursive(),
);
guard_rwlock!(
    /// `scalelock::BiasedRwLock`; nested reads use `read_recursive`.
    ScalelockBiasedRwLock(scalelock::BiasedRwLock<()>),
    Recursive,
    read: |l| l.read(),
    write: |l| l.write(),
    read_nested: |l| l.read_recursive(),
);
guard_rwlock!(
    /// `std::sync::RwLock` (writer-preferring on Linux: a nested read can deadlock behind a
    /// waiting writer, so nesting is flattened).
    StdRwLock(std::sync::RwLock<()>),
    Flattened,
    read: |l| l.read().unwrap_or_else(PoisonError::into_inner),
    write: |l| l.write().unwrap_or_else(PoisonError::into_inner),
);
guard_rwlock!(
    /// `parking_lot::RwLock`; nested reads use `read_recursive`.
    ParkingLotRwLock(parking_lot::RwLock<()>),
    Recursive,
    read: |l| l.read(),
    write: |l| l.write(),
    read_nested: |l| l.read_recursive(),
);
guard_rwlock!(
    /// `spin::RwLock`: waiting writers never block readers, so a nested read is safe.
    SpinRwLock(spin::RwLock<()>),
    Reentrant,
    read: |l| l.read(),
    write: |l| l.write(),
);
guard_rwlock!(
    /// `crossbeam_utils::sync::ShardedLock`: a read locks one shard's std `RwLock`, so, like
    /// std, a nested read could deadlock behind a waiting writer; nesting is flattened.
    ShardedRwLock(crossbeam_utils::sync::ShardedLock<()>),
    Flattened,
    read: |l| l.read().unwrap_or_else(PoisonError::into_inner),
    write: |l| l.write().unwrap_or_else(PoisonError::into_inner),
);

/// glibc's default `pthread_rwlock_t` (reader-preferring, so a nested `rdlock` is safe),
/// initialised in place on the heap and destroyed on drop; cache-line padded, as
/// `PthreadMutexCell` is.
pub struct PthreadRwLock(Box<CachePadded<UnsafeCell<libc::pthread_rwlock_t>>>);

impl PthreadRwLock {
    #[inline]
    fn with<R>(
        &self,
        lock: unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> libc::c_int,
        f: impl FnOnce() -> R,
    ) -> R {
        struct Unlock<'a>(&'a PthreadRwLock);
        impl Drop for Unlock<'_> {
            fn drop(&mut self) {
                // SAFETY: created only after a successful rdlock/wrlock by this thread.
                unsafe { libc::pthread_rwlock_unlock(self.0 .0.get()) };
            }
        }
        // SAFETY: initialised in `new`, destroyed only in `drop` (not while borrowed); `lock` is
        // pthread_rwlock_rdlock or pthread_rwlock_wrlock.
        let rc = unsafe { lock(self.0.get()) };
        check("pthread_rwlock lock", rc);
        let _unlock = Unlock(self);
        f()
    }
}

impl BenchRwLock for PthreadRwLock {
    const NESTING: Nesting = Nesting::Reentrant;
    fn new() -> Self {
        let cell = Box::new(CachePadded::new(UnsafeCell::new(
            libc::PTHREAD_RWLOCK_INITIALIZER,
        )));
        // SAFETY: the rwlock sits at a stable heap address not yet shared; default attributes.
        let rc = unsafe { libc::pthread_rwlock_init(cell.get(), std::ptr::null()) };
        check("pthread_rwlock_init", rc);
        PthreadRwLock(cell)
    }
    #[inline]
    fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        self.with(libc::pthread_rwlock_rdlock, f)
    }
    #[inline]
    fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        self.with(libc::pthread_rwlock_wrlock, f)
    }
}

impl Drop for PthreadRwLock {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; `&mut self` proves nobody holds or waits on it.
        unsafe { libc::pthread_rwlock_destroy(self.0.get()) };
    }
}

// SAFETY: pthread rwlocks are made to be shared between threads; access only through pthread
// calls. Heap-allocated, never moved after init.
unsafe impl Sync for PthreadRwLock {}
// SAFETY: no guard outlives `read`/`write`, so the lock is unlocked whenever it can be moved
// to (and destroyed on) another thread.
unsafe impl Send for PthreadRwLock {}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise_mutex<M: BenchMutex>() {
        let m = M::new();
        assert_eq!(m.locked(|| 7), 7);
        assert_eq!(m.locked(|| 8), 8);
    }

    fn exercise_rwlock<L: BenchRwLock>() {
        let l = L::new();
        let v = l.read(|| {
            if L::NESTING == Nesting::Flattened {
                1
            } else {
                l.read_nested(|| 1)
            }
        });
        assert_eq!(v, 1);
        assert_eq!(l.write(|| 2), 2);
    }

    #[test]
    fn every_mutex_locks_and_unlocks() {
        exercise_mutex::<ScalelockMutex>();
        exercise_mutex::<StdMutex>();
        exercise_mutex::<ParkingLotMutex>();
        exercise_mutex::<SpinMutex>();
        exercise_mutex::<PthreadMutex>();
        exercise_mutex::<PthreadAdaptiveMutex>();
        exercise_mutex::<TasLock>();
    }

    #[test]
    fn every_rwlock_reads_nested_and_writes() {
        exercise_rwlock::<ScalelockRwLock>();
        exercise_rwlock::<ScalelockBiasedRwLock>();
        exercise_rwlock::<StdRwLock>();
        exercise_rwlock::<ParkingLotRwLock>();
        exercise_rwlock::<SpinRwLock>();
        exercise_rwlock::<PthreadRwLock>();
        exercise_rwlock::<ShardedRwLock>();
    }

    #[test]
    fn every_listed_lock_has_a_description_and_nesting() {
        for l in MUTEXES.iter().chain(RWLOCKS).chain([&FLOOR]) {
            assert!(!describe(l).is_empty(), "{l}");
        }
        for l in RWLOCKS {
            assert!(rwlock_nesting(l).is_some(), "{l}");
        }
    }
}
