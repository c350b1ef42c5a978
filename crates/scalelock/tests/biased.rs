//! `BiasedRwLock`'s promises, one test each. Stress tests run 64-256 threads and are bounded: a
//! hang fails the test with a message.
#![cfg(not(loom))]

mod common;

use common::rwlock::{self, Occupancy};
use common::{bounded, on_threads};
use lock_api::{
    RawRwLock as _, RawRwLockRecursiveTimed, RawRwLockUpgradeDowngrade, RawRwLockUpgradeTimed,
};
use scalelock::{
    BiasedRwLock, BiasedRwLockReadGuard, BiasedRwLockUpgradableReadGuard, BiasedRwLockWriteGuard,
    RawBiasedRwLock,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const RAW_SIZE: usize = std::mem::size_of::<RawBiasedRwLock>();

fn bytes_of(raw: &RawBiasedRwLock) -> [u8; RAW_SIZE] {
    // SAFETY: reads the bytes of a live lock; no other thread uses this lock while the test
    // looks, so the plain read does not race with an atomic write.
    unsafe { std::ptr::read(raw as *const RawBiasedRwLock as *const [u8; RAW_SIZE]) }
}

rwlock::shared_rwlock_tests! {
    lock: BiasedRwLock,
    // One acquisition in sixteen a write: reads are what the bias is for.
    writes: |i, j| (i * 7 + j) % 16 == 0,
    // 192 readers and 64 writers.
    snapshots: (256, 200, 4),
    reader_spins: 50,
}

#[test]
fn lock_is_three_lines_with_the_data_on_the_lock_words_and_const_constructible() {
    static LOCK: BiasedRwLock<u32> = BiasedRwLock::const_new(RawBiasedRwLock::INIT, 3);
    assert_eq!(*LOCK.read(), 3);
    // Bias line, bookkeeping line, then the 20-byte lock word, which the data follows.
    assert_eq!(RAW_SIZE, 152);
    assert_eq!(std::mem::align_of::<BiasedRwLock<u32>>(), 64);
    for lock in [
        &LOCK,
        &BiasedRwLock::new(3),
        &*Box::new(BiasedRwLock::new(3)),
    ] {
        // SAFETY: only the raw lock's address is looked at.
        let raw = unsafe { lock.raw() } as *const RawBiasedRwLock as usize;
        let data = &*lock.read() as *const u32 as usize;
        assert_eq!(raw % 64, 0, "the raw lock starts a cache line");
        assert_eq!(
            data,
            raw + RAW_SIZE,
            "lock_api puts the data right after the raw lock"
        );
        assert_eq!(
            data / 64,
            (raw + 128) / 64,
            "the data shares the lock word's line"
        );
    }
}

#[test]
fn implements_rwlock_timed_downgrade_recursive_and_upgrade() {
    fn all<R: RawRwLockUpgradeTimed + RawRwLockRecursiveTimed + RawRwLockUpgradeDowngrade>() {}
    all::<RawBiasedRwLock>();
    let lock = BiasedRwLock::new(0);
    let w = lock.try_write_for(Duration::from_millis(10)).unwrap();
    let r = BiasedRwLockWriteGuard::downgrade(w);
    assert!(lock.try_write().is_none());
    let r2 = lock
        .try_read_recursive_for(Duration::from_millis(1))
        .unwrap();
    drop((r, r2));
    let u = lock.upgradable_read();
    let w = BiasedRwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(10))
        .ok()
        .unwrap();
    let u = BiasedRwLockWriteGuard::downgrade_to_upgradable(w);
    let r = BiasedRwLockUpgradableReadGuard::downgrade(u);
    drop(r);
    assert!(!lock.is_locked());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "compares every byte of the lock, padding included: Miri reports reading the uninitialised padding as UB"
)]
fn biased_reads_leave_the_lock_object_untouched() {
    let lock = BiasedRwLock::new(0u64);
    // SAFETY: only the raw lock's bytes and state are looked at.
    let raw = unsafe { lock.raw() };
    assert!(raw.is_biased());
    let before = bytes_of(raw);
    let g = lock.read();
    let g2 = lock.read();
    assert_eq!(
        bytes_of(raw),
        before,
        "a biased read wrote the lock's cache line"
    );
    assert!(
        lock.try_write().is_none(),
        "the writer must see the deferred readers"
    );
    drop((g, g2));
    assert!(lock.try_write().is_some());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn exclusive_access_holds_while_rare_writers_turn_the_bias_back_on() {
    // Rare writes: the bias pays, so each writer revokes it and turns it back on as it leaves,
    // and readers that arrive meanwhile wait for the bias by polling it. 64 threads on few
    // cores: writers and pollers are preempted in every state.
    bounded(
        "64 threads, rare writes, bias re-enabled by writers",
        Duration::from_secs(30),
        || {
            let lock = BiasedRwLock::new(());
            let inside = Occupancy::default();
            let rebiased = AtomicUsize::new(0);
            on_threads(64, |i| {
                for j in 0..4000 {
                    if (i * 131 + j) % 1000 == 0 {
                        let w = lock.write();
                        inside.writing(|| {});
                        drop(w);
                        // SAFETY: only the raw lock's state is queried.
                        if unsafe { lock.raw() }.is_biased() {
                            rebiased.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        let _r = lock.read();
                        inside.reading();
                    }
                }
            });
            assert!(
                rebiased.load(Ordering::Relaxed) > 0,
                "no writer ever left the bias on"
            );
        },
    );
}

#[test]
fn bias_switches_off_for_writes_and_comes_back_when_they_stop() {
    bounded(
        "bias re-enabled after writes stop",
        Duration::from_secs(10),
        || {
            let lock = BiasedRwLock::new(0);
            // SAFETY: only the raw lock's state is queried.
            let raw = unsafe { lock.raw() };
            // Back-to-back writes: revocations would take most of the time, and nobody reads
            // enough to gain, so within a few dozen of them the bias stays off after the writer
            // leaves (the verdict is a moving average, and one revocation in 8 is timed).
            for i in 0..200 {
                *lock.write() += 1;
                assert!(
                    i < 64 || !raw.is_biased(),
                    "the bias still comes back after write {i} of a burst"
                );
                drop(lock.read());
            }
            let t0 = Instant::now();
            while !raw.is_biased() {
                drop(lock.read());
                assert!(
                    t0.elapsed() < Duration::from_secs(5),
                    "bias never came back"
                );
            }
        },
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn a_rare_writer_turns_the_bias_back_on_as_it_leaves() {
    bounded("rare writes keep the bias", Duration::from_secs(10), || {
        let lock = BiasedRwLock::new(0);
        // SAFETY: only the raw lock's state is queried.
        let raw = unsafe { lock.raw() };
        let holding = Barrier::new(2);
        thread::scope(|s| {
            // A second reader shares the lock: it holds a read through the table as each write
            // begins, and leaves once the writer has revoked the bias, so every revocation
            // finds a reader inside (the bias pays only where readers share the lock).
            s.spawn(|| {
                for _ in 0..40 {
                    let r = lock.read();
                    holding.wait();
                    while raw.is_biased() {
                        std::hint::spin_loop();
                    }
                    drop(r);
                    // Not reading again before the writer has left (and looked at the bias).
                    holding.wait();
                }
            });
            for i in 0..40 {
                // Long enough between writes that a revocation is a small share of the time,
                // and enough reads through the table that the bias pays (a revocation scans
                // one row per CPU, microseconds on a big machine).
                thread::sleep(Duration::from_millis(1));
                for _ in 0..10_000 {
                    drop(lock.read());
                }
                holding.wait();
                let mut g = lock.write();
                assert!(
                    !raw.is_biased(),
                    "write {i}: the bias is off while a writer holds"
                );
                *g += 1;
                drop(g);
                assert!(raw.is_biased(), "write {i}: the writer left the bias off");
                holding.wait();
            }
        });
        assert_eq!(*lock.read(), 40);
    });
}

#[test]
fn a_bias_paused_for_a_writer_that_gives_up_comes_back() {
    bounded(
        "paused bias handed to a timed writer",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(BiasedRwLock::new(0));
            let w = lock.write(); // revokes a bias that pays: paused until this writer leaves
                                  // A reader queues behind the writer on the underlying lock, and will hold its read lock
                                  // for a while once it gets it.
            let reader = {
                let lock = lock.clone();
                thread::spawn(move || {
                    let g = lock.read();
                    thread::sleep(Duration::from_millis(600));
                    *g
                })
            };
            // Margins of tens of ms on every step: each must have happened before the next.
            thread::sleep(Duration::from_millis(100));
            // A timed writer waits too, and gives up while the reader holds the lock.
            let timed = {
                let lock = lock.clone();
                thread::spawn(move || lock.try_write_for(Duration::from_millis(200)).is_none())
            };
            thread::sleep(Duration::from_millis(50));
            // The writer leaves with a writer waiting: it hands the paused bias over to it, and
            // the reader gets its turn first.
            drop(w);
            assert!(
                timed.join().unwrap(),
                "the timed writer got the lock past the reader"
            );
            assert_eq!(reader.join().unwrap(), 0);
            // Nobody writes any more: a read brings the bias back (the writer it was paused for is
            // gone).
            drop(lock.read());
            // SAFETY: only the raw lock's state is queried.
            assert!(unsafe { lock.raw() }.is_biased(), "the bias stays paused");
        },
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "the bias heuristics weigh measured nanoseconds, which Miri's virtual clock does not give"
)]
fn the_bias_switches_off_when_no_reader_gains_from_it() {
    bounded("a writer alone", Duration::from_secs(10), || {
        let lock = BiasedRwLock::new(0);
        // SAFETY: only the raw lock's state is queried.
        let raw = unsafe { lock.raw() };
        // Rare writes, few reads, no other thread: a revocation per write buys nothing.
        for _ in 0..64 {
            thread::sleep(Duration::from_micros(200));
            drop(lock.read());
            *lock.write() += 1;
        }
        assert!(
            !raw.is_biased(),
            "the bias stays on although no reader shares the lock"
        );
        // A reader on another thread that keeps reading while writes continue brings it back.
        let lock = Arc::new(lock);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (lock, stop) = (lock.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    drop(lock.read());
                }
            })
        };
        let t0 = Instant::now();
        // SAFETY: only the raw lock's state is queried.
        while !unsafe { lock.raw() }.is_biased() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the bias never came back for a busy reader thread"
            );
            thread::sleep(Duration::from_micros(200));
            *lock.write() += 1;
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    });
}

