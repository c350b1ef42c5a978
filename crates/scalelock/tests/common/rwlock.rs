//! What every scalelock rwlock promises ([`RwLock`], [`BiasedRwLock`]), written once over
//! [`TestRwLock`]. tests/rwlock.rs and tests/biased.rs each run every check here for their
//! lock ([`shared_rwlock_tests`] makes one test per check, named for what it checks), with the
//! mix of readers and writers that suits the lock. Stress checks run far more threads than
//! cores and are bounded: a hang fails the test with a message.

use super::{bounded, on_threads};
use lock_api::{
    RawRwLockRecursive, RawRwLockUpgrade, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
use scalelock::{BiasedRwLock, RawBiasedRwLock, RawRwLock, RwLock};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

/// A scalelock rwlock holding a `T`, through its own acquisition methods (the wrapper's,
/// which lockstat tracks), with lock_api's guards.
pub trait TestRwLock<T: Send + Sync + 'static>: Send + Sync + Sized + 'static {
    /// The raw lock under it.
    type Raw: RawRwLockUpgrade + RawRwLockRecursive + 'static;
    /// An unlocked lock holding `value`.
    fn new(value: T) -> Self;
    /// `read`.
    fn read(&self) -> RwLockReadGuard<'_, Self::Raw, T>;
    /// `read_recursive`.
    fn read_recursive(&self) -> RwLockReadGuard<'_, Self::Raw, T>;
    /// `upgradable_read`.
    fn upgradable_read(&self) -> RwLockUpgradableReadGuard<'_, Self::Raw, T>;
    /// `write`.
    fn write(&self) -> RwLockWriteGuard<'_, Self::Raw, T>;
}

macro_rules! test_rwlock {
    ($lock:ident, $raw:ident) => {
        impl<T: Send + Sync + 'static> TestRwLock<T> for $lock<T> {
            type Raw = $raw;
            fn new(value: T) -> Self {
                $lock::new(value)
            }
            fn read(&self) -> RwLockReadGuard<'_, $raw, T> {
                $lock::read(self)
            }
            fn read_recursive(&self) -> RwLockReadGuard<'_, $raw, T> {
                $lock::read_recursive(self)
            }
            fn upgradable_read(&self) -> RwLockUpgradableReadGuard<'_, $raw, T> {
                $lock::upgradable_read(self)
            }
            fn write(&self) -> RwLockWriteGuard<'_, $raw, T> {
                $lock::write(self)
            }
        }
    };
}

