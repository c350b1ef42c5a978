//! `large-alloc`: allocations from 16 KiB to 1 MiB, touched, freed, a quarter by another thread.
//!
//! Seed 000 (MySQL on OSv): every query allocates a few buffers above a page, and OSv served them
//! from `malloc_large` under one global sleeping mutex. glibc has the same shape above its mmap
//! threshold (an `mmap`/`munmap` pair and fresh page faults per allocation), jemalloc caches only
//! up to 32 KiB per thread, tcmalloc sends anything over 256 KiB to one locked page heap.
//!
//! Each thread keeps its last 4 blocks alive. One operation allocates a block of a random size
//! in 16 KiB..=1 MiB, writes one byte per 4 KiB page, and retires the oldest block: freed by
//! this thread, or (one in four) passed in batches of 8 to the next thread, which frees it (at
//! most 2 batches wait in a thread's inbox; a thread whose neighbour lags frees the batch
//! itself). A thread holds at most 28 blocks, about 14 MiB, so 128 threads stay under 2 GiB.
//! The sizes and the one-in-four choices come from a sequence per thread seeded by its index
//! alone: every allocator is asked for the same sizes in the same order.
//!
//! # One process per point, each allocator as its users get it
//!
//! Every point runs in a fresh process (the bench re-executes itself, see
//! [`crate::bench::child`]) whose *global* allocator is the one measured (see
//! [`crate::bench::global_alloc`]): `system` (glibc malloc), `mimalloc` (the `mimalloc` crate),
//! `jemalloc` (`tikv-jemallocator`) or `scalelock-pool` (`scalelock_alloc::LargePool` with its
//! default settings over glibc). Everything the process allocates, the bench's own bookkeeping
//! included, goes through it, as in a program that sets `#[global_allocator]`. No allocator
//! inherits another's heap, page tables or resident memory, and memory figures are the
//! process's own.
//!
//! # Two phases: memory on a fixed sequence, then throughput on time
//!
//! How much memory a run holds at its peak grows with the operations it runs (the largest live
//! set of a longer random sequence is larger), and in a timed window a fast allocator runs
//! forty times as many operations as a slow one. So memory and throughput are measured apart,
//! in this order, in the point's process:
//!
//! 1. **Memory phase**: every thread runs the first [`MEMORY_OPS_PER_THREAD`] operations of its
//!    sequence, started together, however long they take. The memory columns come from this
//!    phase alone: the same allocations, in the same order per thread, for every allocator
//!    (with several threads, only the interleaving of the threads and which thread frees a
//!    passed batch vary). Then every block is freed and the threads exit, and the decay wait
//!    follows.
//! 2. **Throughput phase**: the sequences go on where they stopped. Unmeasured passes run until
//!    the threads have done 32 more operations each on average and the process's resident
//!    memory grew by less than 5% over the last pass (at most 5 s), so that the measured pass
//!    pays no first touches; then the measured window (`--duration-ms`) gives throughput,
//!    CPU per operation and latency.
//!
//! The throughput phase runs after the memory phase so that the memory figures start from a
//! fresh process, untouched by however many operations an allocator completes in the window.
//!
//! # Memory
//!
//! Beyond the common fields, each point reports in its JSON `params`:
//! - `peak_rss_mib`: the process's peak resident memory over the memory phase, its frees and
//!   decay wait included: the kernel's mark (VmHWM), or a resident figure read in the phase
//!   where that is higher (the kernel moves its mark only at some events);
//! - `rss_after_free_mib`: resident memory once every block of the memory phase is freed and
//!   its threads are gone;
//! - `rss_after_decay_mib`: resident memory [`DECAY_WAIT_MS`] later (the pool's default decay
//!   time and a margin), during which one thread allocated and freed one 64 KiB block every
//!   10 ms, as a server that is idle but alive does: what each allocator gave back to the OS
//!   (not measured with `--quick`, which skips the wait);
//! - `rss_at_start_mib`: resident memory before the first allocation of the point;
//! - `memory_ops_per_thread`: the operations each thread ran in the memory phase;
//! - `timed_peak_rss_mib`: the peak resident memory over the throughput phase (settling passes
//!   included), where the kernel lets the peak be reset: it depends on how many operations
//!   the allocator completed, so it is not a comparison between allocators;
//! - `sys_ns_per_op`: system CPU time per operation in the measured window (page faults,
//!   `mmap`, `madvise`);
//! - `settle_ms`, `settle_mean_thread_ops`, `settle_min_thread_ops`: how long settling took,
//!   and how far the threads got on average and the slowest one;
//! - `pool_carved_mib`, `pool_depot_dirty_mib`, `pool_purged_total_mib` (the pool only): the
//!   memory it carved, its free blocks still resident in the depot, and what it gave back to
//!   the OS in total, read after the decay wait;
//! - `thp_faults`: transparent huge pages the kernel allocated on page faults during the
//!   measured pass, machine-wide (`thp_fault_alloc` in /proc/vmstat).
//!
//! # mimalloc's numbers
//!
//! The `mimalloc` crate builds mimalloc 3, which asks for transparent huge pages on its arenas
//! (`madvise(MADV_HUGEPAGE)`, its `allow_thp` option, on by default where THP is not `never`).
//! Where the kernel's THP `defrag` setting is `madvise` (the default of common distributions),
//! such a fault allocates a 2 MiB page and compacts memory synchronously when none is free: on
//! a machine whose memory is fragmented (a long-running host with a large page cache), a page
//! fault then costs milliseconds of system time, and mimalloc's throughput falls by orders of
//! magnitude; `thp_faults` and `sys_ns_per_op` show it. With `MIMALLOC_ALLOW_THP=0` in the
//! environment the same runs return to the range of the others. The bench measures mimalloc
//! as a user who adds the crate gets it, so it keeps the default.

