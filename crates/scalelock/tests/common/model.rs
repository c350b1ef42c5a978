//! What the loom models share (tests/loom_*.rs): a raw rwlock with a counter it protects, and
//! the threads and model bounds of a scenario.

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread::{self, JoinHandle};
use scalelock::wait::Deadline;
use scalelock::{RawBiasedRwLock, RawRwLock};
use std::time::Duration;

/// A deadline no model reaches: a timed acquisition that gives up does so because loom made it
/// (its clock stands still), so both outcomes are explored.
pub fn far() -> Deadline {
    Deadline::after(Duration::from_secs(3600))
}

/// Runs `f` under loom over every interleaving with at most `preemptions` preemptions (the
/// models with more threads take a lower bound than `LOOM_MAX_PREEMPTIONS`).
pub fn model_with_preemptions(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(preemptions);
    model.check(f);
}

/// Spawns a loom thread that runs `f` on its own handle to `s`.
pub fn spawn_on<S: 'static, R: 'static>(
    s: &Arc<S>,
    f: impl FnOnce(&S) -> R + 'static,
) -> JoinHandle<R> {
    let s = Arc::clone(s);
    thread::spawn(move || f(&s))
}

/// Spawns a writer that tries for `RawRwLock`'s write lock until `patience` seconds from now
/// (under loom, ticks of the virtual clock: timed waits that returned) and, if it gets it,
/// adds one to the counter; it returns what it added.
pub fn timed_writer(s: &Arc<Shared<RawRwLock>>, patience: u64) -> JoinHandle<u32> {
    spawn_on(s, move |s: &Shared<RawRwLock>| {
        let deadline = Deadline::after(Duration::from_secs(patience));
        if s.lock.try_lock_exclusive_until(&deadline) {
            s.add(1);
            // SAFETY: this thread holds the write lock it releases here.
            unsafe { s.lock.unlock_exclusive() };
            1
        } else {
            0
        }
    })
}

/// Spawns `n` loom threads that each run `f` on `s`.
pub fn spawn_each<S: 'static, R: 'static>(
    n: usize,
    s: &Arc<S>,
    f: fn(&S) -> R,
) -> Vec<JoinHandle<R>> {
    (0..n).map(|_| spawn_on(s, f)).collect()
}

/// Joins every thread of `threads`, failing on a panic in any.
pub fn join_all<R>(threads: Vec<JoinHandle<R>>) -> Vec<R> {
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// The raw rwlock operations the models of both rwlocks share (each lock's own, inherent
/// methods: under loom lock_api's traits are not there).
pub trait ModelRwLock: 'static {
    /// An unlocked lock.
    fn new() -> Self;
    /// Takes a read lock.
    fn lock_shared(&self);
    /// Releases a read lock.
    ///
    /// # Safety
    /// The caller holds a read lock.
    unsafe fn unlock_shared(&self);
    /// Takes the write lock.
    fn lock_exclusive(&self);
    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller holds the write lock.
    unsafe fn unlock_exclusive(&self);
}

macro_rules! model_rwlock {
    ($raw:ident) => {
        impl ModelRwLock for $raw {
            fn new() -> Self {
                $raw::new()
            }
            fn lock_shared(&self) {
                $raw::lock_shared(self)
            }
            unsafe fn unlock_shared(&self) {
                // SAFETY: the caller holds a read lock (this function's contract).
                unsafe { $raw::unlock_shared(self) }
            }
            fn lock_exclusive(&self) {
                $raw::lock_exclusive(self)
            }
            unsafe fn unlock_exclusive(&self) {
                // SAFETY: the caller holds the write lock (this function's contract).
                unsafe { $raw::unlock_exclusive(self) }
            }
        }
    };
}

model_rwlock!(RawRwLock);
model_rwlock!(RawBiasedRwLock);

/// A raw rwlock and the counter it protects; loom's `UnsafeCell` reports any access to the
/// counter that the lock failed to order (a writer alongside a reader or another writer).
pub struct Shared<L> {
    pub lock: L,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what the models check.
unsafe impl<L: Sync> Sync for Shared<L> {}
// SAFETY: as for `Sync`; the lock and a `u32` may move between threads.
unsafe impl<L: Send> Send for Shared<L> {}

impl<L: ModelRwLock> Shared<L> {
    /// An unlocked lock over a counter at 0.
    pub fn new() -> Arc<Self> {
        Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        })
    }

    /// Reads the counter under a read lock.
    pub fn read(&self) -> u32 {
        self.lock.lock_shared();
        let v = self.value();
        // SAFETY: read-locked just above.
        unsafe { self.lock.unlock_shared() };
        v
    }

    /// Adds one to the counter under the write lock.
    pub fn write(&self) {
        self.lock.lock_exclusive();
        self.add(1);
        // SAFETY: write-locked just above.
        unsafe { self.lock.unlock_exclusive() };
    }
}

impl<L> Shared<L> {
    /// The counter; for a thread that holds the lock, shared or exclusive.
    pub fn value(&self) -> u32 {
        // SAFETY: loom runs one thread at a time, and its `UnsafeCell` fails the model on an
        // access the lock did not order before handing out the pointer: an unordered read is
        // reported, never a data race.
        self.data.with(|p| unsafe { *p })
    }

    /// Sets the counter; for a thread that holds the write lock.
    pub fn set(&self, v: u32) {
        // SAFETY: as in `value`: loom checks that the write lock orders this write.
        self.data.with_mut(|p| unsafe { *p = v });
    }

    /// Adds `n` to the counter; for a thread that holds the write lock.
    pub fn add(&self, n: u32) {
        // SAFETY: as in `value`: loom checks that the write lock orders this write.
        self.data.with_mut(|p| unsafe { *p += n });
    }
}
