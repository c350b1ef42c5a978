//! The promises of lockstat (`scalelock::stats`), one test each.
//!
//! Lockstat's switch and table are process-wide, so every test here takes `SERIAL` first and
//! looks only at locks it created itself.
#![cfg(all(not(loom), feature = "lockstat"))]

mod common;

use common::{bounded, until_a_waiter_sleeps};
use scalelock::stats::{self, Counters, LockId, LockReport, Report, Site, SiteReport};
use scalelock::{Condvar, Mutex, RawMutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes `SERIAL` and turns recording on for a fresh interval, with hold samples so rare that
/// none marks a lock contended: `is_contended` can then only mean that a waiter sleeps.
fn recording_without_hold_samples() -> std::sync::MutexGuard<'static, ()> {
    let s = serial();
    stats::set_sample_period(1 << 20);
    stats::enable();
    stats::reset();
    s
}

fn addr_of<T>(m: &Mutex<T>) -> usize {
    // SAFETY: only the address is taken.
    unsafe { m.raw() as *const RawMutex as usize }
}

fn lock_report(r: &Report, addr: usize) -> Option<&LockReport> {
    r.locks.iter().find(|l| l.lock.addr == addr)
}

fn site_report(r: &Report, addr: usize, line: u32) -> Option<&SiteReport> {
    r.sites.iter().find(|s| {
        s.lock.addr == addr
            && matches!(s.site, Site::Source { file, line: l } if file.ends_with("stats.rs") && l == line)
    })
}

#[test]
fn counts_are_exact_for_a_scripted_single_threaded_sequence() {
    let _s = serial();
    stats::set_sample_period(1);
    stats::enable();
    stats::reset();
    let m = Mutex::with_name("scripted", 0u32);
    let a = addr_of(&m);

    let mut line_lock = 0;
    for _ in 0..5 {
        let (mut g, l) = (m.lock(), line!());
        *g += 1;
        line_lock = l;
    }
    let mut line_try = 0;
    for _ in 0..3 {
        let (g, l) = (m.try_lock(), line!());
        *g.expect("free") += 1;
        line_try = l;
    }
    let held = m.lock();
    assert!(
        m.try_lock().is_none(),
        "a failed try_lock is not an acquisition"
    );
    let (timed, line_timed) = (m.try_lock_for(Duration::from_millis(2)), line!());
    assert!(timed.is_none());
    std::thread::sleep(Duration::from_millis(3));
    drop(held);

    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);

    let l = lock_report(&r, a).expect("lock recorded");
    assert_eq!(l.lock.name, Some("scripted"));
    let c = &l.counters;
    assert_eq!(c.acquisitions, 9, "{c:?}");
    assert_eq!(c.contended, 1, "only the timed attempt waited: {c:?}");
    assert_eq!(c.timeouts, 1);
    assert_eq!(c.handoffs, 0);
    assert!(
        c.wait_ns >= 2_000_000 && c.max_wait_ns == c.wait_ns,
        "{c:?}"
    );
    assert_eq!(c.wait_histogram.iter().sum::<u64>(), 1);
    assert_eq!(c.hold_samples, 9, "period 1 samples every hold: {c:?}");
    assert!(
        c.max_hold_ns >= 5_000_000,
        "the last hold spanned the timed wait and a sleep: {c:?}"
    );
    assert!(c.hold_ns >= c.max_hold_ns);

    let s = site_report(&r, a, line_lock).expect("lock() site");
    assert_eq!(
        (
            s.counters.acquisitions,
            s.counters.contended,
            s.counters.hold_samples
        ),
        (5, 0, 5)
    );
    let s = site_report(&r, a, line_try).expect("try_lock() site");
    assert_eq!(
        (
            s.counters.acquisitions,
            s.counters.contended,
            s.counters.hold_samples
        ),
        (3, 0, 3)
    );
    let s = site_report(&r, a, line_timed).expect("try_lock_for() site");
    assert_eq!(
        (
            s.counters.acquisitions,
            s.counters.contended,
            s.counters.timeouts
        ),
        (0, 1, 1)
    );
    assert_eq!(*m.lock(), 8);
}