#[test]
fn timed_write_gives_up_while_deferred_readers_hold_and_the_lock_stays_usable() {
    bounded(
        "timed writer vs deferred reader",
        Duration::from_secs(10),
        || {
            let lock = Arc::new(BiasedRwLock::new(0));
            let holding = Arc::new(Barrier::new(2));
            let release = Arc::new(Barrier::new(2));
            let (l2, h2, r2) = (lock.clone(), holding.clone(), release.clone());
            let reader = thread::spawn(move || {
                let g = l2.read();
                h2.wait();
                r2.wait();
                drop(g);
            });
            holding.wait();
            assert!(lock.try_write().is_none());
            assert!(lock.try_write_for(Duration::from_millis(20)).is_none());
            // The bias is back on and readers still enter while the first reader holds.
            drop(lock.read());
            release.wait();
            reader.join().unwrap();
            *lock.write() += 1;
            assert_eq!(*lock.read(), 1);
        },
    );
}

#[test]
fn more_read_locks_than_the_thread_record_fall_back_to_the_lock() {
    let locks: Vec<BiasedRwLock<usize>> = (0..40).map(BiasedRwLock::new).collect();
    let guards: Vec<BiasedRwLockReadGuard<'_, usize>> = locks.iter().map(|l| l.read()).collect();
    for (i, l) in locks.iter().enumerate() {
        assert!(l.try_write().is_none(), "lock {i} is read-held");
    }
    // Release in a different order from acquisition.
    let mut guards = guards;
    while !guards.is_empty() {
        let g = guards.remove(guards.len() / 2);
        drop(g);
    }
    for (i, l) in locks.iter().enumerate() {
        *l.write() += 1;
        assert_eq!(*l.read(), i + 1);
    }
}

