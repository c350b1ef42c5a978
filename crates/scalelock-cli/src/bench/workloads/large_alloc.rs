//! `large-alloc`: allocations from 16 KiB to 1 MiB, touched, freed, a quarter by another thread.
//!
//! Seed 000 (MySQL on OSv): every query allocates a few buffers above a page, and OSv served them
//! from `malloc_large` under one global sleeping mutex. glibc has the same shape above its mmap
//! threshold (an `mmap`/`munmap` pair and fresh page faults per allocation), jemalloc caches only
//! up to 32 KiB per thread, tcmalloc sends anything over 256 KiB to one locked page heap.
//!
//! Each thread keeps its last 4 blocks alive. One operation allocates a block of a uniformly
//! random size in 16 KiB..=1 MiB, writes one byte per 4 KiB page, and retires the oldest block:
//! freed by this thread, or (one in four) passed in batches of 8 to the next thread, which frees
//! it (at most 2 batches wait in a thread's inbox; a thread whose neighbour lags frees the batch
//! itself). A thread holds at most 28 blocks, about 14 MiB, so 128 threads stay under 2 GiB.
//! Allocation latency is sampled.
//!
//! Allocators are explicit instances, not the global allocator: `system` (glibc), `mimalloc`,
//! `jemalloc` (tikv-jemallocator) and `scalelock-pool` (one `scalelock_alloc::LargePool` over
//! `System`, kept from point to point like the others' state).
//!
//! Beyond the common fields, each point measures its system CPU time per operation and how far
//! the process's peak RSS during the point rose above its RSS at the start (allocators measured
//! earlier keep what they retain, so the absolute peak would blame them on later ones). Both go
//! into the JSON record's `params`: `sys_ns_per_op`, `peak_rss_growth_mib` (and
//! `rss_at_start_mib`).

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, Measurement, Trial};
use crossbeam_utils::CachePadded;
use scalelock_alloc::LargePool;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::time::Duration;

const MIN: usize = 16 << 10;
const MAX: usize = 1 << 20;
const WINDOW: usize = 4;
const BATCH: usize = 8;
const INBOX_BATCHES: usize = 2;
const REMOTE_ONE_IN: u64 = 4;
const POLL_EVERY: u64 = 16;

/// The allocators compared, as they appear in the `lock` column.
pub const ALLOCATORS: [&str; 4] = ["system", "mimalloc", "jemalloc", "scalelock-pool"];

/// See the module docs.
pub struct LargeAlloc;

impl Workload for LargeAlloc {
    fn name(&self) -> &'static str {
        "large-alloc"
    }

    fn about(&self) -> &'static str {
        "Allocations of 16 KiB to 1 MiB (uniform), one byte written per page, 4 live per thread, \
         a quarter freed by another thread; glibc, mimalloc, jemalloc and the scalelock pool as \
         explicit allocator instances. Seed 000: MySQL's large mallocs under one global mutex."
    }

    fn columns(&self) -> Vec<&'static str> {
        ALLOCATORS.to_vec()
    }

    fn ours(&self) -> &'static str {
        "scalelock-pool"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mut points = Vec::new();
        for &name in ALLOCATORS.iter().filter(|a| sel.wants(a)) {
            for &threads in &sel.threads {
                points.push(
                    Point::new(name, threads, move |t| run_named(name, t))
                        // An operation takes about a microsecond: one clock pair in 4.
                        .sample_every(4)
                        .param("min_bytes", MIN as u64)
                        .param("max_bytes", MAX as u64)
                        .param("live_per_thread", WINDOW as u64)
                        .param("remote_free_share", 1.0 / REMOTE_ONE_IN as f64),
                );
            }
        }
        points
    }
}

/// One pool for every point, as the other allocators keep their state from point to point
/// (a fresh pool per point would pay every page's first touch inside the measurement).
static POOL: LargePool = LargePool::new();

fn run_named(name: &str, trial: &Trial) -> Result<Measurement, String> {
    match name {
        "system" => run(name, &System, trial),
        "mimalloc" => run(name, &mimalloc::MiMalloc, trial),
        "jemalloc" => run(name, &tikv_jemallocator::Jemalloc, trial),
        "scalelock-pool" => {
            let m = run(name, &POOL, trial)?;
            let s = POOL.stats();
            if s.lost_bytes != 0 {
                return Err(format!("pool lost {} bytes", s.lost_bytes));
            }
            Ok(m)
        }
        other => Err(format!("unknown allocator {other}")),
    }
}

/// A block: address and size (its layout is `size` with alignment 8).
type Block = (usize, usize);

/// One thread's blocks. Only the thread with the same index touches `local` while measuring;
/// `inbox` is shared with the previous thread.
struct PerThread {
    local: UnsafeCell<Local>,
    inbox: Mutex<Vec<Vec<Block>>>,
}

struct Local {
    window: [Block; WINDOW],
    next: usize,
    batch: Vec<Block>,
    ops: u64,
}

struct Shared<'a, A> {
    alloc: &'a A,
    threads: Vec<CachePadded<PerThread>>,
}

// SAFETY: `local` of slot i is only accessed by worker i during `measure` and by the calling
// thread after `measure` has joined every worker; `inbox` is a Mutex.
unsafe impl<A: Sync> Sync for Shared<'_, A> {}