test_rwlock!(RwLock, RawRwLock);
test_rwlock!(BiasedRwLock, RawBiasedRwLock);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Defines one `#[test]` per check of this module for `$lock`, in the test file that invokes
/// it: `writes` picks the writes of [`writers_see_exclusive_access`] (`|thread, round| ..`),
/// `snapshots` is `(threads, rounds, writer_every)` of [`readers_see_consistent_snapshots`],
/// `reader_spins` the length of a read in
/// [`writers_complete_under_a_continuous_stream_of_readers`].
#[allow(unused_macros)] // every test file includes `common`; two use this
macro_rules! shared_rwlock_tests {
    (
        lock: $lock:ident,
        writes: $writes:expr,
        snapshots: ($threads:expr, $rounds:expr, $writer_every:expr),
        reader_spins: $spins:expr $(,)?
    ) => {
        $crate::common::rwlock::shared_rwlock_tests! { @each $lock;
            writers_see_exclusive_access<()>(128, 200, $writes),
            readers_see_consistent_snapshots<[u64; 8]>($threads, $rounds, $writer_every),
            writers_complete_under_a_continuous_stream_of_readers<u64>($spins),
            readers_complete_under_a_continuous_stream_of_writers<u64>(),
            nested_read_recursive_completes_under_waiting_writers<u64>(),
            upgrades_lose_no_update<u64>(),
        }
    };
    (@each $lock:ident; $($check:ident<$t:ty>($($arg:expr),*),)*) => {
        $(
            #[test]
            #[cfg_attr(
                miri,
                ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
            )]
            fn $check() {
                $crate::common::rwlock::$check::<$lock<$t>>($($arg),*);
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use shared_rwlock_tests;

/// Who is inside a lock: checks that a writer is always alone and that readers never meet one.
#[derive(Default)]
pub struct Occupancy {
    writers: AtomicUsize,
    readers: AtomicUsize,
}

impl Occupancy {
    /// Call while holding the write lock: checks it is alone in there while `during` runs.
    pub fn writing(&self, during: impl FnOnce()) {
        assert_eq!(
            self.writers.fetch_add(1, Ordering::SeqCst),
            0,
            "two writers"
        );
        assert_eq!(
            self.readers.load(Ordering::SeqCst),
            0,
            "writer with readers"
        );
        during();
        self.writers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Call while holding a read lock: checks no writer is in.
    pub fn reading(&self) {
        self.readers.fetch_add(1, Ordering::SeqCst);
        assert_eq!(self.writers.load(Ordering::SeqCst), 0, "reader with writer");
        self.readers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `threads` threads each take the lock `rounds` times, thread `i` in round `j` writing when
/// `writes(i, j)`, else reading: a writer is always alone, readers never meet a writer.
pub fn writers_see_exclusive_access<L: TestRwLock<()>>(
    threads: usize,
    rounds: usize,
    writes: fn(usize, usize) -> bool,
) {
    bounded(
        &format!("{threads} threads mixing reads and writes"),
        secs(30),
        move || {
            let lock = L::new(());
            let inside = Occupancy::default();
            on_threads(threads, |i| {
                for j in 0..rounds {
                    if writes(i, j) {
                        let _w = lock.write();
                        inside.writing(std::hint::spin_loop);
                    } else {
                        let _r = lock.read();
                        inside.reading();
                    }
                }
            });
        },
    );
}

/// `threads` threads, one in `writer_every` a writer, each take the lock `rounds` times;
/// writers set all eight fields one by one, readers must never see them differ.
pub fn readers_see_consistent_snapshots<L: TestRwLock<[u64; 8]>>(
    threads: usize,
    rounds: u64,
    writer_every: usize,
) {
    let writers = threads.div_ceil(writer_every) as u64;
    bounded(
        &format!("{threads} threads, one in {writer_every} a writer, on an eight-field invariant"),
        secs(30),
        move || {
            let lock = L::new([0u64; 8]);
            on_threads(threads, |i| {
                for _ in 0..rounds {
                    if i % writer_every == 0 {
                        let mut w = lock.write();
                        let next = w[0] + 1;
                        for slot in w.iter_mut() {
                            *slot = next;
                            std::hint::spin_loop();
                        }
                    } else {
                        let r = lock.read();
                        assert!(r.iter().all(|&v| v == r[0]), "torn read: {:?}", *r);
                    }
                }
            });
            assert_eq!(lock.read()[7], writers * rounds);
        },
    );
}

/// Runs `f` while `threads` threads run `work` over and over, until `f` returns.
pub fn while_threads_churn(threads: usize, work: impl Fn() + Sync, f: impl FnOnce()) {
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    work();
                }
            });
        }
        // Stops the churn even when `f` fails, so that the failure is reported, not a hang.
        let stop_on_exit = StopOnDrop(&stop);
        f();
        drop(stop_on_exit);
    });
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A writer gets through 20 times while 64 readers keep the lock read-held, each read lasting
/// `spins` spin-loop hints (overlapping readers: never a moment with zero readers unless
/// writers get priority).
pub fn writers_complete_under_a_continuous_stream_of_readers<L: TestRwLock<u64>>(spins: u32) {
    bounded(
        "a writer under 64 continuous readers",
        secs(60),
        move || {
            let lock = L::new(0u64);
            let read = || {
                let _r = lock.read();
                for _ in 0..spins {
                    std::hint::spin_loop();
                }
            };
            while_threads_churn(64, read, || {
                thread::sleep(Duration::from_millis(20));
                // Each write waits for the readers inside to drain, some of them preempted (64
                // busy threads on a few cores): this checks progress, not speed.
                for _ in 0..20 {
                    *lock.write() += 1;
                }
            });
            assert_eq!(*lock.read(), 20);
        },
    );
}

/// A reader gets through 200 times while 64 writers write without pause, and sees the count
/// only grow.
pub fn readers_complete_under_a_continuous_stream_of_writers<L: TestRwLock<u64>>() {
    bounded("a reader under 64 continuous writers", secs(30), || {
        let lock = L::new(0u64);
        while_threads_churn(
            64,
            || *lock.write() += 1,
            || {
                thread::sleep(Duration::from_millis(20));
                let mut last = 0;
                for _ in 0..200 {
                    let v = *lock.read();
                    assert!(v >= last);
                    last = v;
                }
            },
        );
    });
}

/// 64 readers nest two `read_recursive` in a `read` while 16 writers wait for (or revoke from)
/// them: the nested reads must not wait for the writers.
pub fn nested_read_recursive_completes_under_waiting_writers<L: TestRwLock<u64>>() {
    bounded(
        "64 nested recursive readers against 16 writers",
        secs(30),
        || {
            let lock = L::new(0u64);
            on_threads(80, |i| {
                for _ in 0..100 {
                    if i < 16 {
                        *lock.write() += 1;
                    } else {
                        let outer = lock.read();
                        // A writer may be waiting now; the nested reads must not wait for it. (A
                        // plain `read` here would be a bug: debug builds panic on it.)
                        thread::yield_now();
                        let inner = lock.read_recursive();
                        let innermost = lock.read_recursive();
                        assert_eq!(*outer, *inner);
                        assert_eq!(*inner, *innermost);
                    }
                }
            });
            assert_eq!(*lock.read(), 1600);
        },
    );
}

/// 32 upgraders, 32 writers and 32 readers: no writer slips in between an upgradable read
/// and its upgrade, and no increment is lost.
pub fn upgrades_lose_no_update<L: TestRwLock<u64>>() {
    bounded("upgraders, readers and writers", secs(30), || {
        let lock = L::new(0u64);
        on_threads(96, |i| {
            for _ in 0..100 {
                match i % 3 {
                    0 => {
                        let u = lock.upgradable_read();
                        let before = *u;
                        let mut w = RwLockUpgradableReadGuard::upgrade(u);
                        assert_eq!(*w, before, "a writer slipped in during the upgrade");
                        *w += 1;
                    }
                    1 => *lock.write() += 1,
                    _ => drop(lock.read()),
                }
            }
        });
        assert_eq!(*lock.read(), 64 * 100);
    });
}
