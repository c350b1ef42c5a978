//! The measuring harness: start threads together, warm up, measure for a fixed duration, stop.
//!
//! [`measure`] runs a workload's operation in a loop on `trial.threads` threads:
//!
//! 1. every thread is spawned and waits at a start gate (so none runs alone while others
//!    start; see [`StartGate`]);
//! 2. once the gate opens the threads run for `trial.warmup` unmeasured (caches, learned spin
//!    budgets and the scheduler settle);
//! 3. the harness snapshots every thread's operation count, `getrusage(RUSAGE_SELF)` (CPU time
//!    and context switches; its own thread's switches are taken out) and the clock, sleeps
//!    `trial.duration`, and snapshots again: the differences are the measurement;
//! 4. it raises the stop flag; each thread finishes its current operation and exits.
//!
//! Acquisition latency is *sampled*: a thread times one acquisition in about
//! `trial.sample_every` (a randomised countdown, so sampling cannot lock into a periodic pattern
//! of the workload), with the monotonic clock (vDSO, ~20 ns), into its own HDR histogram; the
//! histograms are merged at the end. Workloads choose `sample_every` with [`sample_every_for`] so
//! the clock's cost stays around 1% of an operation. The times of a thread's sampled
//! acquisitions inside the window also give its longest *stall* (see [`stall`]): a bound on
//! its longest wait that, unlike the samples, also sees waits that had not ended when the
//! window did.

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Parameters of one measured point.
#[derive(Clone, Debug)]
pub struct Trial {
    /// Number of worker threads.
    pub threads: usize,
    /// Unmeasured time after the start barrier.
    pub warmup: Duration,
    /// Measured time.
    pub duration: Duration,
    /// Time about one acquisition in this many (1 = every acquisition).
    pub sample_every: u32,
}

/// What one point measured, before summarising (see [`super::stats::Summary`]).
pub struct Measurement {
    /// Operations each thread completed inside the measured window.
    pub thread_ops: Vec<u64>,
    /// Operations completed over the whole run, warm-up and stop included (for workload checks).
    pub ops_all: u64,
    /// Sum of every thread's [`Worker::tally`] over the whole run (for workload checks).
    pub tally: u64,
    /// Wall-clock length of the measured window.
    pub elapsed: Duration,
    /// User + system CPU time of the whole process inside the measured window.
    pub cpu: Duration,
    /// CPU time each thread got inside the measured window (zero where the thread's clock could
    /// not be read). With more threads than CPUs, who gets a CPU decides much of a result.
    pub thread_cpu: Vec<Duration>,
    /// The worker threads' context switches inside the measured window (`None`: not measured,
    /// as for a workload whose operations run in another process).
    pub switches: Option<Switches>,
    /// Sampled acquisition latencies in nanoseconds (measured window only).
    pub latency: Histogram<u64>,
    /// Per thread that samples its acquisitions (a workload may leave some threads out, as
    /// `reader-tail` its writers), the longest stretch of the measured window in which it made
    /// no sampled acquisition (see [`stall`]); empty where no thread samples.
    pub thread_stall: Vec<Duration>,
    /// Workload-specific figures of this measurement (e.g. system time, peak RSS), written into
    /// the JSON record's `params` under these names.
    pub extra: Vec<(&'static str, serde_json::Value)>,
    /// The process that measured, when it was not the bench's own (a child process of the
    /// bench's: see `bench::child`).
    pub process: Option<u32>,
}

/// Context switches, as `getrusage` counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Switches {
    /// Switches where the thread blocked (a futex sleep, a lock's sleeper, I/O).
    pub voluntary: u64,
    /// Switches where the thread stayed runnable: preemptions, and on Linux every
    /// `sched_yield` that ran another thread.
    pub involuntary: u64,
}

impl Switches {
    /// Both kinds together.
    pub fn total(&self) -> u64 {
        self.voluntary + self.involuntary
    }

