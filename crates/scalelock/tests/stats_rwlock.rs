//! Lockstat on the rwlock family: contention per lock and per call site, exact write counts.
//!
//! Lockstat's switch and table are process-wide: every test takes `SERIAL` and looks only at
//! the locks it created.
#![cfg(all(not(loom), feature = "lockstat"))]

use scalelock::lock_api::RwLockUpgradableReadGuard as Upgradable;
use scalelock::stats::{self, Counters, Report, Site};
use scalelock::{BiasedRwLock, RwLock};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn site_wait(r: &Report, line: u32) -> (u64, u64) {
    r.sites
        .iter()
        .filter(|s| {
            matches!(s.site, Site::Source { file, line: l } if file.ends_with("stats_rwlock.rs") && l == line)
        })
        .fold((0, 0), |(c, w), s| (c + s.counters.contended, w + s.counters.wait_ns))
}

/// Any guard, held in a box until dropped.
trait Held {}
impl<T> Held for T {}

/// Runs `hold` on another thread while it holds the lock (taken by `take`), until `waiting`
/// says the main thread waits for it (bounded), plus [`HOLD_NS`].
fn hold_until<L: Send + Sync + 'static>(
    lock: &Arc<L>,
    take: fn(&L) -> Box<dyn Held + '_>,
    waiting: fn(&L) -> bool,
) -> std::thread::JoinHandle<()> {
    let (tx, rx) = mpsc::channel();
    let l = Arc::clone(lock);
    let h = std::thread::spawn(move || {
        let g = take(&l);
        tx.send(()).unwrap();
        let t0 = Instant::now();
        while !waiting(&l) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_nanos(HOLD_NS));
        drop(g);
    });
    rx.recv().unwrap();
    h
}

/// How long [`hold_until`]'s holder keeps the lock at least once the main thread waits: the
/// least wait each contended acquisition below records.
const HOLD_NS: u64 = 5_000_000;

/// With the other tests kept out, records what `f` does in a zeroed table; returns the report
/// and what `f` returned.
fn record<T>(f: impl FnOnce() -> T) -> (Report, T) {
    let _s = serial();
    stats::enable();
    stats::reset();
    let out = f();
    let r = stats::report();
    stats::disable();
    (r, out)
}

/// The counters of the lock called `name`.
fn counters_of(r: &Report, name: &str) -> Counters {
    r.locks
        .iter()
        .find(|x| x.lock.name == Some(name))
        .unwrap_or_else(|| panic!("no lock {name} in the report"))
        .counters
}

/// Asserts that the lock's counters and its call site at `line` (`what`) each show at least
/// one contended acquisition that waited a whole hold.
fn assert_waited_a_hold(r: &Report, lock: &Counters, line: u32, what: &str) {
    assert!(lock.contended >= 1 && lock.wait_ns >= HOLD_NS, "{lock:?}");
    let (c, w) = site_wait(r, line);
    assert!(c >= 1 && w >= HOLD_NS, "{what} site: {c} {w}");
}

#[test]
fn a_writer_waiting_for_a_reader_is_recorded_at_its_call_site() {
    let (r, line) = record(|| {
        let l = Arc::new(RwLock::with_name("rw_writer_waits", 0u32));
        let h = hold_until(
            &l,
            |l| Box::new(l.read()),
            // SAFETY: reading the raw lock's state only.
            |l| unsafe { l.raw() }.has_waiters(),
        );
        let (mut g, line) = (l.write(), line!());
        *g += 1;
        drop(g);
        h.join().unwrap();
        *l.write() += 1;
        line
    });
    let c = counters_of(&r, "rw_writer_waits");
    assert_eq!(c.acquisitions, 2, "write acquisitions are counted exactly");
    assert_waited_a_hold(&r, &c, line, "write");
}

