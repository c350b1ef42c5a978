//! Resident memory: a freed burst goes back to the OS after decay; `alloc_zeroed` of known-zero
//! blocks does not touch them. One test per binary file, because RSS is per process.

mod common;

use common::{rss_bytes, watchdog};
use scalelock_alloc::{Config, LargePool};
use std::alloc::{GlobalAlloc, Layout, System};
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

#[test]
fn rss_falls_back_after_a_freed_burst_and_zeroed_allocations_do_not_touch_known_zero_pages() {
    let _w = watchdog("rss test", Duration::from_secs(60));
    let pool: &'static LargePool = Box::leak(Box::new(LargePool::with_config(
        System,
        Config::new().retain_bytes(8 * MIB).decay_ms(50),
    )));
    let l = Layout::from_size_align(512 << 10, 8).unwrap();
    let base = rss_bytes();

    // A burst of 128 MiB, every page written, by 8 threads; half of it freed by another thread.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<usize>>();
    let all_allocated: &'static std::sync::Barrier =
        Box::leak(Box::new(std::sync::Barrier::new(9)));
    let measured: &'static std::sync::Barrier = Box::leak(Box::new(std::sync::Barrier::new(9)));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                // SAFETY: non-zero size; blocks are freed once, here or by the receiver.
                let ps: Vec<usize> = (0..32)
                    .map(|_| unsafe {
                        let p = pool.alloc(l);
                        p.write_bytes(0x5A, l.size());
                        p as usize
                    })
                    .collect();
                all_allocated.wait();
                measured.wait();
                let (mine, theirs) = ps.split_at(16);
                tx.send(theirs.to_vec()).unwrap();
                for &p in mine {
                    // SAFETY: as above.
                    unsafe { pool.dealloc(p as *mut u8, l) };
                }
            })
        })
        .collect();
    drop(tx);
    all_allocated.wait();
    let peak = rss_bytes();
    measured.wait();
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        peak >= base + 120 * MIB,
        "burst not resident? base {base} peak {peak}"
    );
    let freer = std::thread::spawn(move || {
        for ps in rx {
            for p in ps {
                // SAFETY: sent by its allocating thread, freed once.
                unsafe { pool.dealloc(p as *mut u8, l) };
            }
        }
    });
    freer.join().unwrap();

    // Other work on the pool drives decay; the burst must go back within a bounded time.
    let small = Layout::from_size_align(8 << 10, 8).unwrap();
    let start = Instant::now();
    while rss_bytes() > base + 24 * MIB {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "RSS did not fall: base {} MiB, peak {} MiB, now {} MiB, {:?}",
            base / MIB,
            peak / MIB,
            rss_bytes() / MIB,
            pool.stats()
        );
        for _ in 0..2048 {
            // SAFETY: non-zero size; freed at once.
            unsafe { pool.dealloc(pool.alloc(small), small) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = pool.stats();
    assert!(s.purged_bytes >= 100 * MIB as u64, "{s:?}");
    eprintln!(
        "base {} MiB, peak {} MiB, after decay {} MiB in {:?}",
        base / MIB,
        peak / MIB,
        rss_bytes() / MIB,
        start.elapsed()
    );

    // 64 MiB of zeroed blocks, all known zero (purged or fresh): no page is touched.
    let before = rss_bytes();
    // SAFETY: non-zero size; each block freed once.
    let ps: Vec<_> = (0..128).map(|_| unsafe { pool.alloc_zeroed(l) }).collect();
    let after = rss_bytes();
    assert!(
        after < before + 8 * MIB,
        "alloc_zeroed touched pages: {before} -> {after}"
    );
    for &p in &ps {
        // SAFETY: 512 KiB blocks.
        unsafe {
            assert_eq!(*p, 0);
            assert_eq!(*p.add(l.size() - 1), 0);
        }
    }
    for p in ps {
        // SAFETY: as above.
        unsafe { pool.dealloc(p, l) };
    }
}