#[test]
fn forced_contention_is_recorded_at_the_waiting_call_site() {
    let _s = recording_without_hold_samples();
    let m = Arc::new(Mutex::new(0u64));
    let a = addr_of(&m);
    let (tx, rx) = mpsc::channel();
    let m2 = Arc::clone(&m);
    let holder = std::thread::spawn(move || {
        let mut g = m2.lock();
        tx.send(()).unwrap();
        // Hold until the waiter sleeps on the lock (bounded), then a little longer.
        until_a_waiter_sleeps(&m2, Duration::from_micros(200));
        std::thread::sleep(Duration::from_millis(5));
        *g += 1;
    });
    rx.recv().unwrap();
    let (mut g, line_wait) = (m.lock(), line!());
    *g += 1;
    drop(g);
    holder.join().unwrap();

    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);

    assert_eq!(*m.lock(), 2);
    let l = lock_report(&r, a).expect("lock recorded");
    assert!(
        l.counters.contended >= 1 && l.counters.wait_ns >= 5_000_000,
        "{:?}",
        l.counters
    );
    assert!(l.counters.sleeps >= 1, "{:?}", l.counters);
    assert_eq!(l.counters.acquisitions, 2);
    assert!(
        matches!(l.lock.created, Some(Site::Source { file, .. }) if file.ends_with("stats.rs"))
    );
    let s = site_report(&r, a, line_wait).expect("the waiting call site");
    assert_eq!(s.counters.contended, 1);
    assert!(s.counters.wait_ns >= 5_000_000 && s.counters.max_wait_ns == s.counters.wait_ns);
    // The text table names that site.
    let text = r.to_string();
    assert!(
        text.contains(&format!("tests/stats.rs:{line_wait}")),
        "{text}"
    );
}

/// One recorded wait: a fresh thread runs `take` (which locks and unlocks the mutex) while this
/// thread holds the mutex, until the waiter sleeps; then the report and the lock's counters.
fn one_wait(take: fn(&Mutex<u64>)) -> (Report, Counters) {
    let _s = recording_without_hold_samples();
    let m = Arc::new(Mutex::new(0u64));
    let a = addr_of(&m);
    let g = m.lock();
    let m2 = Arc::clone(&m);
    let waiter = std::thread::spawn(move || take(&m2));
    until_a_waiter_sleeps(&m, Duration::from_micros(200));
    drop(g);
    waiter.join().unwrap();

    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    let c = lock_report(&r, a).expect("lock recorded").counters;
    assert_eq!(c.contended, 1, "{c:?}");
    assert!(c.sleeps >= 1, "{c:?}");
    (r, c)
}

#[test]
fn a_wait_counts_its_yields_and_the_time_they_took() {
    // A fresh thread waits often (see the wait layer's cadence): under the adaptive policy
    // its wait spins, yields its CPU a few times, then sleeps.
    let (r, c) = one_wait(|m| *m.lock() += 1);
    if scalelock::wait::spin_policy() == scalelock::wait::SpinPolicy::Adaptive {
        assert!(c.yields >= 1, "the waiter yielded before it slept: {c:?}");
        assert!(c.yield_ns > 0, "{c:?}");
    }
    assert!(
        c.yield_ns <= c.wait_ns,
        "the yields were part of the wait: {c:?}"
    );
    let text = r.to_string();
    assert!(
        text.contains("yields") && text.contains("yielded"),
        "{text}"
    );
}

#[test]
fn a_woken_thread_waits_for_the_mutex_without_yields() {
    // The same wait, as a thread re-taking the mutex after a condvar's wait: it spins, then
    // sleeps, and yields under no policy.
    let (_, c) = one_wait(|m| {
        // SAFETY: the raw lock is taken and released by this thread, around nothing else.
        unsafe {
            m.raw().lock_woken();
            m.raw().unlock();
        }
    });
    assert_eq!((c.yields, c.yield_ns), (0, 0), "{c:?}");
}

