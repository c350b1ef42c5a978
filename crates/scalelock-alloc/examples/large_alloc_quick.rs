//! Quick measurement: large allocations (16 KiB – 1 MiB), touched, freed, a quarter of them by
//! another thread. Compares the system allocator (glibc), mimalloc and `LargePool`, each used as
//! an explicit allocator instance, at 1 and 2 threads (or the counts given as arguments).
//!
//! ```text
//! cargo run --release -p scalelock-alloc --example large_alloc_quick [-- THREADS.. [--ms N] [--rounds N] [--only NAME]]
//! ```
//!
//! The same workload as `scalelock bench --workload large-alloc`: each thread keeps its last 4
//! blocks alive; every operation allocates a block of a uniformly random size, writes one byte
//! per page, and retires the oldest block: freed locally, or (one in four) sent in batches of 8
//! to the next thread, which frees it (at most two batches in flight; a thread whose neighbour
//! lags frees the batch itself). Reports the median of `--rounds` runs (allocators interleaved,
//! so that machine noise hits all of them): operations per second, CPU time per operation (user +
//! system, getrusage), system time per operation, the cores the run actually got (CPU time per
//! wall second: on a shared machine, less than the thread count), the speedup over the first
//! thread count, and the CPU-bound speedup (thread ratio x CPU per operation at the first count /
//! CPU per operation here: what the threads reach with a free core each).

use scalelock_alloc::LargePool;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MIN: usize = 16 << 10;
const MAX: usize = 1 << 20;
const WINDOW: usize = 4;
const BATCH: usize = 8;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

#[derive(Clone)]
struct Result {
    ops_per_sec: f64,
    cpu_ns_per_op: f64,
    sys_ns_per_op: f64,
}

fn run<A: GlobalAlloc + Sync>(a: &A, threads: usize, dur: Duration) -> Result {
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..threads)
        .map(|_| mpsc::sync_channel::<Vec<usize>>(2))
        .unzip();
    let (c0, t0) = (cpu_times(), Instant::now());
    std::thread::scope(|s| {
        for (t, rx) in rxs.into_iter().enumerate() {
            let tx = txs[(t + 1) % threads].clone();
            let (stop, ops) = (&stop, &ops);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x1234_5678_9ABC));
                let mut window = [(0usize, 0usize); WINDOW];
                let mut batch = Vec::with_capacity(BATCH);
                let mut n = 0u64;
                let free = |p: usize, size: usize| {
                    // SAFETY: allocated by `a` with this layout, freed once.
                    unsafe { a.dealloc(p as *mut u8, Layout::from_size_align_unchecked(size, 8)) }
                };
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let size = MIN + (rng.next() as usize) % (MAX - MIN + 1);
                        // SAFETY: non-zero size, valid alignment.
                        let p = unsafe { a.alloc(Layout::from_size_align_unchecked(size, 8)) };
                        assert!(!p.is_null());
                        let mut off = 0;
                        while off < size {
                            // SAFETY: inside the block.
                            unsafe { p.add(off).write_volatile(n as u8) };
                            off += 4096;
                        }
                        let slot = (n as usize) % WINDOW;
                        let (old, old_size) = window[slot];
                        window[slot] = (p as usize, size);
                        if old != 0 {
                            if rng.next() % 4 == 0 {
                                batch.push(old);
                                batch.push(old_size);
                                if batch.len() == 2 * BATCH {
                                    // At most 4 batches in flight: when the next thread lags
                                    // (descheduled), free locally instead of piling up memory.
                                    let b = std::mem::replace(
                                        &mut batch,
                                        Vec::with_capacity(2 * BATCH),
                                    );
                                    if let Err(mpsc::TrySendError::Full(b)) = tx.try_send(b) {
                                        for pair in b.chunks(2) {
                                            free(pair[0], pair[1]);
                                        }
                                    }
                                }
                            } else {
                                free(old, old_size);
                            }
                        }
                        // Poll the inbox every 16 operations: polling is a shared atomic, not
                        // what is measured here.
                        if n % 16 == 0 {
                            while let Ok(b) = rx.try_recv() {
                                for pair in b.chunks(2) {
                                    free(pair[0], pair[1]);
                                }
                            }
                        }
                        n += 1;
                    }
                }
                ops.fetch_add(n, Ordering::Relaxed);
                for (p, size) in window {
                    if p != 0 {
                        free(p, size);
                    }
                }
                for pair in batch.chunks(2) {
                    free(pair[0], pair[1]);
                }
                drop(tx);
                // Drain what the previous thread still sends until it is done.
                for b in rx {
                    for pair in b.chunks(2) {
                        free(pair[0], pair[1]);
                    }
                }
            });
        }
        drop(txs);
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
    });
    let (wall, c1) = (t0.elapsed(), cpu_times());
    let n = ops.load(Ordering::Relaxed) as f64;
    let cpu = (c1.0 - c0.0) + (c1.1 - c0.1);
    Result {
        ops_per_sec: n / wall.as_secs_f64(),
        cpu_ns_per_op: cpu.as_nanos() as f64 / n,
        sys_ns_per_op: (c1.1 - c0.1).as_nanos() as f64 / n,
    }
}

