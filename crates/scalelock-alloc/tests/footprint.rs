//! The footprint promise of the crate docs, with the default settings: a burst of 1 GiB of
//! 1 MiB blocks, freed by another thread, is back under 10% of the peak within the decay time,
//! while some thread keeps using the pool. One test in this binary, because RSS is per process.

mod common;

use common::{rss_bytes, watchdog};
use scalelock_alloc::{Config, LargePool};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;
const BLOCKS: usize = 1024;

/// How late the check may run past the decay time: the idle traffic's period (10 ms), the
/// coarse clock's tick (4 ms), one `madvise` of a GiB, and the scheduler of a loaded 2-core
/// machine.
const SLACK: Duration = Duration::from_millis(250);

#[test]
fn a_gib_burst_freed_by_another_thread_is_back_under_a_tenth_of_the_peak_within_the_decay_time() {
    let _w = watchdog("footprint", Duration::from_secs(60));
    let pool: &'static LargePool = Box::leak(Box::new(LargePool::new()));
    let decay = Duration::from_millis(Config::new().decay_ms);
    let l = Layout::from_size_align(MIB, 8).unwrap();

    // Allocating thread: 1 GiB, every page written.
    let (tx, rx) = mpsc::channel::<Vec<usize>>();
    std::thread::spawn(move || {
        let blocks: Vec<usize> = (0..BLOCKS)
            .map(|i| {
                // SAFETY: non-zero size; the block is written inside its bounds and freed once,
                // by the freeing thread.
                unsafe {
                    let p = pool.alloc(l);
                    assert!(!p.is_null());
                    for off in (0..MIB).step_by(4096) {
                        p.add(off).write(i as u8);
                    }
                    p as usize
                }
            })
            .collect();
        tx.send(blocks).unwrap();
    })
    .join()
    .unwrap();
    let peak = rss_bytes();
    assert!(
        peak >= BLOCKS * MIB,
        "burst not resident: {} MiB",
        peak / MIB
    );

    // Freeing thread: frees all of it, then stays alive (its cache is not flushed by an exit).
    let (freed_tx, freed_rx) = mpsc::channel::<Instant>();
    let (exit_tx, exit_rx) = mpsc::channel::<()>();
    let freer = std::thread::spawn(move || {
        for p in rx.recv().unwrap() {
            // SAFETY: allocated above with this layout, freed once.
            unsafe { pool.dealloc(p as *mut u8, l) };
        }
        freed_tx.send(Instant::now()).unwrap();
        exit_rx.recv().unwrap();
    });
    let freed = freed_rx.recv().unwrap();

    // This thread: a server idle but alive, one 64 KiB block every 10 ms.
    let small = Layout::from_size_align(64 << 10, 8).unwrap();
    let limit = peak / 10;
    let back = loop {
        if rss_bytes() < limit {
            break freed.elapsed();
        }
        assert!(
            freed.elapsed() <= decay + SLACK,
            "RSS {} MiB after {:?} (peak {} MiB, decay time {decay:?}): {:?}",
            rss_bytes() / MIB,
            freed.elapsed(),
            peak / MIB,
            pool.stats()
        );
        // SAFETY: non-zero size; written inside its bounds, freed at once.
        unsafe {
            let p = pool.alloc(small);
            p.write(1);
            pool.dealloc(p, small);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let s = pool.stats();
    assert!(s.purged_bytes >= (BLOCKS * MIB - limit) as u64, "{s:?}");
    eprintln!(
        "peak {} MiB, under {} MiB {back:?} after the last free (decay time {decay:?})",
        peak / MIB,
        limit / MIB
    );
    exit_tx.send(()).unwrap();
    freer.join().unwrap();
}