#[test]
fn raw_lock_api_path_records_per_lock_only() {
    let _s = serial();
    stats::enable();
    stats::reset();
    let m = Arc::new(lock_api::Mutex::<RawMutex, u32>::new(0));
    // SAFETY: address only.
    let a = unsafe { m.raw() } as *const RawMutex as usize;
    let (tx, rx) = mpsc::channel();
    let m2 = Arc::clone(&m);
    let holder = std::thread::spawn(move || {
        let _g = m2.lock();
        tx.send(()).unwrap();
        let t0 = Instant::now();
        // SAFETY: reading state only.
        while !unsafe { m2.raw() }.is_contended() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    rx.recv().unwrap();
    *m.lock() += 1;
    holder.join().unwrap();
    let r = stats::report();
    stats::disable();
    let l = lock_report(&r, a).expect("lock recorded");
    assert!(l.counters.contended >= 1);
    assert_eq!(
        l.counters.acquisitions, 0,
        "the raw path does not count uncontended acquisitions"
    );
    assert!(r
        .sites
        .iter()
        .filter(|s| s.lock.addr == a)
        .all(|s| s.site == Site::Unknown));
}

#[test]
fn nothing_is_recorded_while_disabled() {
    let _s = serial();
    stats::disable();
    stats::reset();
    let m = Mutex::new(0);
    let a = addr_of(&m);
    for _ in 0..100 {
        *m.lock() += 1;
    }
    drop(m.try_lock_for(Duration::from_millis(1)));
    assert!(lock_report(&stats::report(), a).is_none());
    assert!(!stats::report().enabled);
}

#[test]
fn condvar_waits_still_work_with_recording_on() {
    let _s = serial();
    stats::set_sample_period(1);
    stats::enable();
    let pair = Arc::new((Mutex::with_name("cv_mutex", 0u32), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let t = std::thread::spawn(move || {
        for i in 1..=200 {
            *p2.0.lock() = i;
            p2.1.notify_all();
        }
    });
    let mut g = pair.0.lock();
    pair.1.wait_while(&mut g, |v| *v < 200);
    drop(g);
    t.join().unwrap();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
}

fn fixed_report() -> Report {
    let db = LockId {
        addr: 0x7f00_1000,
        name: Some("table_cache"),
        created: None,
    };
    let anon = LockId {
        addr: 0x7f00_2000,
        name: None,
        created: Some(Site::Source {
            file: "crates/app/src/pool.rs",
            line: 12,
        }),
    };
    let mut hist = [0u64; 32];
    hist[14] = 3;
    let site_a = Counters {
        acquisitions: 1_000,
        contended: 3,
        wait_ns: 30_000,
        max_wait_ns: 15_000,
        wait_histogram: hist,
        ..Default::default()
    };
    let site_b = Counters {
        contended: 1,
        wait_ns: 10_000,
        max_wait_ns: 10_000,
        ..Default::default()
    };
    let pool = Counters {
        acquisitions: 5,
        ..Default::default()
    };
    let db_total = Counters {
        acquisitions: 2_000,
        contended: 4,
        spin_ns: 2_500,
        sleeps: 2,
        handoffs: 1,
        wait_ns: 40_000,
        max_wait_ns: 15_000,
        hold_samples: 2,
        hold_ns: 3_000_000,
        max_hold_ns: 2_000_000,
        yields: 3,
        yield_ns: 21_000,
        ..Default::default()
    };
    Report {
        enabled: true,
        interval_ns: 2_500_000_000,
        sample_period: 1024,
        dropped: 0,
        locks: vec![
            LockReport {
                lock: db,
                counters: db_total,
            },
            LockReport {
                lock: anon,
                counters: pool,
            },
        ],
        sites: vec![
            SiteReport {
                lock: db,
                site: Site::Source {
                    file: "crates/db/src/table.rs",
                    line: 120,
                },
                counters: site_a,
            },
            SiteReport {
                lock: db,
                site: Site::Unknown,
                counters: site_b,
            },
            SiteReport {
                lock: anon,
                site: Site::Source {
                    file: "src/pool.rs",
                    line: 40,
                },
                counters: pool,
            },
        ],
    }
}

#[test]
fn report_text_is_formatted_like_lockstat() {
    let expected = "\
scalelock lockstat: 4 contention events, 40.0us total wait, in 2.50s (recording on; hold times sampled 1 in 1024)

    Count  indv  cuml      wait  avg wait  max wait  Lock                             Caller
----------------------------------------------------------------------------------------------------------------------------
        3   75%   75%    30.0us    10.0us    15.0us  table_cache                      src/table.rs:120
        1   25%  100%    10.0us    10.0us    10.0us  table_cache                      -

   Acquired Contended     %      spin  yields   yielded  sleeps handoff      wait  avg hold  max hold  Lock
----------------------------------------------------------------------------------------------------------------------------
       2000         4    0%     2.5us       3    21.0us       2       1    40.0us    1.50ms    2.00ms  table_cache
          5         0    0%       0ns       0       0ns       0       0       0ns         -         -  0x7f002000@src/pool.rs:12
";
    let r = fixed_report();
    assert_eq!(r.to_string(), expected);
    let mut out = Vec::new();
    // report_to prints the live report; write_text on fixed data goes through the same code.
    let mut s = String::new();
    r.write_text(&mut s).unwrap();
    assert_eq!(s, expected);
    stats::report_to(&mut out).unwrap();
    assert!(String::from_utf8(out)
        .unwrap()
        .starts_with("scalelock lockstat: "));
}

#[test]
fn report_json_is_complete_on_fixed_data() {
    let mut r = fixed_report();
    r.locks.truncate(1);
    r.sites.truncate(1);
    let zeros = |pre: &str| {
        let mut v = vec!["0"; 32];
        if !pre.is_empty() {
            v[14] = pre;
        }
        v.join(",")
    };
    let expected = format!(
        "{{\"enabled\":true,\"interval_ns\":2500000000,\"sample_period\":1024,\"dropped\":0,\
         \"locks\":[{{\"lock\":{{\"addr\":2130710528,\"name\":\"table_cache\",\"created\":null}},\
         \"acquisitions\":2000,\"contended\":4,\"timeouts\":0,\"spin_ns\":2500,\"sleeps\":2,\
         \"handoffs\":1,\"wait_ns\":40000,\"max_wait_ns\":15000,\"hold_samples\":2,\
         \"hold_ns\":3000000,\"max_hold_ns\":2000000,\"yields\":3,\"yield_ns\":21000,\
         \"wait_histogram\":[{}]}}],\
         \"sites\":[{{\"lock\":{{\"addr\":2130710528,\"name\":\"table_cache\",\"created\":null}},\
         \"site\":{{\"file\":\"crates/db/src/table.rs\",\"line\":120}},\"acquisitions\":1000,\
         \"contended\":3,\"timeouts\":0,\"spin_ns\":0,\"sleeps\":0,\"handoffs\":0,\
         \"wait_ns\":30000,\"max_wait_ns\":15000,\"hold_samples\":0,\"hold_ns\":0,\
         \"max_hold_ns\":0,\"yields\":0,\"yield_ns\":0,\"wait_histogram\":[{}]}}]}}",
        zeros(""),
        zeros("3")
    );
    assert_eq!(r.to_json(), expected);
}

#[test]
fn report_to_fd_writes_the_table_without_allocating() {
    let _s = serial();
    stats::enable();
    stats::reset();
    static NAMED: Mutex<u8> = Mutex::with_name("fd_report_lock", 0);
    stats::raw::contended(
        // SAFETY: address only.
        unsafe { NAMED.raw() } as *const RawMutex as usize,
        0,
        1_000,
        0,
        1,
        false,
        true,
    );
    *NAMED.lock() += 1;
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    stats::report_to_fd(fds[1], 10);
    // SAFETY: closing the write end we own.
    unsafe { libc::close(fds[1]) };
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reading into our own buffer from the read end we own.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: closing the read end we own.
    unsafe { libc::close(fds[0]) };
    stats::disable();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("scalelock lockstat: "), "{text}");
    assert!(text.contains("fd_report_lock"), "{text}");
    assert!(
        text.contains("Caller") && text.contains("avg hold"),
        "{text}"
    );
}

#[test]
fn c_api_records_by_address_and_caller() {
    let _s = serial();
    stats::enable();
    stats::reset();
    let lock = Box::new(0u64);
    let addr = &*lock as *const u64 as usize;
    let caller = c_api_records_by_address_and_caller as fn() as usize;
    stats::raw::name(addr, "c_lock");
    for _ in 0..3 {
        stats::raw::acquired(addr, caller);
    }
    stats::raw::contended(addr, caller, 7_000, 1_000, 2, true, true);
    stats::raw::held(addr, caller, 4_000);
    let r = stats::report();
    stats::disable();
    let l = lock_report(&r, addr).unwrap();
    assert_eq!(l.lock.name, Some("c_lock"));
    let c = l.counters;
    assert_eq!(
        (
            c.acquisitions,
            c.contended,
            c.wait_ns,
            c.spin_ns,
            c.sleeps,
            c.handoffs
        ),
        (3, 1, 7_000, 1_000, 2, 1)
    );
    assert_eq!((c.hold_samples, c.hold_ns), (1, 4_000));
    let s = r.sites.iter().find(|s| s.lock.addr == addr).unwrap();
    assert_eq!(s.site, Site::Address(caller));
    assert_eq!(s.counters.acquisitions, 3);
}

#[test]
fn enabling_and_disabling_while_64_threads_lock_is_safe() {
    let _s = serial();
    bounded("lockstat toggle stress", Duration::from_secs(60), || {
        let locks: Arc<Vec<Mutex<u64>>> = Arc::new((0..4).map(|_| Mutex::new(0)).collect());
        let raw = Arc::new(lock_api::Mutex::<RawMutex, u64>::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let start = Arc::new(Barrier::new(65));
        let mut hs = Vec::new();
        for t in 0..64usize {
            let (locks, raw, stop, done, start) = (
                locks.clone(),
                raw.clone(),
                stop.clone(),
                done.clone(),
                start.clone(),
            );
            hs.push(std::thread::spawn(move || {
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let m = &locks[(t + n as usize) % 4];
                    match n % 4 {
                        0 | 1 => *m.lock() += 1,
                        2 => match m.try_lock_for(Duration::from_micros(50)) {
                            Some(mut g) => *g += 1,
                            None => {
                                *m.lock() += 1;
                            }
                        },
                        _ => *raw.lock() += 1,
                    }
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            }));
        }
        start.wait();
        let t0 = Instant::now();
        let mut i = 0u64;
        while t0.elapsed() < Duration::from_millis(1500) {
            match i % 6 {
                0 => stats::enable(),
                1 => stats::set_sample_period(1 + (i % 7)),
                2 => {
                    let _ = stats::report().to_json();
                }
                3 => stats::reset(),
                4 => stats::disable(),
                _ => stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD),
            }
            i += 1;
            std::thread::sleep(Duration::from_micros(300));
        }
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            h.join().unwrap();
        }
        let total: u64 = locks.iter().map(|m| *m.lock()).sum::<u64>() + *raw.lock();
        assert_eq!(total, done.load(Ordering::Relaxed), "an increment was lost");

        // Afterwards the statistics are still sane: no stale hold sample survives `enable`.
        stats::set_sample_period(1);
        stats::enable();
        stats::reset();
        let a = addr_of(&locks[0]);
        for _ in 0..100 {
            *locks[0].lock() += 1;
        }
        let r = stats::report();
        stats::disable();
        stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
        let c = lock_report(&r, a).unwrap().counters;
        assert_eq!(c.acquisitions, 100);
        assert_eq!(c.hold_samples, 100);
        assert!(c.max_hold_ns < 1_000_000_000, "{c:?}");
    });
}

#[test]
fn mutex_carries_24_bytes_for_lockstat() {
    assert_eq!(std::mem::size_of::<Mutex<()>>(), 8 + 24);
    assert_eq!(std::mem::size_of::<RawMutex>(), 8);
}

/// Not a test by itself: the body of `env_exit_prints_the_table_at_exit`'s child process.
#[test]
fn exit_report_child() {
    if std::env::var_os("SCALELOCK_STATS_TEST_CHILD").is_none() {
        return;
    }
    static CHILD_LOCK: Mutex<u32> = Mutex::with_name("child_lock", 0);
    let t = std::thread::spawn(|| {
        for _ in 0..20_000 {
            *CHILD_LOCK.lock() += 1;
        }
    });
    for _ in 0..20_000 {
        *CHILD_LOCK.lock() += 1;
    }
    t.join().unwrap();
    assert!(
        stats::enabled(),
        "SCALELOCK_LOCKSTAT=exit turns recording on"
    );
}

#[test]
fn env_exit_prints_the_table_at_exit() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "exit_report_child", "--test-threads", "1"])
        .env("SCALELOCK_STATS_TEST_CHILD", "1")
        .env("SCALELOCK_LOCKSTAT", "exit")
        .env("SCALELOCK_LOCKSTAT_SAMPLE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scalelock lockstat: "), "{err}");
    assert!(
        err.contains("hold times sampled 1 in 1)"),
        "SCALELOCK_LOCKSTAT_SAMPLE read: {err}"
    );
    let row = err
        .lines()
        .find(|l| l.ends_with(" child_lock"))
        .expect("per-lock row");
    assert!(row.trim_start().starts_with("40000 "), "{row}");
}

