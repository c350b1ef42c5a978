//! Quick measurement for the rwlock family (until the bench covers it):
//!
//! 1. uncontended `RwLock` read + unlock against `Mutex` lock + unlock (target: <= 1.0x);
//! 2. read-mostly throughput (0.1% writes) at 1 and 2 threads for `BiasedRwLock`, scalelock's
//!    `RwLock`, crossbeam's `ShardedLock`, std's `RwLock` and parking_lot's `RwLock` (target:
//!    `BiasedRwLock` 2 threads >= 1.9x its 1 thread, and >= `ShardedLock`), and the same loop
//!    without writes, which shows how close to 2x two threads get on this machine at all;
//! 3. 10% and 25% writes at 2 threads, `BiasedRwLock` against `RwLock` (target: within a few
//!    percent).
//!
//! Part 2 also prints what a write costs at 2 threads in thread time (the writer's, and the
//! stall it causes the other reader), net of what two threads lose without writes, next to what
//! a 2T/1T of 1.9x would allow; the same for a floor row measured in the same rounds (no lock:
//! readers announce themselves as deferred readers do, writers only move the data), which shows
//! what is left of that allowance once the data's own cache line has moved; and the one-way
//! hand-off of a cache line between the two threads, measured before and after. A revocation is made of a few such hand-offs (the writer
//! announces and looks, the reader sees the writer and then its release), so when reads cost a
//! few ns the ratio is set by the hand-off latency, which on a VM changes with where the
//! hypervisor runs the two vCPUs (this 2-core VM has shown 25 ns and 200 ns within minutes).
//!
//! `cargo run --release -p scalelock --example rwlock_quick [-- --ms 300]`
//!
//! Figures are ratios within one run: absolute times on a shared machine are not comparable.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

trait Lock: Send + Sync + 'static {
    const NAME: &'static str;
    fn new() -> Self;
    fn read(&self) -> u64;
    fn write(&self);
}

macro_rules! lock_impl {
    ($ty:ty, $name:expr, $read:ident, $write:ident) => {
        impl Lock for $ty {
            const NAME: &'static str = $name;
            fn new() -> Self {
                <$ty>::new(0)
            }
            #[inline]
            fn read(&self) -> u64 {
                *self.$read().unwrap_or_std()
            }
            #[inline]
            fn write(&self) {
                *self.$write().unwrap_or_std() += 1;
            }
        }
    };
}

/// Lets one macro serve locks whose guards come bare or in a `LockResult`.
trait UnwrapOrStd {
    type Out;
    fn unwrap_or_std(self) -> Self::Out;
}
impl<G> UnwrapOrStd for std::sync::LockResult<G> {
    type Out = G;
    fn unwrap_or_std(self) -> G {
        self.unwrap()
    }
}
macro_rules! bare_guard {
    ($($g:ty),*) => {$(
        impl<'a> UnwrapOrStd for $g {
            type Out = $g;
            fn unwrap_or_std(self) -> $g { self }
        }
    )*};
}
bare_guard!(
    scalelock::BiasedRwLockReadGuard<'a, u64>,
    scalelock::BiasedRwLockWriteGuard<'a, u64>,
    scalelock::RwLockReadGuard<'a, u64>,
    scalelock::RwLockWriteGuard<'a, u64>,
    parking_lot::RwLockReadGuard<'a, u64>,
    parking_lot::RwLockWriteGuard<'a, u64>
);

lock_impl!(
    scalelock::BiasedRwLock<u64>,
    "scalelock-biased",
    read,
    write
);
lock_impl!(scalelock::RwLock<u64>, "scalelock", read, write);
lock_impl!(
    crossbeam_utils::sync::ShardedLock<u64>,
    "crossbeam-sharded",
    read,
    write
);
lock_impl!(std::sync::RwLock<u64>, "std", read, write);

