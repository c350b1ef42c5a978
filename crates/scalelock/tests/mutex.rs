//! The promises of `scalelock::Mutex` and `RawMutex`, one test each.
#![cfg(not(loom))]

mod common;

use common::{bounded, busy};
use lock_api::{RawMutex as _, RawMutexTimed};
use scalelock::{Mutex, RawMutex, ReentrantMutex};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn raw_mutex_is_eight_bytes_and_const() {
    static M: RawMutex = RawMutex::INIT;
    assert_eq!(std::mem::size_of::<RawMutex>(), 8);
    M.lock();
    assert!(M.is_locked());
    // SAFETY: locked just above.
    unsafe { M.unlock() };
    assert!(!M.is_locked());
}

#[test]
fn lock_and_unlock_protect_the_value() {
    let m = Mutex::new(1);
    *m.lock() += 1;
    assert_eq!(*m.lock(), 2);
    assert_eq!(m.into_inner(), 2);
}

#[test]
fn try_lock_fails_while_held() {
    let m = Mutex::new(());
    let g = m.lock();
    assert!(m.try_lock().is_none());
    let m2 = &m;
    std::thread::scope(|s| {
        s.spawn(|| assert!(m2.try_lock().is_none()));
    });
    drop(g);
    assert!(m.try_lock().is_some());
}

#[test]
fn timed_lock_returns_false_on_time() {
    let m = Arc::new(Mutex::new(()));
    let g = m.lock();
    let m2 = Arc::clone(&m);
    let waited = std::thread::spawn(move || {
        let t0 = Instant::now();
        let got = m2.try_lock_for(Duration::from_millis(30)).is_some();
        (got, t0.elapsed())
    })
    .join()
    .unwrap();
    drop(g);
    assert!(!waited.0, "timed lock succeeded while the mutex was held");
    assert!(
        waited.1 >= Duration::from_millis(30),
        "returned early: {:?}",
        waited.1
    );
    assert!(
        waited.1 < Duration::from_secs(3),
        "returned far too late: {:?}",
        waited.1
    );
}

#[test]
fn timed_lock_until_past_deadline_fails_at_once_when_held() {
    let raw = RawMutex::INIT;
    raw.lock();
    assert!(!RawMutexTimed::try_lock_until(&raw, Instant::now()));
    // SAFETY: locked above.
    unsafe { raw.unlock() };
    assert!(RawMutexTimed::try_lock_until(&raw, Instant::now()));
    // SAFETY: acquired just above.
    unsafe { raw.unlock() };
}

#[test]
fn timed_lock_succeeds_when_released_in_time() {
    let m = Arc::new(Mutex::new(0));
    let g = m.lock();
    let m2 = Arc::clone(&m);
    let t = std::thread::spawn(move || {
        m2.try_lock_for(Duration::from_secs(10))
            .map(|mut g| *g += 1)
            .is_some()
    });
    std::thread::sleep(Duration::from_millis(20));
    drop(g);
    assert!(t.join().unwrap());
    assert_eq!(*m.lock(), 1);
}

#[test]
fn reentrant_mutex_reenters_on_the_same_thread() {
    let m = Arc::new(ReentrantMutex::new(7));
    let a = m.lock();
    let b = m.lock();
    assert_eq!(*a + *b, 14);
    let m2 = Arc::clone(&m);
    assert!(std::thread::spawn(move || m2.try_lock().is_none())
        .join()
        .unwrap());
    drop(a);
    drop(b);
    let m3 = Arc::clone(&m);
    assert!(std::thread::spawn(move || m3.try_lock().is_some())
        .join()
        .unwrap());
}

#[test]
fn unlock_fair_hands_the_lock_to_a_sleeper() {
    // The holder releases fairly while a thread waits on the lock. A waiter asleep in the
    // futex by then is handed the lock, and the holder cannot take it back before it; a waiter
    // that has announced itself but is not asleep yet (seen under Miri's scheduler) gets an
    // ordinary release, which the holder may win: that round proves nothing and is tried
    // again. A fair unlock that never hands over fails the test too.
    let raw = Arc::new(RawMutex::INIT);
    let mut handed = false;
    for _round in 0..20 {
        raw.lock();
        let r2 = Arc::clone(&raw);
        let got = Arc::new(AtomicBool::new(false));
        let g2 = Arc::clone(&got);
        let t = std::thread::spawn(move || {
            r2.lock();
            g2.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: locked above.
            unsafe { r2.unlock() };
        });
        // Wait until the other thread has announced its sleep, then give it time to fall asleep.
        let t0 = Instant::now();
        while !raw.is_contended() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "waiter never went to sleep"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(5));
        // SAFETY: locked above.
        unsafe { raw.unlock_fair() };
        if raw.try_lock() {
            // An ordinary release (the waiter was not asleep): it has not had the lock.
            assert!(!got.load(Ordering::SeqCst), "two threads held the lock");
            // SAFETY: locked just above.
            unsafe { raw.unlock() };
            t.join().unwrap();
            continue;
        }
        // Handed over: the holder's next acquisition waits for the waiter's release.
        raw.lock();
        assert!(
            got.load(Ordering::SeqCst),
            "unlock_fair let the releasing thread barge back in"
        );
        // SAFETY: locked just above.
        unsafe { raw.unlock() };
        t.join().unwrap();
        handed = true;
        break;
    }
    assert!(
        handed,
        "no fair unlock in 20 rounds handed the lock to its sleeper"
    );
}