#[test]
fn reset_starts_a_new_interval() {
    let _s = serial();
    stats::set_sample_period(1);
    stats::enable();
    let m = Mutex::new(0);
    let a = addr_of(&m);
    let mut line = 0;
    for i in 0..5 {
        if i == 3 {
            stats::reset();
        }
        let (mut g, l) = (m.lock(), line!());
        *g += 1;
        line = l;
    }
    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    let c = lock_report(&r, a).unwrap().counters;
    assert_eq!((c.acquisitions, c.hold_samples), (2, 2), "{c:?}");
    let s = site_report(&r, a, line).unwrap().counters;
    assert_eq!((s.acquisitions, s.hold_samples), (2, 2), "{s:?}");
    assert!(r.interval_ns < 10_000_000_000);
}

/// A mutex made at one line of this file, for the drop tests (its creation site).
fn boxed_mutex() -> (Box<Mutex<u64>>, u32) {
    (Box::new(Mutex::new(0)), line!())
}

/// The row of the dropped locks created at `line` of this file.
fn destroyed_at(r: &Report, line: u32) -> Option<&LockReport> {
    r.locks.iter().find(|l| {
        l.lock.name == Some(stats::DESTROYED_LOCKS)
            && matches!(l.lock.created, Some(Site::Source { file, line: n }) if file.ends_with("stats.rs") && n == line)
    })
}

