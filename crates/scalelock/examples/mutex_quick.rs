//! Quick comparison of scalelock's Mutex with std's and parking_lot's, in one run:
//! uncontended lock+unlock cost, and throughput of a short critical section from 1 to 64 threads.
//! `cargo run --release -p scalelock --example mutex_quick` (the `scalelock bench` command is the
//! full version of this).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

trait Lock: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce(&mut [u64; 8]));
}
impl Lock for scalelock::Mutex<[u64; 8]> {
    fn with(&self, f: impl FnOnce(&mut [u64; 8])) {
        f(&mut self.lock())
    }
}
impl Lock for std::sync::Mutex<[u64; 8]> {
    fn with(&self, f: impl FnOnce(&mut [u64; 8])) {
        f(&mut self.lock().unwrap())
    }
}
impl Lock for parking_lot::Mutex<[u64; 8]> {
    fn with(&self, f: impl FnOnce(&mut [u64; 8])) {
        f(&mut self.lock())
    }
}

fn uncontended<L: Lock>(l: &L) -> f64 {
    let n = 5_000_000u64;
    let t0 = Instant::now();
    for _ in 0..n {
        l.with(|d| d[0] = black_box(d[0] + 1));
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn throughput<L: Lock>(l: Arc<L>, threads: usize, dur: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (l, stop, total, barrier) =
                (l.clone(), stop.clone(), total.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    l.with(|d| {
                        for x in d.iter_mut() {
                            *x += 1;
                        }
                    });
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    std::thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    total.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64()
}

fn main() {
    let rounds = 3;
    let mut best = [f64::MAX; 3];
    for _ in 0..rounds {
        best[0] = best[0].min(uncontended(&scalelock::Mutex::new([0u64; 8])));
        best[1] = best[1].min(uncontended(&std::sync::Mutex::new([0u64; 8])));
        best[2] = best[2].min(uncontended(&parking_lot::Mutex::new([0u64; 8])));
    }
    println!(
        "uncontended lock+unlock ns (best of {rounds}): scalelock {:.2}  std {:.2}  parking_lot {:.2}",
        best[0], best[1], best[2]
    );
    let dur = Duration::from_millis(
        std::env::var("DUR_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(700),
    );
    println!(
        "{:>8} {:>14} {:>14} {:>14}",
        "threads", "scalelock", "std", "parking_lot"
    );
    let mut base = [0.0; 3];
    for &t in &[1usize, 2, 4, 8, 64] {
        let s = throughput(Arc::new(scalelock::Mutex::new([0u64; 8])), t, dur);
        let d = throughput(Arc::new(std::sync::Mutex::new([0u64; 8])), t, dur);
        let p = throughput(Arc::new(parking_lot::Mutex::new([0u64; 8])), t, dur);
        if t == 2 {
            base = [s, d, p];
        }
        println!("{t:>8} {s:>14.0} {d:>14.0} {p:>14.0}");
        if t == 64 {
            println!(
                "64 threads / 2 threads: scalelock {:.2}  std {:.2}  parking_lot {:.2}",
                s / base[0],
                d / base[1],
                p / base[2]
            );
        }
    }
}