use super::child_points::{child_points, ChildEnv};
use super::{Point, Selection, Workload};
use crate::bench::child;
use crate::bench::global_alloc::{self, GLOBAL_POOL};
use crate::bench::harness::{measure, Measurement, Trial, Worker};
use crossbeam_utils::CachePadded;
use scalelock_alloc::LargePool;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const MIN: usize = 16 << 10;
const MAX: usize = 1 << 20;
const WINDOW: usize = 4;
const BATCH: usize = 8;
const INBOX_BATCHES: usize = 2;
const REMOTE_ONE_IN: u64 = 4;
const POLL_EVERY: u64 = 16;

/// What a point's run takes beyond its measured window, for the bench's time estimate: the
/// child's start, the memory phase and settling (both grow with the thread count:
/// [`MEMORY_PHASE_PER_THREAD`] and [`SETTLE_PER_THREAD`] each), and the decay wait.
fn child_overhead(threads: usize, wait_ms: u64) -> Duration {
    crate::bench::child::START
        + (MEMORY_PHASE_PER_THREAD + SETTLE_PER_THREAD) * threads as u32
        + Duration::from_millis(wait_ms)
}
/// See [`child_overhead`]: [`MEMORY_OPS_PER_THREAD`] operations of about a microsecond of CPU
/// each, on two CPUs.
const MEMORY_PHASE_PER_THREAD: Duration = Duration::from_millis(2);
/// See [`child_overhead`].
const SETTLE_PER_THREAD: Duration = Duration::from_millis(60);
/// How long after the last free `rss_after_decay_mib` is read: the pool's default decay time
/// and a quarter of it as margin.
pub const DECAY_WAIT_MS: u64 = scalelock_alloc::Config::new().decay_ms * 5 / 4;
/// Tells a child how long its decay wait is, in ms (0: none); [`DECAY_WAIT_MS`] when unset.
const DECAY_WAIT_ENV: &str = "SCALELOCK_LARGE_ALLOC_DECAY_WAIT_MS";
/// The idle-but-alive traffic during the decay wait: one block of this size every
/// [`NUDGE_EVERY`].
const NUDGE_BYTES: usize = 64 << 10;
const NUDGE_EVERY: Duration = Duration::from_millis(10);
/// Operations per thread, on average, before the measured pass (see `run`).
const SETTLE_OPS: u64 = 32;
/// The most time spent getting there.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);
/// Operations each thread runs in the memory phase, whatever the allocator (see the module
/// docs): enough for every thread to cycle its window, batches and inbox many times.
const MEMORY_OPS_PER_THREAD: u64 = 2048;
/// Seeds every thread's sequence (with its index): the same sizes for every allocator.
const SEED: u64 = 0x5CA1_E10C_0A11_0C05;

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
         a quarter freed by another thread; sizes from a sequence seeded per thread, the same for \
         every allocator. Each point runs in a process of its own whose global allocator is the \
         one measured: glibc, mimalloc, jemalloc (tikv-jemallocator), or the scalelock pool with \
         its defaults. Memory columns come from a memory phase run first in that process: every \
         thread runs the same 2048 operations of its sequence, however long they take; peak \
         RSS is the process's peak over that phase, then RSS once it freed everything, and RSS \
         after the pool's decay time (1.25 s, with one 64 KiB allocation every 10 ms \
         meanwhile). Throughput, CPU and latency come from a timed phase that follows (the \
         sequences go on; settling passes first). mimalloc 3 asks for transparent huge pages: \
         where the kernel compacts memory on such faults (THP defrag `madvise`, fragmented \
         memory), its page faults cost milliseconds (see `thp_faults`, `sys_ns_per_op`); \
         MIMALLOC_ALLOW_THP=0 removes that. Reproduces a database server's large per-query \
         buffers served by an allocator that takes one global lock for them."
    }

    fn latency_label(&self) -> &'static str {
        "allocation latency"
    }

    fn columns(&self) -> Vec<&'static str> {
        ALLOCATORS.to_vec()
    }

    fn ours(&self) -> &'static str {
        "scalelock-pool"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        // `--quick` skips the decay wait (1.25 s per point): no `rss_after_decay_mib` then.
        let wait_ms = if sel.quick { 0 } else { DECAY_WAIT_MS };
        let env = move |name: &str| -> ChildEnv {
            Ok(vec![
                (global_alloc::ENV, name.to_string()),
                (DECAY_WAIT_ENV, wait_ms.to_string()),
            ])
        };
        child_points(self.name(), sel, &ALLOCATORS, env, run_here, |p| {
            let overhead = child_overhead(p.threads, wait_ms);
            // An operation takes about a microsecond: one clock pair in 4.
            p.sample_every(4)
                .param("min_bytes", MIN as u64)
                .param("max_bytes", MAX as u64)
                .param("live_per_thread", WINDOW as u64)
                .param("remote_free_share", 1.0 / REMOTE_ONE_IN as f64)
                .param("decay_wait_ms", wait_ms)
                .overhead(overhead)
        })
    }
}