#[test]
fn a_dropped_mutex_is_folded_by_its_creation_site() {
    let _s = serial();
    stats::set_sample_period(1);
    stats::enable();
    stats::reset();
    let mut made_at = 0;
    let mut gone = Vec::new();
    let mut site_line = 0;
    for _ in 0..3 {
        let (m, line) = boxed_mutex();
        made_at = line;
        gone.push(addr_of(&m));
        for _ in 0..5 {
            let (mut g, l) = (m.lock(), line!());
            *g += 1;
            site_line = l;
        }
    }
    // A lock made now may well sit where a dropped one was: it starts from nothing.
    let (live, _) = boxed_mutex();
    *live.lock() += 1;
    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    let row = destroyed_at(&r, made_at).expect("the row of the dropped locks");
    assert_eq!(row.counters.acquisitions, 15, "{row:?}");
    assert_eq!(row.lock.to_string().split('@').next(), Some("(destroyed)"));
    // Their call site, under that row.
    let site = r
        .sites
        .iter()
        .find(|s| {
            s.lock == row.lock && matches!(s.site, Site::Source { line, .. } if line == site_line)
        })
        .expect("the dropped locks' call site");
    assert_eq!(site.counters.acquisitions, 15, "{site:?}");
    assert_eq!(
        lock_report(&r, addr_of(&live))
            .unwrap()
            .counters
            .acquisitions,
        1
    );
    for a in gone.into_iter().filter(|&a| a != addr_of(&live)) {
        assert!(lock_report(&r, a).is_none(), "a dropped lock keeps no row");
    }
}

