//! LargePool as the `#[global_allocator]` of a threaded program: std's own allocations, thread
//! start and exit (TLS destructors that may allocate), cross-thread frees through channels.

mod common;

use common::{watchdog, Rng};
use scalelock_alloc::LargePool;
use std::time::Duration;

#[global_allocator]
static GLOBAL: LargePool = LargePool::new();

fn filled(len: usize, v: u8) -> Vec<u8> {
    vec![v; len]
}

/// Checks every 509th byte and the last one (full scans are slow in debug builds).
fn intact(b: &[u8], v: u8) -> bool {
    b.iter().step_by(509).all(|&x| x == v) && b.last().map_or(true, |&x| x == v)
}

#[test]
fn a_threaded_workload_runs_with_the_pool_as_global_allocator() {
    let _w = watchdog("global allocator workload", Duration::from_secs(60));
    let (tx, rx) = std::sync::mpsc::channel::<(u8, Vec<u8>)>();
    let workers: Vec<_> = (0..16u8)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(t as u64 + 7);
                let mut keep: Vec<(u8, Vec<u8>)> = Vec::new();
                for i in 0..150 {
                    let len = match rng.below(4) {
                        0 => rng.range(1, 4095),
                        1 | 2 => rng.range(4096, 1 << 20),
                        _ => rng.range(1 << 20, 5 << 20),
                    };
                    let v = (t as usize * 31 + i) as u8;
                    let mut b = filled(len, v);
                    if (4096..=4 << 20).contains(&len) {
                        assert!(GLOBAL.owns(b.as_ptr()), "{len} bytes not pooled");
                    }
                    if rng.below(3) == 0 {
                        // Grow through realloc.
                        let extra = rng.range(1, 300_000);
                        b.resize(len + extra, v);
                    }
                    match rng.below(3) {
                        0 => tx.send((v, b)).unwrap(),
                        1 => keep.push((v, b)),
                        _ => assert!(intact(&b, v)),
                    }
                    if keep.len() > 8 {
                        let (v, b) = keep.swap_remove(rng.below(keep.len() as u64) as usize);
                        assert!(intact(&b, v));
                    }
                }
                // Short-lived threads: their caches must flush on exit, allocating TLS included.
                std::thread::spawn(move || {
                    let s = format!("{:?}", filled(10_000, t));
                    assert!(s.len() > 10_000);
                })
                .join()
                .unwrap();
            })
        })
        .collect();
    drop(tx);
    let mut received = 0;
    for (v, b) in rx {
        assert!(intact(&b, v), "received block corrupted");
        received += 1;
    }
    for w in workers {
        w.join().unwrap();
    }
    assert!(received > 300, "{received}");
    let s = GLOBAL.stats();
    assert!(s.carved_bytes > 0 && s.lost_bytes == 0, "{s:?}");
}
