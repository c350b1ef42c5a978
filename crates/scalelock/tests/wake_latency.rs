//! The wait layer learns what a sleep costs from every lock that sleeps, not only the mutex:
//! an rwlock reader woken by its writer is a sample of the wake-up latency, which then sets the
//! floor of every lock's spin budget. (Its own test binary: the estimate is process-wide, and
//! must start at zero here.)
#![cfg(not(loom))]

use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn a_reader_woken_by_a_writer_teaches_the_wake_latency() {
    assert_eq!(
        scalelock::wait::wake_latency_ns(),
        0,
        "nothing has slept in this process yet"
    );
    // A loaded machine may start the reader only after the writer has gone: try again then.
    for _ in 0..20 {
        read_behind_a_writer();
        if scalelock::wait::wake_latency_ns() != 0 {
            break;
        }
    }
    let ns = scalelock::wait::wake_latency_ns();
    assert!(
        ns > 0 && ns <= 1_000_000,
        "the reader's wake-up was not sampled: estimate {ns} ns"
    );
}

/// A reader blocks behind a writer that holds the lock far longer than any spin budget, so (if it
/// arrived in time) it sleeps on the futex until the writer's unlock wakes it.
fn read_behind_a_writer() {
    let lock = Arc::new(scalelock::RwLock::new(0u32));
    let held = Arc::new(Barrier::new(2));
    let reader = {
        let (lock, held) = (lock.clone(), held.clone());
        std::thread::spawn(move || {
            held.wait();
            *lock.read()
        })
    };
    let mut guard = lock.write();
    held.wait();
    std::thread::sleep(Duration::from_millis(50));
    *guard = 7;
    drop(guard);
    assert_eq!(reader.join().unwrap(), 7);
}