#[test]
fn dropped_locks_leave_room_and_lose_nothing() {
    let _s = serial();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    stats::enable();
    stats::reset();
    // More locks than the table has entries, each kept alive beside the next few.
    const LOCKS: u64 = 40_000;
    let mut made_at = 0;
    let mut alive = std::collections::VecDeque::new();
    for _ in 0..LOCKS {
        let (m, line) = boxed_mutex();
        made_at = line;
        *m.lock() += 1;
        alive.push_back(m);
        if alive.len() > 8 {
            alive.pop_front();
        }
    }
    drop(alive);
    // An rwlock, named: its row is the name's.
    let l = Box::new(scalelock::RwLock::with_name("stats-test-rwlock", 0));
    *l.write() += 1;
    drop(l);
    let r = stats::report();
    stats::disable();
    assert_eq!(r.dropped, 0);
    assert_eq!(
        destroyed_at(&r, made_at).unwrap().counters.acquisitions,
        LOCKS
    );
    assert!(r
        .locks
        .iter()
        .all(|l| l.lock.name != Some("(other locks: table full)")));
    let named = r
        .locks
        .iter()
        .find(|l| l.lock.to_string() == "stats-test-rwlock (destroyed)")
        .expect("the named lock's row");
    assert_eq!(named.counters.acquisitions, 1);
}

