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
fn a_condvar_is_four_words() {
    // The documented size (parking_lot's is one word): queue head and tail, the count, and the
    // internal lock.
    assert_eq!(
        std::mem::size_of::<Condvar>(),
        4 * std::mem::size_of::<usize>()
    );
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
        let waiters = if cfg!(miri) { 4 } else { 48 };
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
        let n = if cfg!(miri) { 4 } else { 32 };
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

/// Starts `n` threads that each count themselves in under the mutex and then wait (with
/// `wait_while` on the flag). Returns once all `n` are counted: from then on each is inside
/// `wait`, though some may not be asleep yet.
fn start_waiters(
    p: &Arc<(Mutex<(bool, usize)>, Condvar)>,
    n: usize,
) -> Vec<std::thread::JoinHandle<()>> {
    let handles = (0..n)
        .map(|_| {
            let q = Arc::clone(p);
            std::thread::spawn(move || {
                let mut g = q.0.lock();
                g.1 += 1;
                q.1.wait_while(&mut g, |s| !s.0);
            })
        })
        .collect();
    while p.0.lock().1 < n {
        std::thread::yield_now();
    }
    handles
}

#[test]
fn notify_all_counts_every_waiter_even_one_not_yet_asleep() {
    // The mutex is taken right after the last waiter released it inside `wait`: that waiter is
    // often still on its way to sleep, and must be counted all the same.
    bounded("notify_all count", Duration::from_secs(60), || {
        let rounds = if cfg!(miri) { 2 } else { 300 };
        let n = if cfg!(miri) { 3 } else { 10 };
        for round in 0..rounds {
            let p = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
            let handles = start_waiters(&p, n);
            let mut g = p.0.lock();
            g.0 = true;
            let woken = p.1.notify_all();
            drop(g);
            assert_eq!(woken, n, "round {round}");
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(p.1.notify_all(), 0, "round {round}: nobody waits any more");
        }
    });
}

#[test]
fn notify_one_counts_each_waiter_once() {
    bounded("notify_one count", Duration::from_secs(60), || {
        let rounds = if cfg!(miri) { 2 } else { 100 };
        let n = if cfg!(miri) { 2 } else { 4 };
        for round in 0..rounds {
            let p = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
            let handles = start_waiters(&p, n);
            let mut g = p.0.lock();
            g.0 = true;
            for i in 0..n {
                assert!(p.1.notify_one(), "round {round}: waiter {i} not found");
            }
            assert!(
                !p.1.notify_one(),
                "round {round}: all {n} were claimed already"
            );
            assert_eq!(p.1.notify_all(), 0, "round {round}");
            drop(g);
            for h in handles {
                h.join().unwrap();
            }
        }
    });
}

#[test]
fn a_timed_out_waiter_is_not_counted() {
    let (m, cv) = (Mutex::new(()), Condvar::new());
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(2)).timed_out());
    assert_eq!(cv.notify_all(), 0);
    assert!(!cv.notify_one());
}

#[test]
fn a_notified_timed_waiter_reports_no_timeout() {
    bounded("timed waiter notified", Duration::from_secs(20), || {
        let p = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
        let q = Arc::clone(&p);
        let t = std::thread::spawn(move || {
            let mut g = q.0.lock();
            g.1 += 1;
            q.1.wait_while_for(&mut g, |s| !s.0, Duration::from_secs(30))
        });
        while p.0.lock().1 == 0 {
            std::thread::yield_now();
        }
        let mut g = p.0.lock();
        g.0 = true;
        assert!(p.1.notify_one());
        drop(g);
        assert!(!t.join().unwrap().timed_out());
    });
}

#[test]
fn wait_while_for_calls_the_condition_once_when_nothing_notifies() {
    // parking_lot: the condition is checked before the first wait and after each notified wait,
    // never after the timeout.
    let (m, cv) = (Mutex::new(0), Condvar::new());
    let mut g = m.lock();
    let mut calls = 0;
    let r = cv.wait_while_for(
        &mut g,
        |_| {
            calls += 1;
            true
        },
        Duration::from_millis(5),
    );
    assert!(r.timed_out());
    assert_eq!(calls, 1);
}