    /// `self - earlier`, each kind (0 where a count went backwards).
    fn since(&self, earlier: &Switches) -> Switches {
        Switches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// A started latency sample (returned by [`Worker::sample`]); `None` inside when not sampled.
#[derive(Clone, Copy)]
pub struct Sample(Option<Instant>);

/// Per-thread state handed to a workload's operation.
pub struct Worker<'a> {
    /// This thread's index, `0..trial.threads`.
    pub index: usize,
    /// A per-thread number the workload may add to (e.g. bytes appended); summed into
    /// [`Measurement::tally`] so the workload can check its shared state afterwards.
    pub tally: u64,
    rng: u64,
    countdown: u32,
    sample_every: u32,
    phase: &'a AtomicU8,
    latency: Histogram<u64>,
    progress: Progress,
}

/// When a thread made sampled acquisitions inside the measured window: the first, the last,
/// and the longest time between two in a row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// The thread samples its acquisitions: its first call of [`Worker::sample`] was made.
    sampling: bool,
    first: Option<Instant>,
    last: Option<Instant>,
    longest_gap: Duration,
}

impl Progress {
    /// A sampled acquisition at `at`.
    fn acquired_at(&mut self, at: Instant) {
        match self.last {
            Some(last) => {
                self.longest_gap = self.longest_gap.max(at.saturating_duration_since(last))
            }
            None => self.first = Some(at),
        }
        self.last = Some(at);
    }
}

/// The longest stretch of the window from `start` to `end` in which a thread whose sampled
/// acquisitions were `p` made none: from the window's start to its first, between two in a row,
/// or from its last to the window's end; the whole window for a thread that made none.
///
/// Every wait of the thread inside the window lies between two of its sampled acquisitions (or
/// a window edge), so this is at least its longest wait there, including waits that had not
/// ended when the window did (a starved thread's), which a latency sample, taken when the wait
/// ends, cannot show; and at most that plus the operations between two samples (about
/// `sample_every` of them) and any time the thread spent preempted outside the lock.
pub fn stall(p: &Progress, start: Instant, end: Instant) -> Duration {
    match (p.first, p.last) {
        (Some(first), Some(last)) => first
            .saturating_duration_since(start)
            .max(p.longest_gap)
            .max(end.saturating_duration_since(last)),
        _ => end.saturating_duration_since(start),
    }
}

/// The next number of the xorshift64* sequence whose state is `state` (non-zero), advancing it:
/// the bench's one fast pseudo-random generator.
#[inline]
pub fn xorshift64star(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

impl Worker<'_> {
    /// A fast per-thread pseudo-random number (xorshift64*).
    #[inline]
    pub fn rand(&mut self) -> u64 {
        xorshift64star(&mut self.rng)
    }

    /// True about once in `n` calls.
    #[inline]
    pub fn one_in(&mut self, n: u64) -> bool {
        self.rand().is_multiple_of(n)
    }

    /// Call just before acquiring a lock; pass the result to [`Worker::acquired`] as the first
    /// thing inside the critical section.
    #[inline]
    pub fn sample(&mut self) -> Sample {
        self.countdown -= 1;
        if self.countdown != 0 {
            return Sample(None);
        }
        self.countdown = self.next_countdown();
        self.progress.sampling = true;
        Sample(Some(Instant::now()))
    }

    /// Records the acquisition latency of a sampled acquisition (measured window only).
    #[inline]
    pub fn acquired(&mut self, s: Sample) {
        if let Some(t0) = s.0 {
            self.record(t0);
        }
    }

    #[cold]
    fn record(&mut self, t0: Instant) {
        let now = Instant::now();
        let ns = now
            .saturating_duration_since(t0)
            .as_nanos()
            .min(u64::MAX as u128) as u64;
        if self.phase.load(Ordering::Relaxed) == MEASURE {
            self.latency.saturating_record(ns.max(1));
            self.progress.acquired_at(now);
        }
    }

    fn next_countdown(&mut self) -> u32 {
        if self.sample_every <= 1 {
            1
        } else {
            // Uniform in 1..=2n-1: mean n, never periodic.
            1 + (self.rand() % (2 * self.sample_every as u64 - 1)) as u32
        }
    }
}

