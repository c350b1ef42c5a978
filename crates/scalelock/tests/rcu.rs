//! `scalelock::rcu`: one test per promise. Every test stops by itself within seconds and fails
//! with a message rather than hanging.
//!
//! # Under Miri
//!
//! Miri's reports on these tests come from crossbeam-epoch 0.9, not from `rcu.rs`:
//!
//! - Stacked Borrows: a retag error in crossbeam-epoch's participant list
//!   (`Local::element_of`, `&*local_ptr`), crossbeam-rs/crossbeam#545 and #878. crossbeam's own
//!   CI checks crossbeam-epoch under Tree Borrows for this reason (crossbeam-rs/crossbeam#996).
//! - Tree Borrows: a data race between a reader's read of a version (`check`) and that version's
//!   destructor, with or without weak-memory emulation (it is a missing happens-before edge, not
//!   a stale value). Under `cfg(miri)`, and on every target but x86, crossbeam-epoch's
//!   `Local::pin` publishes the thread's new epoch with a Relaxed *store* (then a SeqCst fence).
//!   Since C++20 (P0982R1; Miri follows it, rust-lang/miri#1641) a store no longer continues the
//!   release sequence of the thread's previous unpin (a Release store), so a collector that reads
//!   the re-pinned epoch and then advances does not synchronise with the reads made before that
//!   unpin. The same pattern written against crossbeam-epoch alone (pin, load, swap,
//!   `defer_destroy`, `flush`, read the old version, unpin) gets the same report; making that
//!   store a read-modify-write (which continues the release sequence) in a local copy of
//!   crossbeam-epoch makes both that program and `every_retired_version_is_freed` pass. Native
//!   x86 builds pin with a SeqCst compare-exchange, a read-modify-write.
//! - Leaks: crossbeam-epoch 0.9 keeps its queue nodes and participants behind pointers stored as
//!   integers, which Miri's leak check cannot follow (crossbeam-rs/crossbeam#579); crossbeam's CI
//!   passes `-Zmiri-ignore-leaks`.
//!
//! crossbeam's CI checks crossbeam-epoch with Tree Borrows, `-Zmiri-ignore-leaks` and
//! `-Zmiri-preemption-rate=0`. With those flags `every_retired_version_is_freed` and
//! `tests/rcu_synchronize.rs` pass, but only because without preemption Miri switches threads
//! where one blocks or yields, never between a collector's fence and its read of another
//! thread's epoch: the race above is hidden, not fixed, and fewer interleavings of `rcu.rs` are
//! explored. Tests whose threads spin without yielding cannot make progress without preemption.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use scalelock::rcu::{synchronize, synchronize_timeout, Rcu, RcuReader};

/// Generous bound for "it eventually happens" on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(20);

/// A version whose fields must always agree, which counts how many copies are alive, and which
/// poisons itself when dropped so that a reader of a freed version would see disagreeing fields
/// (and, under a sanitizer or Miri, a use-after-free).
struct Checked {
    seq: u64,
    fields: [u64; 8],
    live: Arc<AtomicUsize>,
}

impl Checked {
    fn new(seq: u64, live: &Arc<AtomicUsize>) -> Checked {
        live.fetch_add(1, Ordering::SeqCst);
        Checked {
            seq,
            fields: [seq.wrapping_mul(0x9e37_79b9_7f4a_7c15); 8],
            live: live.clone(),
        }
    }

