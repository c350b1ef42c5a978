//! What an RCU read costs, next to the locks a reader would otherwise take.
//!
//! `cargo run --release -p scalelock --example rcu_read_cost [millis-per-case]`
//!
//! Each case reads a small value (`[u64; 4]`) in a tight loop for a fixed time and reports the
//! **CPU time per read** (each thread's own CPU clock, so that other processes sharing the machine
//! do not inflate it): alone (1 thread) and with every thread reading the same cell at once (as
//! many threads as CPUs). A read that writes a shared cache line costs more CPU per read as
//! threads are added (the line bounces between cores); an RCU read should not.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use scalelock::rcu::Rcu;
use scalelock::Mutex;

type Value = [u64; 4];

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `read` on `threads` threads for `dur`; returns CPU ns per read.
fn measure(threads: usize, dur: Duration, read: &(dyn Fn() -> u64 + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let cpu = AtomicU64::new(0);
    let start = Barrier::new(threads + 1);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                start.wait();
                let cpu0 = thread_cpu_ns();
                let mut n = 0u64;
                let mut sink = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        sink = sink.wrapping_add(read());
                    }
                    n += 256;
                }
                black_box(sink);
                cpu.fetch_add(thread_cpu_ns() - cpu0, Ordering::Relaxed);
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
    });
    cpu.load(Ordering::Relaxed) as f64 / total.load(Ordering::Relaxed) as f64
}

fn main() {
    let ms = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let dur = Duration::from_millis(ms);
    let cpus = thread::available_parallelism().map_or(2, |n| n.get());

    let rcu = Rcu::new([1u64, 2, 3, 4]);
    let mutex = Mutex::new([1u64, 2, 3, 4]);
    let std_rw = std::sync::RwLock::new([1u64, 2, 3, 4]);
    let sum = |v: &Value| v.iter().sum::<u64>();

    let outer = || sum(&rcu.read());
    let nested_guard = || {
        // Emulates a read inside an enclosing read-side critical section.
        let _outer = rcu.read();
        let mut s = 0;
        for _ in 0..16 {
            s += sum(&rcu.read());
        }
        s / 16
    };
    let cases: [(&str, &(dyn Fn() -> u64 + Sync), u64); 4] = [
        ("rcu read (outermost)", &outer, 1),
        ("rcu read (nested, 16 per outer)", &nested_guard, 17),
        ("scalelock Mutex lock", &|| sum(&mutex.lock()), 1),
        ("std RwLock read", &|| sum(&std_rw.read().unwrap()), 1),
    ];
    println!("CPU ns per read");
    println!(
        "{:<34} {:>10} {:>12}",
        "case",
        "1 thread",
        format!("{cpus} threads")
    );
    for (name, f, reads) in cases {
        let one = measure(1, dur, f) / reads as f64;
        let all = measure(cpus, dur, f) / reads as f64;
        println!("{name:<34} {one:>10.1} {all:>12.1}");
    }
}