/// A latency histogram covering 1 ns to 100 s with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// How often to sample so that a ~40 ns clock pair costs about 1% of an operation that takes
/// `op_ns` nanoseconds: the smallest power of two ≥ 4000 / op_ns.
pub fn sample_every_for(op_ns: u64) -> u32 {
    (4000 / op_ns.max(1))
        .max(1)
        .next_power_of_two()
        .min(1 << 16) as u32
}

/// What timing an empty interval costs: the smallest of many back-to-back clock reads, in ns.
/// Every latency sample includes about this much.
pub fn clock_overhead_ns() -> u64 {
    (0..1000)
        .map(|_| {
            let t0 = Instant::now();
            t0.elapsed().as_nanos() as u64
        })
        .min()
        .unwrap_or(0)
}

/// Round trips [`line_round_trip_ns`] times, at most.
const ROUND_TRIPS: u64 = 2_000;
/// How long [`line_round_trip_ns`] may take.
const ROUND_TRIP_LIMIT: Duration = Duration::from_millis(5);

/// What passing one cache line from one CPU to another and back costs now, in ns: two threads,
/// pinned to the first two CPUs the process may use, take turns incrementing one counter,
/// [`ROUND_TRIPS`] times or for [`ROUND_TRIP_LIMIT`], whichever comes first. On a VM this moves
/// with where the host places the virtual CPUs (a lock hand-off between CPUs costs about one
/// round trip), so the bench measures it before every run and records it with the run: results
/// that move with it moved with the machine, not with the lock. `None` with fewer than two
/// usable CPUs, or when the threads could not be pinned or did not take turns at least 16
/// times in the limit (other work held a CPU).
pub fn line_round_trip_ns() -> Option<f64> {
    let (a, b) = two_cpus()?;
    let turn = CachePadded::new(AtomicU64::new(0));
    let stop = AtomicU8::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        // The partner answers odd values with the next even one until told to stop.
        let partner = s.spawn(|| {
            if !pin_to(b) {
                return false;
            }
            while stop.load(Ordering::Relaxed) == 0 {
                let v = turn.load(Ordering::Acquire);
                if v % 2 == 1 {
                    turn.store(v + 1, Ordering::Release);
                } else {
                    std::hint::spin_loop();
                }
            }
            true
        });
        let timer = s.spawn(|| {
            if !pin_to(a) {
                return None;
            }
            // The clock starts once the partner has answered (it may start late).
            let mut first: Option<Instant> = None;
            let mut trips = 0;
            let mut spins = 0u32;
            while trips < ROUND_TRIPS {
                let v = turn.load(Ordering::Acquire);
                if v.is_multiple_of(2) {
                    if v / 2 > trips {
                        trips = v / 2;
                        if trips == 1 {
                            first = Some(Instant::now());
                        }
                        continue;
                    }
                    turn.store(v + 1, Ordering::Release);
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(64) && start.elapsed() > ROUND_TRIP_LIMIT {
                    break;
                }
                std::hint::spin_loop();
            }
            first.map(|t| (trips - 1, t.elapsed()))
        });
        let timed = timer.join().ok().flatten();
        stop.store(1, Ordering::Relaxed);
        let pinned = partner.join().unwrap_or(false);
        match timed {
            Some((n, t)) if pinned && n >= 16 => Some(t.as_nanos() as f64 / n as f64),
            _ => None,
        }
    })
}

/// The first two CPUs this process may run on.
fn two_cpus() -> Option<(usize, usize)> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size
    // into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        set
    };
    // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
    let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
    Some((cpus.next()?, cpus.next()?))
}

/// Pins the calling thread to `cpu`; whether that worked.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes bit `cpu` (below
    // CPU_SETSIZE, from `two_cpus`); sched_setaffinity(0, ..) applies to the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// What `getrusage` says of `who` (`RUSAGE_SELF`: the whole process; `RUSAGE_THREAD`: the