#[test]
fn nested_recursive_reads_count_per_lock_in_any_entry_and_release_in_any_order() {
    // `a` takes the thread's first entry (the inline nesting path), `b` the next one (the
    // scan); each is nested twice, and the guards go in an order unrelated to how they came.
    let a = BiasedRwLock::new(1);
    let b = BiasedRwLock::new(2);
    let mut guards = vec![
        a.read(),
        b.read(),
        a.read_recursive(),
        b.read_recursive(),
        a.read_recursive(),
        b.read_recursive(),
    ];
    for order in [4, 1, 0, 2] {
        drop(guards.remove(order));
        assert!(a.try_write().is_none(), "a is still read-held");
        assert!(b.try_write().is_none(), "b is still read-held");
    }
    // One read of each is left.
    assert_eq!(guards.iter().map(|g| **g).sum::<i32>(), 3);
    let last_of_a = guards.iter().position(|g| **g == 1).unwrap();
    drop(guards.remove(last_of_a));
    *a.write() += 10;
    assert!(b.try_write().is_none(), "b is still read-held");
    drop(guards);
    *b.write() += 10;
    // The thread's record is empty again: new reads and nesting start afresh.
    let g = b.read();
    let n = b.read_recursive();
    assert_eq!(*g + *n, 24);
    assert!(a.try_write().is_some());
    drop((g, n));
    assert_eq!(*a.read() + *b.read(), 23);
}
