//! Lockstat while locks come and go: many threads (more than the machine's CPUs) create C
//! locks, record acquisitions and waits on them, and retire them (`raw::destroyed`), while
//! another thread reads reports, over more locks than the table holds. Every event is counted
//! once, in a live lock's row or in its first user's `(destroyed)` row, and nothing is dropped.
//! The test fills the process-wide table, so it runs in a process of its own (its own test
//! file) and alone in it.
#![cfg(all(not(loom), feature = "lockstat"))]

use scalelock::stats::{self, raw, Site, Wait, DESTROYED_LOCKS};
use std::sync::atomic::{AtomicBool, Ordering};

const THREADS: usize = 16;
/// Locks each thread creates and destroys (all together, with two entries each, its totals and
/// one call site, four times the table's 16384 entries).
const LOCKS_PER_THREAD: usize = 2_000;
/// Acquisitions per lock.
const ACQUIRED: usize = 3;
/// The first users: each lock is first used by one of these code addresses.
const FIRST_USERS: [usize; 4] = [0x4_1000, 0x4_2000, 0x4_3000, 0x4_4000];
/// Where every wait is recorded.
const CALLER: usize = 0x4_9000;

#[test]
fn every_event_of_locks_destroyed_under_load_is_counted_once() {
    stats::enable();
    stats::reset();
    let stop = AtomicBool::new(false);
    let wait = Wait {
        wait_ns: 1_000,
        ..Default::default()
    };
    std::thread::scope(|s| {
        // A reader of reports all along: it must never see more than was recorded.
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let r = stats::report();
                let acquired: u64 = r.locks.iter().map(|l| l.counters.acquisitions).sum();
                assert!(acquired <= (THREADS * LOCKS_PER_THREAD * ACQUIRED) as u64);
                std::thread::yield_now();
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    for i in 0..LOCKS_PER_THREAD {
                        // A new address for every lock: the table holds each one's entries
                        // only until it is destroyed, and reuses them.
                        let lock = 0x100_0000 + 64 * (t * LOCKS_PER_THREAD + i);
                        let first = FIRST_USERS[(t + i) % FIRST_USERS.len()];
                        for _ in 0..ACQUIRED {
                            raw::acquired_by(lock, first);
                        }
                        raw::waited(lock, CALLER, &wait);
                        raw::destroyed(lock);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let r = stats::report();
    stats::disable();

    assert_eq!(r.dropped, 0, "nothing lost");
    let all = (THREADS * LOCKS_PER_THREAD) as u64;
    let acquisitions: u64 = r.locks.iter().map(|l| l.counters.acquisitions).sum();
    assert_eq!(
        acquisitions,
        all * ACQUIRED as u64,
        "every acquisition once"
    );
    let waits: u64 = r.locks.iter().map(|l| l.counters.contended).sum();
    assert_eq!(waits, all, "every wait once");
    // Every lock was destroyed: only the rows of the destroyed locks remain, one per first
    // user, with the waits at their call site.
    for l in &r.locks {
        assert_eq!(l.lock.name, Some(DESTROYED_LOCKS), "{:?}", l.lock);
    }
    for first in FIRST_USERS {
        let row = r
            .locks
            .iter()
            .find(|l| l.lock.created == Some(Site::Address(first)))
            .unwrap_or_else(|| panic!("no row of {first:#x}"));
        assert_eq!(row.counters.acquisitions, all / 4 * ACQUIRED as u64);
        let site = r
            .sites
            .iter()
            .find(|s| s.lock == row.lock && s.site == Site::Address(CALLER))
            .expect("the call site's row");
        assert_eq!(site.counters.contended, all / 4);
        assert_eq!(site.counters.wait_ns, all / 4 * 1_000);
    }
}