/// calling thread): user + system CPU time, and context switches.
fn usage(who: libc::c_int) -> (Duration, Switches) {
    // SAFETY: getrusage writes into the zeroed struct we pass; both `who` this file passes are
    // valid on Linux.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let count = |n: libc::c_long| n.max(0) as u64;
    (
        tv(ru.ru_utime) + tv(ru.ru_stime),
        Switches {
            voluntary: count(ru.ru_nvcsw),
            involuntary: count(ru.ru_nivcsw),
        },
    )
}

/// The CPU clock of the calling thread, readable from other threads of the process.
fn own_cpu_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the calling thread, alive for the call; the function writes the
    // clock id into `clock`, a valid out-pointer.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (r == 0).then_some(clock)
}

/// CPU time on `clock` (a thread's CPU clock; the thread must still be running or joinable).
fn read_cpu_clock(clock: Option<libc::clockid_t>) -> Duration {
    let Some(clock) = clock else {
        return Duration::ZERO;
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an invalid clock id only makes the call fail.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Where the workers wait until all of them have started: each parks, and the harness, once
/// all have arrived, opens the gate and unparks every one of them itself. No worker waits for
/// another's wake-up on the way out. (With std's `Barrier`, every worker leaving re-took one
/// mutex, in turn; the workers out first kept the CPUs busy, so where threads outnumbered
/// CPUs each turn waited for a CPU, and the last of 128 workers got out long after the
/// measurement had begun: its whole window counted as a stall, whatever the lock did.)
struct StartGate {
    /// Workers that the gate waits for.
    workers: usize,
    /// Workers that have arrived.
    arrived: AtomicUsize,
    /// Set once all have arrived: they may start.
    open: AtomicBool,
    /// The thread that opens the gate (woken by the last worker to arrive).
    opener: Thread,
}

impl StartGate {
    /// A closed gate for `workers` workers, which the calling thread will open (see
    /// [`open`](Self::open)).
    fn new(workers: usize) -> StartGate {
        StartGate {
            workers,
            arrived: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            opener: std::thread::current(),
        }
    }

    /// A worker arrives, and waits until the gate opens.
    fn arrive(&self) {
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.workers {
            self.opener.unpark();
        }
        // park may return spuriously: the flag says when to go.
        while !self.open.load(Ordering::Acquire) {
            std::thread::park();
        }
    }

    /// Called by the thread that made the gate: waits until all the workers have arrived, then
    /// lets them go, waking each of `threads` (the workers).
    fn open<'t>(&self, threads: impl IntoIterator<Item = &'t Thread>) {
        while self.arrived.load(Ordering::Acquire) < self.workers {
            std::thread::park();
        }
        self.open.store(true, Ordering::Release);
        for t in threads {
            t.unpark();
        }
    }
}

/// Runs `op` on `trial.threads` threads as described in the module docs. `op` performs some
/// operations on `shared` and returns how many it performed (usually 1).
pub fn measure<S, F>(trial: &Trial, shared: &S, op: F) -> Measurement
where
    S: Sync,
    F: Fn(&S, &mut Worker<'_>) -> u64 + Sync,
{
    let threads = trial.threads.max(1);
    let phase = AtomicU8::new(WARMUP);
    let counters: Vec<CachePadded<AtomicU64>> = (0..threads)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let gate = StartGate::new(threads);
    // Each thread's CPU clock, published before the start gate.
    let clocks: Vec<std::sync::OnceLock<Option<libc::clockid_t>>> =
        (0..threads).map(|_| std::sync::OnceLock::new()).collect();
    let seed0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ 0x9E37_79B9_7F4A_7C15;

    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (phase, counters, gate, op, clocks) = (&phase, &counters, &gate, &op, &clocks);
                std::thread::Builder::new()
                    .name(format!("bench-{index}"))
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        let mut w = Worker {
                            index,
                            tally: 0,
                            rng: (seed0 ^ (index as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F))
                                | 1,
                            countdown: 1,
                            sample_every: trial.sample_every.max(1),
                            phase,
                            latency: new_histogram(),
                            progress: Progress::default(),
                        };
                        // The first acquisition is sampled (in the warm-up), which tells
                        // whether the thread samples at all (see `Progress::sampling`).
                        w.countdown = 1;
                        let mine = &counters[index];
                        let mut done = 0u64;
                        let _ = clocks[index].set(own_cpu_clock());
                        gate.arrive();
                        while phase.load(Ordering::Relaxed) != STOP {
                            done += op(shared, &mut w);
                            // Only this thread writes its counter; the harness reads it.
                            mine.store(done, Ordering::Relaxed);
                        }
                        (w.latency, w.tally, w.progress)
                    })
                    .expect("spawn bench thread")
            })
            .collect();

        let snapshot = || {
            counters
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect::<Vec<_>>()
        };
        // (Every thread set its clock before the gate the harness opens below.)
        let thread_cpus = || {
            clocks
                .iter()
                .map(|c| read_cpu_clock(c.get().copied().flatten()))
                .collect::<Vec<_>>()
        };
        gate.open(handles.iter().map(|h| h.thread()));
        std::thread::sleep(trial.warmup);
        // On a loaded machine a thread may not have run at all yet: give stragglers up to one
        // more warm-up to complete an operation (a collapsing spinlock may never let them).
        let deadline = Instant::now() + trial.warmup;
        while counters.iter().any(|c| c.load(Ordering::Relaxed) == 0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        phase.store(MEASURE, Ordering::Relaxed);
        // The harness's own switches (its sleep through the window) are not the workers'.
        let own0 = usage(libc::RUSAGE_THREAD).1;
        let (t0, (cpu0, sw0), ops0, tcpu0) = (
            Instant::now(),
            usage(libc::RUSAGE_SELF),
            snapshot(),
            thread_cpus(),
        );
        std::thread::sleep(trial.duration);
        let ops1 = snapshot();
        let ((cpu1, sw1), elapsed, tcpu1) = (usage(libc::RUSAGE_SELF), t0.elapsed(), thread_cpus());
        let own1 = usage(libc::RUSAGE_THREAD).1;
        let switches = sw1.since(&sw0).since(&own1.since(&own0));
        phase.store(STOP, Ordering::Relaxed);

        let mut latency = new_histogram();
        let mut tally = 0;
        let mut progress = Vec::with_capacity(threads);
        for h in handles {
            let (hist, t, p) = h.join().expect("bench thread panicked");
            latency.add(hist).expect("same histogram bounds");
            tally += t;
            progress.push(p);
        }
        let thread_stall = progress
            .iter()
            .filter(|p| p.sampling)
            .map(|p| stall(p, t0, t0 + elapsed))
            .collect();
        Measurement {
            thread_ops: ops1.iter().zip(&ops0).map(|(b, a)| b - a).collect(),
            ops_all: snapshot().iter().sum(),
            tally,
            elapsed,
            cpu: cpu1.saturating_sub(cpu0),
            thread_cpu: tcpu1
                .iter()
                .zip(&tcpu0)
                .map(|(b, a)| b.saturating_sub(*a))
                .collect(),
            switches: Some(switches),
            latency,
            thread_stall,
            extra: Vec::new(),
            process: None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn trial(threads: usize, sample_every: u32) -> Trial {
        Trial {
            threads,
            warmup: Duration::from_millis(5),
            duration: Duration::from_millis(30),
            sample_every,
        }
    }

    #[test]
    fn round_trip_ends_in_its_time_limit() {
        let t0 = Instant::now();
        let rt = line_round_trip_ns();
        // The probe stops itself at its limit, plus the partner's exit.
        assert!(t0.elapsed() < ROUND_TRIP_LIMIT + Duration::from_secs(1));
        if let Some(ns) = rt {
            // At least 16 trips in a little over the limit; at least a store and a load each.
            assert!(ns > 0.0, "{ns}");
            assert!(ns < (t0.elapsed().as_nanos() / 16) as f64 + 1.0, "{ns}");
        }
    }

    #[test]
    fn counts_every_operation_of_every_thread() {
        let total = AtomicU64::new(0);
        let m = measure(&trial(3, 1), &total, |t, w| {
            w.tally += 2;
            t.fetch_add(1, Ordering::Relaxed);
            1
        });
        assert_eq!(m.thread_ops.len(), 3);
        // (Not every thread is guaranteed a slice of a short window on a loaded machine.)
        assert!(m.thread_ops.iter().sum::<u64>() > 0);
        assert_eq!(m.ops_all, total.load(Ordering::Relaxed));
        assert_eq!(m.tally, 2 * m.ops_all);
        assert!(m.thread_ops.iter().sum::<u64>() <= m.ops_all);
        assert!(m.elapsed >= Duration::from_millis(30));
    }

    #[test]
    fn measures_each_threads_cpu_time_in_the_window() {
        // Thread 0 spins, thread 1 sleeps: the first gets CPU time, the second next to none.
        let m = measure(&trial(2, 1), &(), |_, w| {
            if w.index == 0 {
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_micros(200) {
                    std::hint::spin_loop();
                }
            } else {
                std::thread::sleep(Duration::from_millis(5));
            }
            1
        });
        assert_eq!(m.thread_cpu.len(), 2);
        assert!(
            m.thread_cpu[0] > Duration::from_millis(1),
            "{:?}",
            m.thread_cpu
        );
        assert!(m.thread_cpu[0] <= m.elapsed + Duration::from_millis(20));
        assert!(m.thread_cpu[1] < m.thread_cpu[0], "{:?}", m.thread_cpu);
    }

    #[test]
    fn counts_the_workers_context_switches_in_the_window() {
        // Every operation sleeps: each is at least one voluntary switch (a sleep that the
        // window cut in two may fall on either side of it).
        let m = measure(&trial(2, 1), &(), |_, _| {
            std::thread::sleep(Duration::from_micros(300));
            1
        });
        let ops: u64 = m.thread_ops.iter().sum();
        let s = m.switches.expect("measured");
        assert!(ops > 0, "{ops}");
        assert!(s.voluntary + 2 >= ops, "{s:?} for {ops} operations");
        // Not wildly more than one per sleep (the harness's own sleep is not counted).
        assert!(s.voluntary <= 3 * ops + 10, "{s:?} for {ops} operations");
        assert_eq!(s.since(&s), Switches::default());
        let more = Switches {
            voluntary: s.voluntary + 4,
            involuntary: s.involuntary + 1,
        };
        assert_eq!(more.since(&s).total(), 5);
        assert_eq!(s.since(&more).total(), 0, "counts never go negative");
    }

    fn worker(phase: &AtomicU8, sample_every: u32) -> Worker<'_> {
        let mut w = Worker {
            index: 0,
            tally: 0,
            rng: 0x1234_5678_9ABC_DEF1,
            countdown: 1,
            sample_every,
            phase,
            latency: new_histogram(),
            progress: Progress::default(),
        };
        w.countdown = w.next_countdown();
        w
    }

    #[test]
    fn a_stall_is_the_longest_stretch_without_a_sampled_acquisition() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let end = at(100);
        // None: stalled for the whole window.
        assert_eq!(
            stall(&Progress::default(), start, end),
            Duration::from_millis(100)
        );
        let progress = |times: &[u64]| {
            let mut p = Progress::default();
            for &t in times {
                p.acquired_at(at(t));
            }
            p
        };
        // From the start to the first, between two, from the last to the end.
        assert_eq!(
            stall(&progress(&[30, 40, 50]), start, end),
            Duration::from_millis(50)
        );
        assert_eq!(
            stall(&progress(&[5, 40, 95]), start, end),
            Duration::from_millis(55)
        );
        assert_eq!(
            stall(&progress(&[10, 60, 65]), start, end),
            Duration::from_millis(50)
        );
        assert_eq!(
            stall(&progress(&[1, 99]), start, end),
            Duration::from_millis(98)
        );
    }

    #[test]
    fn the_start_gate_holds_every_worker_until_all_have_arrived_and_then_lets_each_go() {
        // More workers than CPUs, as the sweeps run them.
        let workers = 16;
        let gate = StartGate::new(workers);
        let passed = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        gate.arrive();
                        passed.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .collect();
            while gate.arrived.load(Ordering::Acquire) < workers {
                std::thread::yield_now();
            }
            // Every worker has arrived, and parks (or spins on a spurious wake-up) until the
            // gate opens: none may pass meanwhile.
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                passed.load(Ordering::Relaxed),
                0,
                "a worker passed a closed gate"
            );
            gate.open(handles.iter().map(|h| h.thread()));
            for h in handles {
                h.join().unwrap();
            }
        });
        assert_eq!(passed.load(Ordering::Relaxed), workers);
    }

    #[test]
    fn a_thread_starved_for_the_whole_window_stalls_for_all_of_it() {
        // Thread 1's first acquisition waits until the run is over (a starved waiter: no
        // latency sample can show it, since its wait ends after the window); thread 0 keeps
        // acquiring.
        let m = measure(&trial(2, 1), &(), |_, w| {
            let s = w.sample();
            while w.index == 1 && w.phase.load(Ordering::Relaxed) != STOP {
                std::thread::sleep(Duration::from_millis(1));
            }
            w.acquired(s);
            1
        });
        assert_eq!(m.thread_stall.len(), 2);
        assert_eq!(m.thread_stall[1], m.elapsed, "{:?}", m.thread_stall);
        assert!(m.latency.max() < m.elapsed.as_nanos() as u64);
        // Two operations counted in the window put an acquisition strictly inside it.
        if m.thread_ops[0] >= 2 {
            assert!(m.thread_stall[0] < m.elapsed, "{:?}", m.thread_stall);
        }
        // A workload that samples nothing shows no stalls; one that samples on some threads
        // only, theirs.
        let quiet = measure(&trial(2, 1), &(), |_, _| 1);
        assert!(quiet.thread_stall.is_empty());
        let one = measure(&trial(3, 1), &(), |_, w| {
            if w.index == 0 {
                let s = w.sample();
                w.acquired(s);
            }
            1
        });
        assert_eq!(one.thread_stall.len(), 1);
    }

    #[test]
    fn samples_about_one_in_n_acquisitions_inside_the_window_only() {
        let phase = AtomicU8::new(WARMUP);
        let mut w = worker(&phase, 16);
        for _ in 0..10_000 {
            let s = w.sample();
            w.acquired(s);
        }
        assert_eq!(w.latency.len(), 0, "warm-up acquisitions are not recorded");
        phase.store(MEASURE, Ordering::Relaxed);
        for _ in 0..160_000 {
            let s = w.sample();
            w.acquired(s);
        }
        let n = w.latency.len();
        assert!(
            (9_000..=11_000).contains(&n),
            "{n} samples, expected about 10000"
        );
        let mut every = worker(&phase, 1);
        for _ in 0..100 {
            let s = every.sample();
            every.acquired(s);
        }
        assert_eq!(every.latency.len(), 100);
    }

    #[test]
    fn measure_records_latency_samples() {
        let m = measure(&trial(1, 4), &(), |_, w| {
            let s = w.sample();
            w.acquired(s);
            1
        });
        assert!(m.thread_ops[0] < 100 || !m.latency.is_empty());
    }

    #[test]
    fn sampling_interval_keeps_clock_cost_near_one_percent() {
        assert_eq!(sample_every_for(10), 512);
        assert_eq!(sample_every_for(200), 32);
        assert_eq!(sample_every_for(4000), 1);
        assert_eq!(sample_every_for(100_000), 1);
        assert_eq!(sample_every_for(0), 1 << 12);
    }

    #[test]
    fn clock_overhead_is_small() {
        assert!(clock_overhead_ns() < 10_000);
    }
}