    /// Panics unless every field agrees with `seq`.
    fn check(&self) {
        let want = self.seq.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for (i, &f) in self.fields.iter().enumerate() {
            assert_eq!(
                f, want,
                "torn or freed version: seq {} field {i} = {f:#x}",
                self.seq
            );
        }
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        self.check();
        // Poison: a reader still looking at this memory would now see disagreeing fields.
        for (i, f) in self.fields.iter_mut().enumerate() {
            *f = !(i as u64);
        }
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Calls `synchronize` until `live` drops to `want`, or fails after `PATIENCE`.
fn wait_live(live: &AtomicUsize, want: usize) {
    let start = Instant::now();
    while live.load(Ordering::SeqCst) != want {
        assert!(
            start.elapsed() < PATIENCE,
            "retired versions not freed: {} live, expected {want}",
            live.load(Ordering::SeqCst)
        );
        synchronize();
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn readers_see_the_version_current_when_they_started() {
    let cell = Rcu::new(1);
    let old = cell.read();
    cell.store(2);
    let new = cell.read();
    assert_eq!((*old, *new), (1, 2));
    cell.update(|v| v * 10);
    assert_eq!((*old, *new, *cell.read()), (1, 2, 20));
}

#[test]
fn readers_never_see_a_torn_or_freed_version_under_concurrent_updates() {
    const READERS: usize = 60;
    const WRITERS: usize = 4;
    const RUN: Duration = Duration::from_millis(1500);

    let live = Arc::new(AtomicUsize::new(0));
    let cell = Rcu::new(Checked::new(0, &live));
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let start = Barrier::new(READERS + WRITERS + 1);

    thread::scope(|s| {
        for _ in 0..READERS {
            s.spawn(|| {
                start.wait();
                let mut n = 0u64;
                let mut last = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let v = cell.read();
                    v.check();
                    // Versions are published in `seq` order by serialised writers, so one
                    // thread's successive reads never go backwards.
                    assert!(v.seq >= last, "went back in time: {} after {last}", v.seq);
                    last = v.seq;
                    // Hold some guards across a yield so that retirements overlap readers.
                    if n % 64 == 0 {
                        thread::yield_now();
                        v.check();
                    }
                    n += 1;
                }
                reads.fetch_add(n, Ordering::Relaxed);
            });
        }
        for _ in 0..WRITERS {
            let (cell, live, stop, writes, start) = (&cell, &live, &stop, &writes, &start);
            s.spawn(move || {
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Copy-update: the new seq is derived from the old version, which must
                    // itself be intact.
                    cell.update(|old| {
                        old.check();
                        Checked::new(old.seq + 1, live)
                    });
                    n += 1;
                    if n % 16 == 0 {
                        thread::yield_now();
                    }
                }
                writes.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
    });

    let (reads, writes) = (
        reads.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed),
    );
    assert!(
        reads > 1000 && writes > 100,
        "stress did not run: {reads} reads, {writes} writes"
    );
    cell.read().check();
    assert_eq!(cell.read().seq, writes, "an update was lost");
    // Every retired version is freed; only the current one is left.
    wait_live(&live, 1);
    drop(cell);
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "dropping the cell must drop its version"
    );
}

#[test]
fn every_retired_version_is_freed() {
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(Rcu::new(Checked::new(0, &live)));
    // Writers on threads that exit, and on this thread; some versions held by readers meanwhile.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (cell, live) = (cell.clone(), live.clone());
            thread::spawn(move || {
                for _ in 0..500 {
                    let held = cell.read();
                    cell.update(|old| Checked::new(old.seq + 1, &live));
                    held.check();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer thread panicked");
    }
    for _ in 0..100 {
        cell.update(|old| Checked::new(old.seq + 1, &live));
    }
    assert_eq!(cell.read().seq, 2100);
    wait_live(&live, 1);
    drop(Arc::try_unwrap(cell).ok().expect("no other owner left"));
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

#[test]
fn synchronize_waits_for_a_reader_still_inside() {
    let cell = Arc::new(Rcu::new(String::from("old")));
    let (entered_tx, entered_rx) = mpsc::channel();
    let (leave_tx, leave_rx) = mpsc::channel::<()>();
    let reader = {
        let cell = cell.clone();
        thread::spawn(move || {
            let guard = cell.read();
            entered_tx.send(()).unwrap();
            // Stay inside until told to leave (or give up, so a broken test cannot hang).
            let _ = leave_rx.recv_timeout(PATIENCE);
            let seen = guard.clone();
            drop(guard);
            seen
        })
    };
    entered_rx
        .recv_timeout(PATIENCE)
        .expect("reader never entered");
    cell.store(String::from("new"));

    let returned = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let syncer = {
        let returned = returned.clone();
        thread::spawn(move || {
            synchronize();
            returned.store(true, Ordering::SeqCst);
            done_tx.send(()).unwrap();
        })
    };
    // While the reader is inside, `synchronize` must not return: give it ample time to do so
    // wrongly. (A correct implementation cannot return here, so this is not timing-dependent.)
    assert!(
        done_rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "synchronize returned while a reader that started before it was still inside"
    );
    // A bounded synchronize from another thread also reports the reader.
    assert!(
        !synchronize_timeout(Duration::from_millis(50)),
        "synchronize_timeout claimed a grace period while a reader was inside"
    );
    assert!(!returned.load(Ordering::SeqCst));

    leave_tx.send(()).unwrap();
    assert_eq!(reader.join().expect("reader panicked"), "old");
    done_rx
        .recv_timeout(PATIENCE)
        .expect("synchronize still blocked after the reader left");
    syncer.join().unwrap();
    assert!(returned.load(Ordering::SeqCst));
}

#[test]
fn synchronize_is_not_delayed_by_readers_that_start_after_it() {
    // Readers that keep entering and leaving must not starve a grace period.
    let cell = Rcu::new(0u64);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let g = cell.read();
                    std::hint::black_box(*g);
                }
            });
        }
        for _ in 0..20 {
            cell.update(|v| v + 1);
            assert!(
                synchronize_timeout(PATIENCE),
                "synchronize starved by readers that started after it"
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
}

#[test]
#[should_panic(expected = "inside an RCU read-side critical section")]
fn synchronize_inside_a_reader_panics_instead_of_deadlocking() {
    let cell = Rcu::new(1);
    let _guard = cell.read();
    synchronize();
}

#[test]
fn writers_are_serialised_so_no_update_is_lost() {
    let cell = Rcu::new(0u64);
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..500 {
                    cell.update(|n| n + 1);
                }
            });
        }
    });
    assert_eq!(*cell.read(), 4000);
}