#[test]
fn a_reader_waiting_for_a_writer_is_recorded_at_its_call_site() {
    let (r, line) = record(|| {
        let l = Arc::new(RwLock::with_name("rw_reader_waits", 0u32));
        let h = hold_until(
            &l,
            |l| Box::new(l.write()),
            // SAFETY: reading the raw lock's state only.
            |l| unsafe { l.raw() }.has_waiters(),
        );
        let (g, line) = (l.read(), line!());
        drop(g);
        h.join().unwrap();
        for _ in 0..10 {
            drop(l.read());
        }
        line
    });
    let c = counters_of(&r, "rw_reader_waits");
    assert_eq!(c.acquisitions, 1, "only the write is counted, never a read");
    assert!(c.contended >= 1, "{c:?}");
    let (sc, sw) = site_wait(&r, line);
    assert!(sc >= 1 && sw >= HOLD_NS, "read site: {sc} {sw}");
}

#[test]
fn a_biased_writer_draining_readers_is_recorded_at_its_call_site() {
    let (r, line) = record(|| {
        let l = Arc::new(BiasedRwLock::with_name("biased_drain", 0u32));
        let h = hold_until(&l, |l| Box::new(l.read()), |l| l.is_locked_exclusive());
        let (mut g, line) = (l.write(), line!());
        *g += 1;
        drop(g);
        h.join().unwrap();
        line
    });
    let c = counters_of(&r, "biased_drain");
    assert_eq!(c.acquisitions, 1);
    // One wait, for the reader to leave; a write never times out.
    assert_eq!((c.contended, c.timeouts), (1, 0), "{c:?}");
    assert_waited_a_hold(&r, &c, line, "write");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "one thread, no interleavings to explore, and about two minutes under Miri (most of \
              them resetting and reading lockstat's table); the failing tries themselves run \
              under Miri in tests/biased.rs"
)]
fn a_failed_try_of_a_biased_write_records_no_wait() {
    let (r, _) = record(|| {
        let l = BiasedRwLock::with_name("biased_try", 0u32);
        let g = l.read();
        // SAFETY: reading the raw lock's state only.
        assert!(
            unsafe { l.raw() }.is_biased(),
            "a new lock's first read enters the table"
        );
        assert!(l.try_write().is_none());
        let u = Upgradable::try_upgrade(l.upgradable_read()).expect_err("a reader is inside");
        drop(g);
        let w = Upgradable::try_upgrade(u).unwrap_or_else(|_| panic!("nobody else is inside"));
        drop(w);
        *l.write() += 1;
    });
    let c = counters_of(&r, "biased_try");
    assert_eq!(c.acquisitions, 1, "the write");
    assert_eq!((c.contended, c.timeouts), (0, 0), "{c:?}");
}

#[test]
fn rwlocks_work_while_recording_is_toggled() {
    let _s = serial();
    let rw = Arc::new(RwLock::new(0u64));
    let bi = Arc::new(BiasedRwLock::new(0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut hs = Vec::new();
    for t in 0..16u64 {
        let (rw, bi, stop) = (rw.clone(), bi.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            let mut writes = 0u64;
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match (i + t) % 8 {
                    0 => {
                        *rw.write() += 1;
                        writes += 1;
                    }
                    1 => {
                        *bi.write() += 1;
                        writes += 1;
                    }
                    2 => drop(rw.try_read_for(Duration::from_micros(20))),
                    3 => drop(bi.upgradable_read()),
                    4 | 5 => drop(rw.read()),
                    _ => drop(bi.read_recursive()),
                }
                i += 1;
            }
            writes
        }));
    }
    let t0 = Instant::now();
    let mut i = 0;
    while t0.elapsed() < Duration::from_millis(800) {
        match i % 4 {
            0 => stats::enable(),
            1 => drop(stats::report()),
            2 => stats::reset(),
            _ => stats::disable(),
        }
        i += 1;
        std::thread::sleep(Duration::from_micros(500));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(*rw.read() + *bi.read(), writes);
    stats::disable();
}