/// The process's global allocator, called through `std::alloc` like any Rust program does.
struct Global;

// SAFETY: forwards to the global allocator, which upholds the contract.
unsafe impl GlobalAlloc for Global {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        unsafe { std::alloc::alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { std::alloc::dealloc(p, l) }
    }
}

/// A pool for in-process runs (tests), when the global allocator is another.
static POOL: LargePool = LargePool::new();

/// Measures allocator `name` in this process: through the global allocator when it is `name`
/// (always so in a child), else through an explicit instance (tests run in-process).
fn run_here(name: &str, trial: &Trial) -> Result<Measurement, String> {
    let global = global_alloc::current() == name;
    if child::in_child() && !global {
        return Err(format!(
            "child process runs on {}, not {name}: {} not honoured",
            global_alloc::current(),
            global_alloc::ENV
        ));
    }
    let pool = |p: &'static LargePool| (name == "scalelock-pool").then_some(p);
    match (name, global) {
        (_, true) => run(name, &Global, pool(&GLOBAL_POOL), trial),
        ("system", false) => run(name, &System, None, trial),
        ("mimalloc", false) => run(name, &mimalloc::MiMalloc, None, trial),
        ("jemalloc", false) => run(name, &tikv_jemallocator::Jemalloc, None, trial),
        ("scalelock-pool", false) => run(name, &POOL, pool(&POOL), trial),
        (other, _) => Err(format!("unknown allocator {other}")),
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
    /// This thread's sequence (sizes and which blocks go to the next thread): seeded from the
    /// thread's index only, so every allocator is asked for the same sizes in the same order.
    rng: u64,
}

impl Local {
    fn new(index: usize) -> Local {
        Local {
            window: [(0, 0); WINDOW],
            next: 0,
            batch: Vec::with_capacity(BATCH),
            ops: 0,
            rng: SEED ^ (index as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F) | 1,
        }
    }

    /// The next number of this thread's sequence (xorshift64*).
    fn rand(&mut self) -> u64 {
        crate::bench::harness::xorshift64star(&mut self.rng)
    }
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

    /// Frees everything still held, after the workers are gone. Each thread's sequence goes on
    /// where it stopped.
    fn drain(&mut self) {
        for i in 0..self.threads.len() {
            let local = self.threads[i].local.get_mut();
            let window = std::mem::replace(&mut local.window, [(0, 0); WINDOW]);
            let batch = std::mem::take(&mut local.batch);
            local.next = 0;
            for b in window.into_iter().filter(|b| b.0 != 0) {
                self.free(b);
            }
            self.free_all(&batch);
            let inbox = std::mem::take(&mut *self.threads[i].inbox.lock().expect("inbox"));
            for batch in inbox {
                self.free_all(&batch);
            }
        }
    }
}

/// One operation of a worker (see the module docs), timed in samples.
fn one_op<A: GlobalAlloc>(s: &Shared<'_, A>, w: &mut Worker<'_>) -> u64 {
    let ok = step(s, w.index, |l| {
        let t = w.sample();
        // SAFETY: non-zero size.
        let p = unsafe { s.alloc.alloc(l) };
        w.acquired(t);
        p
    });
    if !ok {
        // Counted, checked after the run: an allocator must not fail here.
        w.tally += 1;
    }
    1
}

/// The next operation of thread `index`'s sequence, allocating with `alloc`. False when the
/// allocation returned null.
fn step<A: GlobalAlloc>(
    s: &Shared<'_, A>,
    index: usize,
    alloc: impl FnOnce(Layout) -> *mut u8,
) -> bool {
    // SAFETY: slot `index` belongs to the calling worker (see `Shared`).
    let local = unsafe { &mut *s.threads[index].local.get() };
    let size = MIN + (local.rand() % (MAX - MIN + 1) as u64) as usize;
    let p = alloc(layout(size));
    if p.is_null() {
        return false;
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
        if local.rand().is_multiple_of(REMOTE_ONE_IN) {
            local.batch.push(old);
            if local.batch.len() == BATCH {
                let batch = std::mem::replace(&mut local.batch, Vec::with_capacity(BATCH));
                let next = &s.threads[(index + 1) % s.threads.len()].inbox;
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
        let got = std::mem::take(&mut *s.threads[index].inbox.lock().expect("inbox"));
        for batch in got {
            s.free_all(&batch);
        }
    }
    true
}

/// The memory phase: every thread runs the next [`MEMORY_OPS_PER_THREAD`] operations of its
/// sequence, however long that takes, started together. Returns the allocations that failed.
fn run_sequence<A: GlobalAlloc + Sync>(s: &Shared<'_, A>, ops: u64) -> u64 {
    let n = s.threads.len();
    let start = Barrier::new(n);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..n)
            .map(|index| {
                let start = &start;
                std::thread::Builder::new()
                    .name(format!("bench-{index}"))
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        start.wait();
                        let mut failed = 0;
                        for _ in 0..ops {
                            // SAFETY: non-zero size.
                            if !step(s, index, |l| unsafe { s.alloc.alloc(l) }) {
                                failed += 1;
                            }
                        }
                        failed
                    })
                    .expect("spawn bench thread")
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("memory-phase worker"))
            .sum()
    })
}

