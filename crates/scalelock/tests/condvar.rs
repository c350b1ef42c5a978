//! The promises of `scalelock::Condvar`, one test each.
#![cfg(not(loom))]

mod common;

use common::bounded;
use scalelock::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn notify_one_wakes_a_waiter() {
    bounded("notify_one", Duration::from_secs(20), || {
        let p = Arc::new((Mutex::new(false), Condvar::new()));
        let q = Arc::clone(&p);
        let t = std::thread::spawn(move || {
            let mut g = q.0.lock();
            q.1.wait_while(&mut g, |ready| !*ready);
        });
        std::thread::sleep(Duration::from_millis(10));
        *p.0.lock() = true;
        p.1.notify_one();
        t.join().unwrap();
    });
}

#[test]
fn notify_without_waiters_is_a_no_op() {
    let cv = Condvar::new();
    assert!(!cv.notify_one());
    assert_eq!(cv.notify_all(), 0);
}

#[test]
fn wait_for_times_out_on_time() {
    let m = Mutex::new(());
    let cv = Condvar::new();
    let mut g = m.lock();
    let t0 = Instant::now();
    assert!(cv.wait_for(&mut g, Duration::from_millis(25)).timed_out());
    let e = t0.elapsed();
    assert!(
        e >= Duration::from_millis(25) && e < Duration::from_secs(3),
        "{e:?}"
    );
    // The mutex is held again after the wait.
    assert!(m.try_lock().is_none());
}

#[test]
fn wait_until_times_out_on_time() {
    let m = Mutex::new(());
    let cv = Condvar::new();
    let mut g = m.lock();
    let until = Instant::now() + Duration::from_millis(25);
    assert!(cv.wait_until(&mut g, until).timed_out());
    assert!(Instant::now() >= until);
}

#[test]
fn wait_while_for_reports_condition_still_true_on_timeout() {
    let m = Mutex::new(0);
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv
        .wait_while_for(&mut g, |v| *v == 0, Duration::from_millis(5))
        .timed_out());
}

#[test]
fn notify_all_wakes_every_waiter() {
    bounded("notify_all wakes all", Duration::from_secs(30), || {
        let p = Arc::new((Mutex::new(0u32), Condvar::new(), AtomicUsize::new(0)));
        let waiters = 48;
        let handles: Vec<_> = (0..waiters)
            .map(|_| {
                let q = Arc::clone(&p);
                std::thread::spawn(move || {
                    let mut g = q.0.lock();
                    q.2.fetch_add(1, Ordering::SeqCst);
                    q.1.wait_while(&mut g, |gen| *gen == 0);
                })
            })
            .collect();
        while p.2.load(Ordering::SeqCst) < waiters {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Every waiter has registered (and released the mutex inside wait).
        let mut g = p.0.lock();
        *g = 1;
        p.1.notify_all();
        drop(g);
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[test]
fn notify_all_requeued_waiters_each_get_the_mutex() {
    // Waiters requeued onto the mutex must all come through even when each holds it a while.
    bounded("requeued waiters", Duration::from_secs(30), || {
        let p = Arc::new((Mutex::new((false, 0u32)), Condvar::new()));
        let n = 32;
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let q = Arc::clone(&p);
                std::thread::spawn(move || {
                    let mut g = q.0.lock();
                    q.1.wait_while(&mut g, |s| !s.0);
                    g.1 += 1;
                    std::thread::sleep(Duration::from_micros(200));
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        p.0.lock().0 = true;
        p.1.notify_all();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(p.0.lock().1, n);
    });
}

#[test]
fn a_condvar_used_with_two_mutexes_in_turn_still_works() {
    bounded("two mutexes", Duration::from_secs(20), || {
        let cv = Arc::new(Condvar::new());
        for _ in 0..2 {
            let m = Arc::new(Mutex::new(false));
            let (cv2, m2) = (Arc::clone(&cv), Arc::clone(&m));
            let t = std::thread::spawn(move || {
                let mut g = m2.lock();
                cv2.wait_while(&mut g, |b| !*b);
            });
            std::thread::sleep(Duration::from_millis(10));
            *m.lock() = true;
            cv.notify_all();
            t.join().unwrap();
        }
    });
}

#[test]
fn stress_producers_and_consumers_lose_no_item_and_no_wakeup() {
    bounded("producer/consumer 64+64", Duration::from_secs(60), || {
        struct Queue {
            items: Mutex<(VecDeque<u64>, usize)>,
            not_empty: Condvar,
            not_full: Condvar,
        }
        const PRODUCERS: u64 = 64;
        const CONSUMERS: usize = 64;
        const PER_PRODUCER: u64 = 1_000;
        const CAP: usize = 16;
        let q = Arc::new(Queue {
            items: Mutex::new((VecDeque::new(), 0)),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        });
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for i in 0..PER_PRODUCER {
                        let mut g = q.items.lock();
                        q.not_full.wait_while(&mut g, |s| s.0.len() >= CAP);
                        g.0.push_back(p * PER_PRODUCER + i);
                        drop(g);
                        q.not_empty.notify_one();
                    }
                })
            })
            .collect();
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    let (mut sum, mut n) = (0u64, 0u64);
                    loop {
                        let mut g = q.items.lock();
                        q.not_empty
                            .wait_while(&mut g, |s| s.0.is_empty() && s.1 == 0);
                        match g.0.pop_front() {
                            Some(v) => {
                                drop(g);
                                q.not_full.notify_one();
                                sum += v;
                                n += 1;
                            }
                            None => return (sum, n), // closed and drained
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        q.items.lock().1 = 1; // close
        q.not_empty.notify_all();
        let (mut sum, mut n) = (0u64, 0u64);
        for c in consumers {
            let (s, k) = c.join().unwrap();
            sum += s;
            n += k;
        }
        let total = PRODUCERS * PER_PRODUCER;
        assert_eq!(n, total, "items lost or duplicated");
        assert_eq!(sum, total * (total - 1) / 2);
    });
}
