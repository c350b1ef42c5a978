//! Lockstat past its table: a program that creates more locks than the table holds (a server
//! whose locks come and go) loses none of their events. This test fills the process-wide table,
//! so it runs in a process of its own (its own test file) and alone in it.
#![cfg(all(not(loom), feature = "lockstat"))]

use scalelock::stats::{self, raw, Wait};

/// More C locks than the table has entries, each acquired once; then waits of a lock created
/// after them, at one call site, and a Rust mutex's acquisitions.
#[test]
fn the_events_of_locks_past_the_table_are_counted_under_one_row() {
    stats::enable();
    stats::reset();
    const LOCKS: usize = 40_000;
    for i in 0..LOCKS {
        raw::acquired(0x10_0000 + 64 * i, 0);
    }
    let late = 0x10_0000 + 64 * (LOCKS + 1);
    let caller = 0x4242;
    let wait = Wait {
        wait_ns: 5_000,
        ..Default::default()
    };
    for _ in 0..3 {
        raw::waited(late, caller, &wait);
    }
    // A Rust mutex created past the table counts its acquisitions there too.
    let m = scalelock::Mutex::new(0u32);
    for _ in 0..5 {
        *m.lock() += 1;
    }
    let r = stats::report();
    stats::disable();

    assert_eq!(r.dropped, 0, "nothing lost");
    let acquisitions: u64 = r.locks.iter().map(|l| l.counters.acquisitions).sum();
    assert_eq!(
        acquisitions,
        LOCKS as u64 + 5,
        "every acquisition counted once"
    );
    let other = r
        .locks
        .iter()
        .find(|l| l.lock.name.is_some_and(|n| n.contains("table full")))
        .expect("a row for the locks past the table");
    assert!(other.counters.acquisitions > 0);
    assert_eq!(other.counters.contended, 3, "{:?}", other.counters);
    assert_eq!(other.counters.wait_ns, 15_000);
    let at_caller = r
        .sites
        .iter()
        .find(|s| s.lock.addr == other.lock.addr && s.counters.contended == 3)
        .expect("the late lock's call site, under the same row");
    assert_eq!(at_caller.counters.wait_ns, 15_000);
    let text = r.to_string();
    assert!(text.contains("(other locks: table full)"), "{text}");
    assert!(!text.contains("dropped"), "{text}");
}