/// Not a lock: a floor for one. Each read announces itself with an atomic exchange on a line of
/// the reader's own (as a deferred read of `BiasedRwLock` does in its CPU's row), loads the data
/// and leaves with a store; a write only adds to the data, with no revocation and no exclusion.
/// What a write costs here is the data's cache line moving to the writer and back to the other
/// reader: any lock whose data has a line of its own (as lock_api's guards' data does) pays that,
/// and more to tell readers of the write.
struct Floor(std::sync::atomic::AtomicU64);
thread_local! {
    static ANNOUNCED: std::sync::atomic::AtomicU64 = const { std::sync::atomic::AtomicU64::new(0) };
}
impl Lock for Floor {
    const NAME: &'static str = "floor (no lock)";
    fn new() -> Self {
        Floor(std::sync::atomic::AtomicU64::new(0))
    }
    #[inline]
    fn read(&self) -> u64 {
        ANNOUNCED.with(|a| {
            a.swap(1, Ordering::SeqCst);
            let v = self.0.load(Ordering::Acquire);
            a.store(0, Ordering::Release);
            v
        })
    }
    #[inline]
    fn write(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}
lock_impl!(parking_lot::RwLock<u64>, "parking_lot", read, write);

/// Ops per second of `threads` threads doing reads with one write in 1000, for `ms`.
fn read_mostly<L: Lock>(threads: usize, ms: u64) -> f64 {
    mixed::<L>(threads, ms, 1000)
}

/// Ops per second of `threads` threads doing reads with one write in `every`, for `ms`.
fn mixed<L: Lock>(threads: usize, ms: u64, every: u32) -> f64 {
    let lock = Arc::new(L::new());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (lock, stop, start) = (lock.clone(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..1000 {
                        if i % every == every - 1 {
                            lock.write();
                        } else {
                            black_box(lock.read());
                        }
                    }
                    ops += 1000;
                }
                ops
            })
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(ms));
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    ops as f64 / t0.elapsed().as_secs_f64()
}

/// Best of `runs` of each of two measurements, taken in turn (noise on a shared machine only
/// ever makes a run slower, and it comes in phases of seconds: alternating gives both the same
/// chance of a quiet phase).
fn best_of_pair(runs: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (f64, f64) {
    (0..runs).fold((0.0, 0.0), |(ba, bb), _| (ba.max(a()), bb.max(b())))
}

/// Best of `runs` of each measurement, all taken in turn within each round (see `best_of_pair`).
fn best_of_all(runs: usize, measurements: &mut [&mut dyn FnMut() -> f64]) -> Vec<f64> {
    let mut best = vec![0.0f64; measurements.len()];
    for _ in 0..runs {
        for (b, m) in best.iter_mut().zip(measurements.iter_mut()) {
            *b = b.max(m());
        }
    }
    best
}

/// Rounds of each measurement (alternated, best kept).
const ROUNDS: usize = 5;

/// One-way hand-off of a cache line between two threads, in ns (best of a few runs): each
/// thread waits until a shared counter reaches its parity, then stores the next value.
fn handoff_ns() -> f64 {
    use std::sync::atomic::AtomicU64;
    #[repr(align(128))]
    struct Line(AtomicU64);
    const ROUND_TRIPS: u64 = 200_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let line = Arc::new(Line(AtomicU64::new(0)));
        let start = Arc::new(Barrier::new(2));
        // Each thread waits for its parity, then passes the line on.
        let pass = |line: &Line, first: u64| {
            for i in 0..ROUND_TRIPS {
                let mine = 2 * i + first;
                while line.0.load(Ordering::Acquire) != mine {
                    std::hint::spin_loop();
                }
                line.0.store(mine + 1, Ordering::Release);
            }
        };
        let other = {
            let (line, start) = (line.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                pass(&line, 1);
            })
        };
        start.wait();
        let t0 = Instant::now();
        pass(&line, 0);
        other.join().unwrap();
        best = best.min(t0.elapsed().as_nanos() as f64 / (2 * ROUND_TRIPS) as f64);
    }
    best
}

