//! Helpers shared by the stress tests.
#![allow(dead_code)]

#[cfg(loom)]
pub mod model;
#[cfg(loom)]
pub mod mutex_model;
#[cfg(not(loom))]
pub mod rwlock;

use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on its own thread and fails the test with `what` if it has not finished within
/// `limit`: a lost wake-up or deadlock becomes a clear failure instead of a hung CI job.
pub fn bounded<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(());
        r
    });
    match rx.recv_timeout(limit) {
        Ok(()) => handle.join().expect("test body panicked"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {limit:?} (lost wake-up or deadlock?)")
        }
    }
}

/// Runs `f(i)` on `threads` scoped threads, `i` counting from 0, and waits for them all; a
/// panic on one of them fails the caller.
pub fn on_threads(threads: usize, f: impl Fn(usize) + Sync) {
    std::thread::scope(|s| {
        for i in 0..threads {
            let f = &f;
            s.spawn(move || f(i));
        }
    });
}

/// A few hundred nanoseconds of work that the compiler cannot remove.
pub fn busy(iters: u32) {
    for i in 0..iters {
        std::hint::black_box(i);
    }
}

/// Waits, for 5 s at most and polling every `step`, until a thread sleeps on `m`: its raw lock
/// says a waiter may be asleep (which a lockstat hold sample also says: a test that relies on
/// this makes samples rare).
#[cfg(not(loom))]
pub fn until_a_waiter_sleeps<T>(m: &scalelock::Mutex<T>, step: Duration) {
    let t0 = std::time::Instant::now();
    // SAFETY: `raw()` only reads the raw lock's contention flag here; nothing is unlocked.
    while !unsafe { m.raw() }.is_contended() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(step);
    }
}