fn run<A: GlobalAlloc + Sync>(
    name: &str,
    alloc: &A,
    pool: Option<&LargePool>,
    trial: &Trial,
) -> Result<Measurement, String> {
    let n = trial.threads.max(1);
    let mut shared = Shared {
        alloc,
        threads: (0..n)
            .map(|i| {
                CachePadded::new(PerThread {
                    local: UnsafeCell::new(Local::new(i)),
                    inbox: Mutex::new(Vec::with_capacity(INBOX_BATCHES)),
                })
            })
            .collect(),
    };
    let rss0 = status_kib("VmRSS:");
    // The memory phase: the same operations for every allocator, counted, not timed.
    reset_peak_rss();
    let failed = run_sequence(&shared, MEMORY_OPS_PER_THREAD);
    shared.drain();
    let after_free = status_kib("VmRSS:");
    let wait_ms = std::env::var(DECAY_WAIT_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DECAY_WAIT_MS);
    let after_decay = if wait_ms > 0 {
        idle_but_alive(alloc, Duration::from_millis(wait_ms));
        status_kib("VmRSS:")
    } else {
        None
    };
    // The peak over the whole memory phase, frees included (freeing touches pages too:
    // headers, the allocator's own lists). The kernel's mark moves only at some events (an
    // unmap, a reset) from counters it sums per CPU lazily, so a resident figure read between
    // them can exceed it; the peak is at least every figure this phase read.
    let peak = [status_kib("VmHWM:"), after_free, after_decay]
        .into_iter()
        .flatten()
        .max();
    // Where the pool's memory is at the end of the memory phase (after the decay wait).
    let pool_extra = pool.map(|p| p.stats());

    // The throughput phase: timed, the sequences going on where they stopped. Unmeasured passes
    // first, until the threads have done SETTLE_OPS more operations each on average (windows,
    // batches and inboxes cycled; with 64 threads per core, some thread may not run at all in
    // a short pass, so not every one) and the memory held stopped growing (under 5% over a
    // pass), or SETTLE_LIMIT has passed, so that the measured pass pays no first touches.
    let ops_before: u64 = (0..n)
        // SAFETY: no worker runs (see `Shared`).
        .map(|i| unsafe { (*shared.threads[i].local.get()).ops })
        .sum();
    let peak_reset = reset_peak_rss();
    let settle = Trial {
        duration: Duration::from_millis(n as u64),
        ..trial.clone()
    };
    let settle_start = Instant::now();
    let mut settle_tally = 0;
    let mut rss_before = status_kib("VmRSS:").unwrap_or(0);
    let (settled_mean, settled_least) = loop {
        settle_tally += measure(&settle, &shared, one_op).tally;
        // SAFETY: every worker of the pass has been joined (see `Shared`).
        let ops: Vec<u64> = (0..n)
            .map(|i| unsafe { (*shared.threads[i].local.get()).ops })
            .collect();
        let total = ops.iter().sum::<u64>() - ops_before;
        let rss = status_kib("VmRSS:").unwrap_or(0);
        // Steady: the memory held grew by less than a twentieth over the last pass.
        let steady = rss < rss_before + rss_before / 20;
        rss_before = rss;
        if (total >= n as u64 * SETTLE_OPS && steady) || settle_start.elapsed() >= SETTLE_LIMIT {
            let least = ops.into_iter().min().unwrap_or(0);
            let least = least.saturating_sub(MEMORY_OPS_PER_THREAD);
            break (total / n as u64, least);
        }
    };
    let settle_ms = settle_start.elapsed().as_millis() as u64;
    let thp0 = thp_faults();
    let sys0 = sys_time();
    let m = measure(trial, &shared, one_op);
    let sys = sys_time().saturating_sub(sys0);
    let timed_peak = if peak_reset {
        status_kib("VmHWM:")
    } else {
        None
    };
    shared.drain();
    drop(shared);
    let thp = thp_faults().zip(thp0).map(|(b, a)| b.saturating_sub(a));
    if failed + m.tally + settle_tally != 0 {
        return Err(format!(
            "{name}: {} allocations returned null",
            failed + m.tally + settle_tally
        ));
    }
    let ops = m.thread_ops.iter().sum::<u64>().max(1);
    let sys_ns_per_op = sys.as_nanos() as f64 / m.ops_all.max(ops) as f64;
    let mut m = m;
    m.extra
        .push(("sys_ns_per_op", serde_json::json!(sys_ns_per_op)));
    let mib = |kib: usize| serde_json::json!((kib as f64 / 1024.0 * 10.0).round() / 10.0);
    for (key, value) in [
        ("peak_rss_mib", peak),
        ("rss_after_free_mib", after_free),
        ("rss_after_decay_mib", after_decay),
        ("rss_at_start_mib", rss0),
        ("timed_peak_rss_mib", timed_peak),
    ] {
        if let Some(kib) = value {
            m.extra.push((key, mib(kib)));
        }
    }
    m.extra.push((
        "memory_ops_per_thread",
        serde_json::json!(MEMORY_OPS_PER_THREAD),
    ));
    m.extra.push(("settle_ms", serde_json::json!(settle_ms)));
    m.extra
        .push(("settle_mean_thread_ops", serde_json::json!(settled_mean)));
    m.extra
        .push(("settle_min_thread_ops", serde_json::json!(settled_least)));
    if let Some(thp) = thp {
        m.extra.push(("thp_faults", serde_json::json!(thp)));
    }
    if let Some(s) = pool_extra {
        if s.lost_bytes != 0 {
            return Err(format!("pool lost {} bytes", s.lost_bytes));
        }
        let mib = |b: usize| serde_json::json!(b >> 20);
        m.extra.push(("pool_carved_mib", mib(s.carved_bytes)));
        m.extra.push(("pool_depot_dirty_mib", mib(s.cached_bytes)));
        m.extra
            .push(("pool_purged_total_mib", mib(s.purged_bytes as usize)));
    }
    if std::env::var_os("SCALELOCK_BENCH_VERBOSE").is_some() {
        eprintln!(
            "large-alloc {name} {n}t: system time {sys_ns_per_op:.0} ns/op, params {:?}",
            m.extra
        );
    }
    Ok(m)
}