fn ns_per_op(iters: u64, mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

fn main() {
    let ms: u64 = std::env::args()
        .skip_while(|a| a != "--ms")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);

    // 1. Uncontended cost, interleaved runs, best of each.
    let rw = scalelock::RwLock::new(0u64);
    let m = scalelock::Mutex::new(0u64);
    let b = scalelock::BiasedRwLock::new(0u64);
    // Many short interleaved samples, minimum of each: on a shared machine a preemption only
    // ever makes a sample slower, and short samples are often untouched.
    let iters = 1_000_000;
    let rounds = 60;
    let (mut read_ns, mut lock_ns, mut biased_ns) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..rounds {
        read_ns = read_ns.min(ns_per_op(iters, || {
            black_box(*black_box(&rw).read());
        }));
        lock_ns = lock_ns.min(ns_per_op(iters, || {
            black_box(*black_box(&m).lock());
        }));
        biased_ns = biased_ns.min(ns_per_op(iters, || {
            black_box(*black_box(&b).read());
        }));
    }
    println!("uncontended (best of {rounds} x {iters}):");
    println!("  scalelock::RwLock read+unlock        {read_ns:6.2} ns");
    println!("  scalelock::Mutex lock+unlock         {lock_ns:6.2} ns");
    let ratio = read_ns / lock_ns;
    println!("  ratio                                {ratio:6.2}x  (target <= 1.0x)");
    println!("  scalelock::BiasedRwLock read+unlock  {biased_ns:6.2} ns  (biased: own row only)");

    // 2. Read-mostly scaling.
    println!(
        "\nread-mostly, 0.1% writes, best of {ROUNDS} x {ms} ms, 1 and 2 threads in turn (Mops/s):"
    );
    println!(
        "  {:<18} {:>9} {:>9} {:>8}",
        "lock", "1 thread", "2 threads", "2T/1T"
    );
    fn print_row(name: &str, one: f64, two: f64) {
        println!(
            "  {:<18} {:>9.1} {:>9.1} {:>7.2}x",
            name,
            one / 1e6,
            two / 1e6,
            two / one
        );
    }
    fn row<L: Lock>(ms: u64) -> (f64, f64) {
        let (one, two) = best_of_pair(
            ROUNDS,
            || read_mostly::<L>(1, ms),
            || read_mostly::<L>(2, ms),
        );
        print_row(L::NAME, one, two);
        (one, two)
    }
    let handoff_before = handoff_ns();
    // BiasedRwLock and the floor, with and without writes, all in the same rounds: the VM's
    // phases (see above) come and go within seconds, and the comparison needs them in the same.
    let m = best_of_all(
        ROUNDS,
        &mut [
            &mut || read_mostly::<scalelock::BiasedRwLock<u64>>(1, ms),
            &mut || read_mostly::<scalelock::BiasedRwLock<u64>>(2, ms),
            &mut || read_mostly::<Floor>(1, ms),
            &mut || read_mostly::<Floor>(2, ms),
            &mut || mixed::<scalelock::BiasedRwLock<u64>>(1, ms, u32::MAX),
            &mut || mixed::<scalelock::BiasedRwLock<u64>>(2, ms, u32::MAX),
            &mut || mixed::<Floor>(1, ms, u32::MAX),
            &mut || mixed::<Floor>(2, ms, u32::MAX),
        ],
    );
    let (b1, b2, z1, z2, n1, n2, nz1, nz2) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]);
    print_row(<scalelock::BiasedRwLock<u64> as Lock>::NAME, b1, b2);
    let _ = row::<scalelock::RwLock<u64>>(ms);
    let (_, s2) = row::<crossbeam_utils::sync::ShardedLock<u64>>(ms);
    let _ = row::<std::sync::RwLock<u64>>(ms);
    let _ = row::<parking_lot::RwLock<u64>>(ms);
    print_row(Floor::NAME, z1, z2);
    println!(
        "\nscalelock-biased: 2T/1T = {:.2}x (target >= 1.9x); 2T vs crossbeam-sharded = {:.2}x \
         (target >= 1.0x)",
        b2 / b1,
        b2 / s2
    );
    // What this machine allows the same loop without writes: the part of the gap to 2x that is
    // not the writes' (two threads never run quite twice as fast on a shared VM).
    println!(
        "  the same loop with no writes (this machine's ceiling): 2T/1T = {:.2}x (floor: {:.2}x)",
        n2 / n1,
        nz2 / nz1
    );
    // Thread time per 1000 operations beyond one thread's, at 2 threads: with writes (one per
    // 1000 operations per thread) and without; the difference is what a write costs both
    // threads together (each thread does one write and suffers the other's).
    let extra = |one: f64, two: f64| 1e12 * (2.0 / two - 1.0 / one);
    let per_write = extra(b1, b2) - extra(n1, n2);
    // What a 2T/1T of 1.9x would allow, with this ceiling: t2 <= 2 t1 / 1.9 per operation.
    let allowed = 1e12 * (2.0 / (1.9 * b1) - 1.0 / b1) - extra(n1, n2);
    // The same for the floor: what moving the data alone costs a write.
    let floor = extra(z1, z2) - extra(nz1, nz2);
    println!(
        "  at 2 threads a write costs {per_write:.0} ns of thread time (both threads, net of the \
         ceiling); 1.9x would allow {allowed:.0} ns\n  the floor row's write costs {floor:.0} ns \
         (no lock: the data's line moving to the writer and back); a lock adds what telling \
         the readers costs\n  one-way cache-line hand-off between the two threads: \
         {handoff_before:.0} ns before these rows, {:.0} ns after",
        handoff_ns()
    );

    // 3. Frequent writes: the bias stays on only while it pays, else it fades out and leaves
    // BiasedRwLock close to RwLock.
    for (every, pct) in [(10, "10%"), (4, "25%")] {
        println!(
            "\nwrite-heavy, {pct} writes, 2 threads, best of {ROUNDS} x {ms} ms, in turn (Mops/s):"
        );
        let (bw, rw) = best_of_pair(
            ROUNDS,
            || mixed::<scalelock::BiasedRwLock<u64>>(2, ms, every),
            || mixed::<scalelock::RwLock<u64>>(2, ms, every),
        );
        println!(
            "  scalelock-biased {:.1}, scalelock {:.1}: biased/plain = {:.2}x (target >= ~0.95x)",
            bw / 1e6,
            rw / 1e6,
            bw / rw
        );
    }
}