/// A sleeper whose starvation bound ends its sleep on a word that nobody has changed (the
/// holder has not released: it is preempted, or holds long) sleeps on for twice as long each
/// time, and its lock remembers that (its quiet level, see the mutex's docs): behind a hold
/// that nobody releases it sleeps a handful of times, not once per starvation mark, and the
/// next wait behind such a hold starts from the longest bound.
#[test]
fn a_sleeper_behind_a_hold_nobody_releases_sleeps_twice_as_long_each_time() {
    let _s = recording_without_hold_samples();
    let m = Arc::new(Mutex::new(0u32));
    let a = addr_of(&m);
    let mut waits = Vec::new();
    for _ in 0..2 {
        stats::reset();
        let g = m.lock();
        let m2 = Arc::clone(&m);
        let waiter = std::thread::spawn(move || *m2.lock() += 1);
        until_a_waiter_sleeps(&m, Duration::from_micros(200));
        std::thread::sleep(Duration::from_millis(64));
        drop(g);
        waiter.join().unwrap();
        let r = stats::report();
        let c = lock_report(&r, a).expect("lock recorded").counters;
        assert!(c.contended == 1 && c.wait_ns >= 64_000_000, "{c:?}");
        waits.push((c.sleeps, c.wait_ns / 1_000_000));
    }
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    assert_eq!(*m.lock(), 2);
    // Bounds of 1, 2, 4, 8 ms, then 16 ms each (scalelock::STARVATION_NS and its doublings),
    // where one per millisecond would make a sleep per millisecond of the wait; the second
    // wait's bounds start at 16 ms.
    let (first, second) = (waits[0], waits[1]);
    assert!(first.0 <= 6 + first.1 / 16, "{waits:?}");
    assert!(second.0 <= 2 + second.1 / 16, "{waits:?}");
}

/// A thread that re-takes a mutex after a condition variable's wait (`lock_woken`) sleeps until
/// the release wakes it, however long the hold: no bound ends its sleep, where another sleeper's
/// bounds would (see the test above and the mutex's docs).
#[test]
fn a_re_take_after_a_condvar_wait_sleeps_until_the_release_wakes_it() {
    use lock_api::RawMutex as _;
    let _s = recording_without_hold_samples();
    let m = Arc::new(RawMutex::INIT);
    let a = Arc::as_ptr(&m) as usize;
    m.lock();
    let m2 = Arc::clone(&m);
    let waiter = std::thread::spawn(move || {
        m2.lock_woken();
        // SAFETY: locked just above by this thread.
        unsafe { m2.unlock() };
    });
    let t0 = Instant::now();
    while !m.is_contended() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_millis(64));
    // SAFETY: locked above by this thread.
    unsafe { m.unlock() };
    waiter.join().unwrap();
    let r = stats::report();
    stats::disable();
    stats::set_sample_period(stats::DEFAULT_SAMPLE_PERIOD);
    let c = lock_report(&r, a).expect("lock recorded").counters;
    assert!(c.contended == 1 && c.wait_ns >= 64_000_000, "{c:?}");
    assert_eq!(c.sleeps, 1, "{c:?}");
}