/// Allocates, touches and frees one small block every [`NUDGE_EVERY`] for `wait`: the traffic
/// of an idle server, which is what drives an allocator's delayed purging (jemalloc's decay,
/// mimalloc's purge delay, the pool's decay). Counted in nudges, not read off the clock, so
/// that a process stopped or starved meanwhile (by other work on the machine) still gets the
/// whole wait while it runs, at least `wait` in all.
fn idle_but_alive<A: GlobalAlloc>(alloc: &A, wait: Duration) {
    let l = layout(NUDGE_BYTES);
    let start = Instant::now();
    let nudges = wait.as_nanos().div_ceil(NUDGE_EVERY.as_nanos());
    for _ in 0..nudges {
        // SAFETY: non-zero size; the block is written inside its bounds and freed once.
        unsafe {
            let p = alloc.alloc(l);
            if !p.is_null() {
                p.write_volatile(1);
                alloc.dealloc(p, l);
            }
        }
        std::thread::sleep(NUDGE_EVERY);
    }
    // Sleeps overshoot, never undershoot; this only guards the "at least `wait`" promise.
    if let Some(rest) = wait.checked_sub(start.elapsed()) {
        std::thread::sleep(rest);
    }
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

/// Transparent huge pages the kernel allocated on a page fault, machine-wide, since boot
/// (`thp_fault_alloc` in /proc/vmstat).
fn thp_faults() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/vmstat").ok()?;
    let line = s.lines().find(|l| l.starts_with("thp_fault_alloc "))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the kernel's peak-RSS mark (VmHWM) of this process; false where the kernel does not
/// allow it.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `/proc/self/status` field in KiB: `VmRSS:` (now) or `VmHWM:` (peak since the last reset).
fn status_kib(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocator_can_be_the_global_one() {
        assert_eq!(ALLOCATORS, global_alloc::NAMES);
    }

    /// An allocator that records the sizes asked of it, over `System`.
    struct Recording(Mutex<Vec<usize>>);

    // SAFETY: forwards to `System`.
    unsafe impl GlobalAlloc for Recording {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            self.0.lock().unwrap().push(l.size());
            // SAFETY: forwarded from the caller.
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: forwarded from the caller.
            unsafe { System.dealloc(p, l) }
        }
    }

    /// The sizes thread 0 of an `n`-thread run asks for in `ops` operations.
    fn sequence(n: usize, ops: u64) -> Vec<usize> {
        let rec = Recording(Mutex::new(Vec::new()));
        let mut shared = Shared {
            alloc: &rec,
            threads: (0..n)
                .map(|i| {
                    CachePadded::new(PerThread {
                        local: UnsafeCell::new(Local::new(i)),
                        inbox: Mutex::new(Vec::new()),
                    })
                })
                .collect(),
        };
        // Thread 0 alone: its sizes do not depend on the others.
        for _ in 0..ops {
            assert!(step(&shared, 0, |l| {
                // SAFETY: non-zero size.
                unsafe { rec.alloc(l) }
            }));
        }
        shared.drain();
        drop(shared);
        rec.0.into_inner().unwrap()
    }

    #[test]
    fn every_allocator_is_asked_the_same_sizes_in_the_same_order() {
        let a = sequence(1, 300);
        assert_eq!(a.len(), 300);
        assert_eq!(a, sequence(1, 300), "a second run asked for other sizes");
        assert_eq!(
            a,
            sequence(4, 300),
            "the thread count changed thread 0's sizes"
        );
        assert!(a.iter().all(|s| (MIN..=MAX).contains(s)));
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        assert!(
            distinct.len() > 250,
            "not random: {} distinct",
            distinct.len()
        );
        // Another thread has a sequence of its own.
        let mut other = Local::new(1);
        let mut first = Local::new(0);
        assert_ne!(other.rand(), first.rand());
    }

    #[test]
    fn the_memory_phase_runs_the_same_count_on_every_thread() {
        let shared = Shared {
            alloc: &System,
            threads: (0..3)
                .map(|i| {
                    CachePadded::new(PerThread {
                        local: UnsafeCell::new(Local::new(i)),
                        inbox: Mutex::new(Vec::new()),
                    })
                })
                .collect(),
        };
        assert_eq!(run_sequence(&shared, 100), 0);
        let mut shared = shared;
        for t in &mut shared.threads {
            assert_eq!(t.local.get_mut().ops, 100);
        }
        shared.drain();
    }

    #[test]
    fn the_description_names_the_memory_phase_length() {
        let about = LargeAlloc.about();
        assert!(
            about.contains(&format!("same {MEMORY_OPS_PER_THREAD} operations")),
            "{about}"
        );
    }

    #[test]
    fn an_in_process_point_reports_throughput_and_memory() {
        let trial = Trial {
            threads: 3,
            warmup: Duration::from_millis(5),
            duration: Duration::from_millis(30),
            sample_every: 4,
        };
        let m = run_here("scalelock-pool", &trial).unwrap();
        assert!(m.thread_ops.iter().sum::<u64>() > 0);
        let keys: Vec<_> = m.extra.iter().map(|e| e.0).collect();
        for k in [
            "sys_ns_per_op",
            "peak_rss_mib",
            "rss_after_free_mib",
            "rss_after_decay_mib",
            "memory_ops_per_thread",
            "pool_carved_mib",
        ] {
            assert!(keys.contains(&k), "{keys:?}");
        }
    }
}