#[test]
fn bump_lets_a_sleeper_run() {
    let m = Arc::new(Mutex::new(0));
    let mut g = m.lock();
    let m2 = Arc::clone(&m);
    let t = std::thread::spawn(move || *m2.lock() += 1);
    let t0 = Instant::now();
    // The waiter announces that it sleeps (CONTENDED) just before it calls futex_wait: a bump
    // in between finds nobody asleep, and then it may take the lock back. So bump whenever the
    // flag is up, until the waiter, asleep by then, has had its turn.
    while *g == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "bump never let the sleeping thread in"
        );
        // SAFETY: reading the raw lock's contention flag only.
        if unsafe { m.raw() }.is_contended() {
            lock_api::MutexGuard::bump(&mut g);
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(*g, 1);
    drop(g);
    t.join().unwrap();
}

/// A counter that is *not* atomic: only mutual exclusion keeps it right.
struct Racy(UnsafeCell<u64>);
// SAFETY: all access goes through the mutex under test.
unsafe impl Sync for Racy {}

fn hammer(threads: usize, iters: u64, hold: u32) {
    let raw = Arc::new(RawMutex::INIT);
    let counter = Arc::new(Racy(UnsafeCell::new(0)));
    let inside = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (raw, counter, inside, barrier) = (
                Arc::clone(&raw),
                Arc::clone(&counter),
                Arc::clone(&inside),
                Arc::clone(&barrier),
            );
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..iters {
                    raw.lock();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::Relaxed),
                        0,
                        "two threads inside"
                    );
                    // SAFETY: the mutex is held.
                    let v = unsafe { *counter.0.get() };
                    busy(hold);
                    // SAFETY: the mutex is held.
                    unsafe { *counter.0.get() = v + 1 };
                    inside.fetch_sub(1, Ordering::Relaxed);
                    // SAFETY: locked above.
                    unsafe { raw.unlock() };
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // SAFETY: all threads joined.
    assert_eq!(unsafe { *counter.0.get() }, threads as u64 * iters);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn stress_256_threads_count_exactly() {
    bounded(
        "256 threads x 2000 increments",
        Duration::from_secs(60),
        || hammer(256, 2_000, 0),
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn stress_64_threads_with_longer_holds_count_exactly() {
    bounded("64 threads, 1 µs holds", Duration::from_secs(60), || {
        hammer(64, 2_000, 300)
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn stress_timed_and_plain_lockers_mixed_lose_no_wakeup() {
    // Timed waiters that give up after sleeping must pass on any wake-up they consumed, or the
    // plain lockers would sleep forever.
    bounded("timed + plain lockers", Duration::from_secs(60), || {
        let m = Arc::new(Mutex::new(0u64));
        let done = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..64)
            .map(|i| {
                let (m, done) = (Arc::clone(&m), Arc::clone(&done));
                std::thread::spawn(move || {
                    let mut mine = 0;
                    for _ in 0..500 {
                        if i % 2 == 0 {
                            if let Some(mut g) = m.try_lock_for(Duration::from_micros(50)) {
                                *g += 1;
                                mine += 1;
                            }
                        } else {
                            let mut g = m.lock();
                            *g += 1;
                            busy(200);
                            mine += 1;
                        }
                    }
                    done.fetch_add(mine, Ordering::Relaxed);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), done.load(Ordering::Relaxed));
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn stress_every_thread_progresses_under_oversubscription() {
    // Bounded unfairness: with 64 threads on a few cores hammering one lock, starvation mode
    // hands the lock to long waiters, so every thread gets it, repeatedly, within the run.
    every_thread_progresses(64, 100);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "stress test: too many threads and iterations for the interpreter; the smaller tests run the same paths under Miri"
)]
fn stress_waiters_that_doze_behind_a_lock_retaken_at_once_still_progress() {
    // Three threads re-take the lock with nothing between: a waiter's sleep is refused (the lock
    // is released and taken again before the kernel looks) and it dozes, leaving the lock's word
    // alone; only starvation mode brings a dozer in. Every thread must still get the lock,
    // repeatedly, and the count must be exact.
    every_thread_progresses(3, 0);
    bounded(
        "3 threads, nothing between",
        Duration::from_secs(60),
        || hammer(3, 200_000, 0),
    );
}

/// `threads` threads take one mutex in a loop, holding it `hold` busy steps, until each has
/// taken it 10 times and at least 3 s of the process's CPU time went by (6 s at most); fails
/// if one did not. The run is measured in the CPU time the process gets, not in wall-clock
/// time: a test process that other work starves of CPU (or that is stopped) must not read as
/// an unfair lock.
fn every_thread_progresses(threads: usize, hold: u32) {
    bounded(
        "fairness under oversubscription",
        Duration::from_secs(60),
        move || {
            let m = Arc::new(Mutex::new(()));
            let stop = Arc::new(AtomicBool::new(false));
            let counts: Arc<Vec<AtomicU64>> =
                Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let (m, stop, counts) =
                        (Arc::clone(&m), Arc::clone(&stop), Arc::clone(&counts));
                    std::thread::spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            let g = m.lock();
                            busy(hold);
                            drop(g);
                            counts[i].fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            let least = || {
                counts
                    .iter()
                    .map(|c| c.load(Ordering::Relaxed))
                    .min()
                    .unwrap()
            };
            // At least 3 s of CPU (about 1.5 s on two cores: the run must last, for starvation
            // mode to matter), then until every thread got its 10 acquisitions, 6 s at most.
            let cpu0 = process_cpu();
            let budget = Duration::from_secs(6);
            loop {
                let used = process_cpu() - cpu0;
                if used >= budget || (used >= Duration::from_secs(3) && least() >= 10) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
            for h in handles {
                h.join().unwrap();
            }
            let min = least();
            assert!(
                min >= 10,
                "a thread acquired the lock only {min} times in {budget:?} of the process's CPU time"
            );
        },
    );
}

/// CPU time this process has used so far (all its threads).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`;
    // CLOCK_PROCESS_CPUTIME_ID is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