#[test]
fn wait_while_until_is_not_rechecked_after_the_timeout() {
    // The state changes (without a notification) while the thread waits: after the timeout the
    // result is "timed out" and the condition is not called again.
    bounded("wait_while_until", Duration::from_secs(20), || {
        // (value, the waiter has checked the condition)
        let p = Arc::new((Mutex::new((0u32, false)), Condvar::new()));
        let q = Arc::clone(&p);
        let t = std::thread::spawn(move || {
            let mut g = q.0.lock();
            let mut calls = 0;
            let r = q.1.wait_while_until(
                &mut g,
                |s| {
                    calls += 1;
                    s.1 = true;
                    s.0 == 0
                },
                Instant::now() + Duration::from_millis(50),
            );
            (r.timed_out(), calls, g.0)
        });
        // The waiter checked the condition under the mutex and releases it only inside `wait`:
        // the value changes while it waits.
        loop {
            let mut g = p.0.lock();
            if g.1 {
                g.0 = 1;
                break;
            }
            drop(g);
            std::thread::yield_now();
        }
        assert_eq!(t.join().unwrap(), (true, 1, 1));
    });
}

#[test]
fn wait_while_for_checks_again_after_each_notification() {
    bounded("wait_while_for notified", Duration::from_secs(20), || {
        let p = Arc::new((Mutex::new((0u32, false)), Condvar::new()));
        let q = Arc::clone(&p);
        let t = std::thread::spawn(move || {
            let mut g = q.0.lock();
            g.1 = true;
            let mut calls = 0;
            let r = q.1.wait_while_for(
                &mut g,
                |v| {
                    calls += 1;
                    v.0 < 2
                },
                Duration::from_secs(30),
            );
            (r.timed_out(), calls)
        });
        for v in 1..=2 {
            loop {
                let mut g = p.0.lock();
                // The waiter is inside `wait` whenever it is not holding the mutex.
                if g.1 && p.1.notify_one() {
                    g.0 = v;
                    break;
                }
                drop(g);
                std::thread::yield_now();
            }
        }
        assert_eq!(t.join().unwrap(), (false, 3));
    });
}

#[test]
fn one_condvar_serves_two_mutexes_at_the_same_time() {
    // parking_lot panics here; scalelock wakes both.
    bounded("two mutexes at once", Duration::from_secs(20), || {
        let cv = Arc::new(Condvar::new());
        let ms: Vec<_> = (0..2)
            .map(|_| Arc::new(Mutex::new((false, 0usize))))
            .collect();
        let handles: Vec<_> = ms
            .iter()
            .map(|m| {
                let (cv, m) = (Arc::clone(&cv), Arc::clone(m));
                std::thread::spawn(move || {
                    let mut g = m.lock();
                    g.1 += 1;
                    cv.wait_while(&mut g, |s| !s.0);
                })
            })
            .collect();
        for m in &ms {
            while m.lock().1 == 0 {
                std::thread::yield_now();
            }
        }
        let mut g0 = ms[0].lock();
        let mut g1 = ms[1].lock();
        g0.0 = true;
        g1.0 = true;
        assert_eq!(cv.notify_all(), 2);
        drop((g0, g1));
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[cfg(not(miri))]
#[test]
fn a_signal_does_not_wake_a_waiter() {
    // No spurious wake-ups: a signal interrupts the futex sleep, and `wait` sleeps again.
    extern "C" fn on_signal(_: libc::c_int) {}
    bounded("signal", Duration::from_secs(20), || {
        // SAFETY: installs a handler that does nothing, without SA_RESTART so that the futex
        // sleep really returns EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut());
        }
        let p = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
        let q = Arc::clone(&p);
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            // SAFETY: pthread_self has no preconditions.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            let mut g = q.0.lock();
            g.1 += 1;
            q.1.wait(&mut g);
            g.0
        });
        let thread = rx.recv().unwrap();
        while p.0.lock().1 == 0 {
            std::thread::yield_now();
        }
        for _ in 0..20 {
            // SAFETY: the thread is alive: it returns only after the notification below.
            unsafe { libc::pthread_kill(thread, libc::SIGUSR2) };
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut g = p.0.lock();
        g.0 = true;
        assert!(p.1.notify_one());
        drop(g);
        // Had a signal woken it, it would have seen `false`.
        assert!(t.join().unwrap());
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
        // Under Miri (an interpreter), a few threads and items still run every path.
        const PRODUCERS: u64 = if cfg!(miri) { 3 } else { 64 };
        const CONSUMERS: usize = if cfg!(miri) { 3 } else { 64 };
        const PER_PRODUCER: u64 = if cfg!(miri) { 20 } else { 1_000 };
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