#[test]
fn try_update_publishes_nothing_on_err() {
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Rcu::new(Checked::new(5, &live));
    let r: Result<(), &str> = cell.try_update(|_| Err("no"));
    assert_eq!(r, Err("no"));
    assert_eq!(cell.read().seq, 5);
    assert_eq!(
        live.load(Ordering::SeqCst),
        1,
        "a declined update must not copy"
    );
    cell.try_update(|old| Ok::<_, ()>(Checked::new(old.seq + 1, &live)))
        .unwrap();
    assert_eq!(cell.read().seq, 6);
}

#[test]
fn a_panicking_update_publishes_nothing_and_leaves_the_cell_usable() {
    let cell = Arc::new(Rcu::new(1));
    let c = cell.clone();
    let r = thread::spawn(move || c.update(|_| panic!("writer failed"))).join();
    assert!(r.is_err());
    assert_eq!(*cell.read(), 1);
    cell.update(|v| v + 1);
    assert_eq!(*cell.read(), 2);
}

#[test]
fn into_inner_get_mut_and_drop_own_the_current_version() {
    let live = Arc::new(AtomicUsize::new(0));
    let mut cell = Rcu::new(Checked::new(1, &live));
    cell.get_mut().seq = 1; // still consistent
    cell.store(Checked::new(2, &live));
    let v = cell.into_inner();
    assert_eq!(v.seq, 2);
    drop(v);
    wait_live(&live, 0);
}

#[test]
fn a_cell_is_two_words_so_arrays_of_cells_stay_dense() {
    assert_eq!(
        std::mem::size_of::<Rcu<[u64; 4]>>(),
        2 * std::mem::size_of::<usize>()
    );
}

#[test]
fn a_qsbr_reader_holds_back_grace_periods_until_its_quiescent_state() {
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(Rcu::new(Checked::new(0, &live)));
    let (tx, rx) = mpsc::channel::<&'static str>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let reader = {
        let cell = cell.clone();
        thread::spawn(move || {
            let mut reader = RcuReader::new();
            let old = reader.read(&cell);
            tx.send("read").unwrap();
            // The writer replaces the version now; ours must stay intact while we are pinned.
            go_rx
                .recv_timeout(PATIENCE)
                .expect("writer never replaced it");
            old.check();
            assert_eq!(old.seq, 0, "a reader's reference changed under it");
            assert_eq!(reader.read(&cell).seq, 1, "a new read sees the new version");
            reader.quiescent();
            tx.send("quiescent").unwrap();
            // Keeps reading and declaring quiescent states until told to go (an epoch advances
            // one step per round of quiescent states, and a grace period takes two).
            while go_rx.recv_timeout(Duration::from_millis(1)).is_err() {
                reader.read(&cell).check();
                reader.quiescent();
            }
            drop(reader);
        })
    };
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), "read");
    cell.store(Checked::new(1, &live));
    assert!(
        !synchronize_timeout(Duration::from_millis(100)),
        "a grace period ended while a QSBR reader that read before it was pinned"
    );
    assert_eq!(
        live.load(Ordering::SeqCst),
        2,
        "the version in use was freed"
    );
    go_tx.send(()).unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), "quiescent");
    wait_live(&live, 1);
    go_tx.send(()).unwrap();
    reader.join().unwrap();
}

#[test]
fn synchronize_while_holding_a_qsbr_reader_panics_instead_of_deadlocking() {
    let r = thread::spawn(|| {
        let _reader = RcuReader::new();
        synchronize();
    })
    .join();
    assert!(
        r.is_err(),
        "synchronize inside a read-side section must panic"
    );
}

#[test]
fn qsbr_readers_never_see_a_torn_or_freed_version_under_concurrent_updates() {
    // 16 readers that stay pinned and declare a quiescent state every 32 reads, against a writer
    // that keeps publishing: every version a reader sees is intact, and everything retired is
    // freed by the end.
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(Rcu::new(Checked::new(0, &live)));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..16)
        .map(|_| {
            let (cell, stop) = (cell.clone(), stop.clone());
            thread::spawn(move || {
                let mut reader = RcuReader::new();
                let mut last = 0;
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let v = reader.read(&cell);
                    v.check();
                    assert!(v.seq >= last, "a version went back in time");
                    last = v.seq;
                    reads += 1;
                    if reads % 32 == 0 {
                        reader.quiescent();
                    }
                }
                reads
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut seq = 0;
    while t0.elapsed() < Duration::from_millis(500) {
        seq += 1;
        cell.store(Checked::new(seq, &live));
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0, "a reader never read");
    }
    assert!(seq > 10, "the writer made no progress against QSBR readers");
    wait_live(&live, 1);
}