fn layout(size: usize) -> Layout {
    // Sizes are in MIN..=MAX: always a valid layout.
    Layout::from_size_align(size, 8).expect("valid layout")
}

impl<A: GlobalAlloc> Shared<'_, A> {
    fn free(&self, b: Block) {
        // SAFETY: `b` was allocated by `self.alloc` with this layout and is freed once.
        unsafe { self.alloc.dealloc(b.0 as *mut u8, layout(b.1)) }
    }

    fn free_all(&self, blocks: &[Block]) {
        for &b in blocks {
            self.free(b);
        }
    }

    /// Frees everything still held, after the workers are gone.
    fn drain(&mut self) {
        for i in 0..self.threads.len() {
            let local = std::mem::replace(
                self.threads[i].local.get_mut(),
                Local {
                    window: [(0, 0); WINDOW],
                    next: 0,
                    batch: Vec::new(),
                    ops: 0,
                },
            );
            for b in local.window.into_iter().filter(|b| b.0 != 0) {
                self.free(b);
            }
            self.free_all(&local.batch);
            let inbox = std::mem::take(&mut *self.threads[i].inbox.lock().expect("inbox"));
            for batch in inbox {
                self.free_all(&batch);
            }
        }
    }
}

fn run<A: GlobalAlloc + Sync>(name: &str, alloc: &A, trial: &Trial) -> Result<Measurement, String> {
    let n = trial.threads.max(1);
    let mut shared = Shared {
        alloc,
        threads: (0..n)
            .map(|_| {
                CachePadded::new(PerThread {
                    local: UnsafeCell::new(Local {
                        window: [(0, 0); WINDOW],
                        next: 0,
                        batch: Vec::with_capacity(BATCH),
                        ops: 0,
                    }),
                    inbox: Mutex::new(Vec::with_capacity(INBOX_BATCHES)),
                })
            })
            .collect(),
    };
    let rss0 = status_kib("VmRSS:");
    reset_peak_rss();
    let sys0 = sys_time();
    let m = measure(trial, &shared, |s, w| {
        // SAFETY: slot `w.index` belongs to this worker (see `Shared`).
        let local = unsafe { &mut *s.threads[w.index].local.get() };
        let size = MIN + (w.rand() % (MAX - MIN + 1) as u64) as usize;
        let t = w.sample();
        // SAFETY: non-zero size.
        let p = unsafe { s.alloc.alloc(layout(size)) };
        w.acquired(t);
        if p.is_null() {
            // Counted, checked after the run: an allocator must not fail here.
            w.tally += 1;
            return 1;
        }
        let mut off = 0;
        while off < size {
            // SAFETY: inside the block.
            unsafe { p.add(off).write_volatile(local.ops as u8) };
            off += 4096;
        }
        let old = std::mem::replace(&mut local.window[local.next], (p as usize, size));
        local.next = (local.next + 1) % WINDOW;
        if old.0 != 0 {
            if w.one_in(REMOTE_ONE_IN) {
                local.batch.push(old);
                if local.batch.len() == BATCH {
                    let batch = std::mem::replace(&mut local.batch, Vec::with_capacity(BATCH));
                    let next = &s.threads[(w.index + 1) % s.threads.len()].inbox;
                    let mut inbox = next.lock().expect("inbox");
                    if inbox.len() < INBOX_BATCHES {
                        inbox.push(batch);
                    } else {
                        drop(inbox);
                        s.free_all(&batch);
                    }
                }
            } else {
                s.free(old);
            }
        }
        local.ops += 1;
        if local.ops % POLL_EVERY == 0 {
            let got = std::mem::take(&mut *s.threads[w.index].inbox.lock().expect("inbox"));
            for batch in got {
                s.free_all(&batch);
            }
        }
        1
    });
    let sys = sys_time().saturating_sub(sys0);
    let peak = status_kib("VmHWM:");
    shared.drain();
    if m.tally != 0 {
        return Err(format!("{name}: {} allocations returned null", m.tally));
    }
    let ops = m.thread_ops.iter().sum::<u64>().max(1);
    let sys_ns_per_op = sys.as_nanos() as f64 / m.ops_all.max(ops) as f64;
    let mut m = m;
    m.extra
        .push(("sys_ns_per_op", serde_json::json!(sys_ns_per_op)));
    if let (Some(p), Some(r)) = (peak, rss0) {
        m.extra.push((
            "peak_rss_growth_mib",
            serde_json::json!(p.saturating_sub(r) >> 10),
        ));
        m.extra
            .push(("rss_at_start_mib", serde_json::json!(r >> 10)));
    }
    if std::env::var_os("SCALELOCK_BENCH_VERBOSE").is_some() {
        eprintln!(
            "large-alloc {name} {n}t: system time {sys_ns_per_op:.0} ns/op, params {:?}",
            m.extra
        );
    }
    Ok(m)
}

/// System CPU time of the process.
fn sys_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    Duration::new(ru.ru_stime.tv_sec as u64, ru.ru_stime.tv_usec as u32 * 1000)
}

/// Resets the kernel's peak-RSS mark (VmHWM) of this process, where the kernel allows it.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A `/proc/self/status` field in KiB: `VmRSS:` (now) or `VmHWM:` (peak since the last reset).
fn status_kib(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