static POOL: LargePool = LargePool::new();
static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut threads = Vec::new();
    let mut ms = 700u64;
    let mut rounds = 3usize;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ms" => ms = args.next().and_then(|v| v.parse().ok()).expect("--ms N"),
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            "--only" => only = args.next(),
            t => threads.push(t.parse::<usize>().expect("thread count")),
        }
    }
    if threads.is_empty() {
        threads = vec![1, 2];
    }
    let names = ["system", "mimalloc", "scalelock-pool"];
    let dur = Duration::from_millis(ms);
    let once = |i: usize, t: usize, d: Duration| match i {
        0 => run(&System, t, d),
        1 => run(&MIMALLOC, t, d),
        _ => run(&POOL, t, d),
    };
    // Warm every allocator up once.
    for (i, name) in names.iter().enumerate() {
        if only.as_deref().map_or(true, |o| o == *name) {
            once(
                i,
                *threads.iter().max().unwrap(),
                Duration::from_millis(200),
            );
        }
    }
    println!(
        "large-alloc quick: {}..{} KiB, touch 1 byte/page, 1/4 freed by another thread; median of {rounds} x {ms} ms; {} CPUs",
        MIN >> 10,
        MAX >> 10,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<16} {:>7} {:>10} {:>10} {:>10} {:>6} {:>9} {:>10}",
        "allocator", "threads", "ops/s", "cpu ns/op", "sys ns/op", "cores", "vs 1 thr", "CPU-bound"
    );
    let mut table = vec![vec![Vec::new(); threads.len()]; names.len()];
    for _ in 0..rounds {
        for (j, &t) in threads.iter().enumerate() {
            for (i, row) in table.iter_mut().enumerate() {
                if only.as_deref().is_some_and(|o| o != names[i]) {
                    row[j].push(Result {
                        ops_per_sec: 0.0,
                        cpu_ns_per_op: 0.0,
                        sys_ns_per_op: 0.0,
                    });
                    continue;
                }
                row[j].push(once(i, t, dur));
            }
        }
    }
    let median = |v: &mut Vec<Result>| {
        v.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        v.swap_remove(v.len() / 2)
    };
    let mut best_other = vec![0f64; threads.len()];
    let mut pool_ops = vec![0f64; threads.len()];
    for (i, row) in table.iter_mut().enumerate() {
        let mut base = Result {
            ops_per_sec: 0.0,
            cpu_ns_per_op: 0.0,
            sys_ns_per_op: 0.0,
        };
        for (j, cell) in row.iter_mut().enumerate() {
            let r = median(cell);
            if j == 0 {
                base = r.clone();
            }
            // cores: CPU time the run got per second of wall time (the machine's share for us).
            // CPU-bound: the speedup over one thread these threads would reach with a core
            // each, from the CPU time an operation cost them.
            println!(
                "{:<16} {:>7} {:>10.0} {:>10.0} {:>10.0} {:>6.2} {:>8.2}x {:>9.2}x",
                names[i],
                threads[j],
                r.ops_per_sec,
                r.cpu_ns_per_op,
                r.sys_ns_per_op,
                r.ops_per_sec * r.cpu_ns_per_op / 1e9,
                r.ops_per_sec / base.ops_per_sec,
                threads[j] as f64 / threads[0] as f64 * base.cpu_ns_per_op / r.cpu_ns_per_op
            );
            if i == 2 {
                pool_ops[j] = r.ops_per_sec;
            } else {
                best_other[j] = best_other[j].max(r.ops_per_sec);
            }
        }
    }
    for (j, t) in threads.iter().enumerate() {
        println!(
            "threads {t}: scalelock-pool / best other = {:.2}x",
            pool_ops[j] / best_other[j]
        );
    }
    // The allocator alone: an alloc/free pair of 64 KiB, nothing touched, one thread.
    for (i, name) in names.iter().enumerate() {
        if only.as_deref().is_some_and(|o| o != *name) {
            continue;
        }
        let l = Layout::from_size_align(64 << 10, 8).unwrap();
        let pair = |a: &dyn GlobalAlloc| {
            let t = Instant::now();
            for _ in 0..200_000 {
                // SAFETY: non-zero size; freed at once.
                unsafe { a.dealloc(std::hint::black_box(a.alloc(l)), l) };
            }
            t.elapsed().as_nanos() as f64 / 200_000.0
        };
        let ns = match i {
            0 => pair(&System),
            1 => pair(&MIMALLOC),
            _ => pair(&POOL),
        };
        println!("{name:<16} alloc+free pair of 64 KiB, untouched: {ns:.1} ns");
    }
    let s = POOL.stats();
    println!(
        "pool: carved {} MiB, cached {} MiB, purged {} MiB in total",
        s.carved_bytes >> 20,
        s.cached_bytes >> 20,
        s.purged_bytes >> 20
    );
}
