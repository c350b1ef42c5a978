//! The workloads: one module per workload, registered in [`all`].
//!
//! # Adding a workload
//!
//! 1. Create `workloads/<name>.rs` with a unit struct implementing [`Workload`]:
//!
//!    ```ignore
//!    pub struct MyWorkload;
//!    impl Workload for MyWorkload {
//!        fn name(&self) -> &'static str { "my-workload" }      // CLI + JSON name
//!        fn about(&self) -> &'static str { "What it does; which seed it reproduces." }
//!        fn columns(&self) -> Vec<&'static str> { locks::MUTEXES.to_vec() }
//!        fn plan(&self, sel: &Selection) -> Vec<Point> { /* one Point per measurement */ }
//!        // optional:
//!        // fn ours(&self) -> &'static str { "scalelock" }
//!        // fn unavailable(&self) -> Option<String> { None }
//!    }
//!    ```
//!
//! 2. Add it to [`all`] with one line: `Box::new(my_workload::MyWorkload),` (and `mod my_workload;`
//!    above). `--workload my-workload` then selects it, the table, JSON, CSV and report pick it up.
//!
//! ## What `plan` returns
//!
//! A [`Point`] is one measurement: `Point::new(lock, threads, run)` where `run` is a closure
//! `Fn(&Trial) -> Result<Measurement, String>`. The driver builds the [`Trial`] (thread count,
//! warm-up, duration, and the point's `sample_every`), calls `run`, and turns the
//! [`Measurement`] into a JSON record. Builder methods add `.case("hold 1 µs")` (a sub-scenario,
//! plotted separately), `.series("auto")` (the line label, defaults to the lock),
//! `.param("hold_ns", 1000)` (extra JSON fields under `params`) and `.sample_every(n)`.
//! Return `Err(message)` from `run` when the workload's own consistency check fails (a lock lost
//! updates): the bench reports it and exits non-zero. `trial.duration` is the measured time of one
//! run (`--duration-ms`, 100 ms by default, 20 ms with `--quick`); with `--repeat N` every point
//! runs N times, interleaved with the other locks of its cell, and the median is reported. A
//! workload that needs longer (an external server
//! benchmark) may scale it, and should say so in `about`.
//!
//! Results: the driver turns each point's [`Measurement`] into one [`Record`](super::stats::Record)
//! (throughput, CPU ns per op, latency p50/p99/max, fairness, plus `case`, `series` and
//! `params`) and the table, `--json`, `--csv` and `--report` show it; a workload never prints or
//! writes files itself. A workload that measures something the harness does not (an external
//! program's transactions per second) builds the `Measurement` itself: per-thread operation
//! counts, the elapsed window, the CPU time, and an empty
//! [`new_histogram`](super::harness::new_histogram) if it has no latencies.
//!
//! Inside `run`, call [`measure`](super::harness::measure)`(trial, &shared, |shared, w| { ..; 1 })`:
//! it starts `trial.threads` threads together, warms up, measures, stops, and returns
//! per-thread op counts, CPU time and the latency histogram. The closure performs one operation
//! (or a batch) and returns how many it did. To sample acquisition latency, call
//! `let s = w.sample();` just before acquiring and `w.acquired(s)` first thing inside the
//! critical section. `w.rand()` / `w.one_in(n)` give a per-thread RNG, `w.tally` a per-thread
//! counter summed into `Measurement::tally` for checks; [`Work::ns`](super::work::Work::ns) gives
//! calibrated busy work.
//!
//! For a lock workload, write the body once, generic over the lock: implement
//! [`MutexBench`] (`fn run<M: BenchMutex>(&self, trial: &Trial) ->
//! Result<Measurement, String>`) or [`RwBench`], and let
//! [`mutex_points`] / [`rwlock_points`] make one point per selected lock and thread count.
//!
//! ## Workloads that compare something other than locks
//!
//! The `lock` column names whatever is compared. A workload comparing allocators or map variants
//! returns its variant names from [`Workload::columns`] (e.g. `["system", "scalelock-alloc"]`),
//! uses them as the `lock` of its points, and names its own entry in [`Workload::ours`] (the
//! series whose ratio to the best other is reported). Series named `<ours>-<variant>` (e.g.
//! `scalelock-biased`, or `scalelock-alloc-nocache` next to `scalelock-alloc`) belong to the same
//! family: each gets its own ratio row, against the best series *outside* the family.
//! `--locks` accepts any name some workload lists in `columns`, and [`Selection::wants`] filters
//! by it.
//!
//! ## Workloads that cannot always run
//!
//! A workload that needs something this machine may lack (a `mariadbd` binary, sysbench)
//! returns the reason from [`Workload::unavailable`]; the bench prints it and skips the
//! workload instead of failing the run.

use super::harness::{Measurement, Trial};
use super::locks::{self, MutexBench, RwBench};
use std::collections::BTreeMap;
use std::sync::Arc;

mod adaptive_grid;
mod child_points;
mod large_alloc;
mod lockstat_overhead;
mod log_append;
mod mariadb_sysbench;
mod mutex_common;
mod mutex_hammer;
mod mutex_long;
mod mutex_short;
mod path_lookup;
mod preload_hammer;
mod rcu_read;
mod read_mostly;
mod read_write;
mod reader_tail;
mod recursive_read;
mod rw_common;
mod rwlock_hammer;
mod uncontended;

/// Every workload, in the order they run and appear in the report.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(uncontended::Uncontended),
        Box::new(mutex_short::MutexShort),
        Box::new(mutex_long::MutexLong),
        Box::new(mutex_hammer::MutexHammer),
        Box::new(preload_hammer::PreloadHammer),
        Box::new(adaptive_grid::AdaptiveGrid),
        Box::new(read_mostly::ReadMostly),
        Box::new(read_write::ReadWrite),
        Box::new(rwlock_hammer::RwlockHammer),
        Box::new(recursive_read::RecursiveRead),
        Box::new(reader_tail::ReaderTail),
        Box::new(log_append::LogAppend),
        Box::new(path_lookup::PathLookup),
        Box::new(rcu_read::RcuRead),
        Box::new(lockstat_overhead::LockstatOverhead),
        Box::new(large_alloc::LargeAlloc),
        Box::new(mariadb_sysbench::MariadbSysbench),
    ]
}

/// A benchmark scenario.
pub trait Workload: Send + Sync {
    /// The name used by `--workload` and in the JSON `workload` field.
    fn name(&self) -> &'static str;
    /// What the workload does and which seed document it reproduces (shown in the report).
    fn about(&self) -> &'static str;
    /// Every value this workload can put in the `lock` column (used to validate `--locks`).
    fn columns(&self) -> Vec<&'static str>;
    /// The series compared against the best of the others in tables and reports (with its
    /// `<ours>-<variant>` family).
    fn ours(&self) -> &'static str {
        "scalelock"
    }
    /// What the throughput counts, for table and report headings.
    fn throughput_label(&self) -> &'static str {
        "ops/s, all threads"
    }
    /// What the latency samples time, for table and report headings.
    fn latency_label(&self) -> &'static str {
        "acquisition latency"
    }
    /// Whether a bench run without `--workload` includes it (false for workloads that need
    /// outside programs or take minutes, such as `mariadb-sysbench`).
    fn in_default_sweep(&self) -> bool {
        true
    }
    /// Why this workload cannot run on this machine, if it cannot (it is then skipped).
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// The measurements to make for this selection.
    fn plan(&self, sel: &Selection) -> Vec<Point>;
}

/// What the user asked for, as workloads see it.
#[derive(Clone, Debug)]
pub struct Selection {
    /// `--locks`, or `None` for every lock.
    pub locks: Option<Vec<String>>,
    /// Thread counts to sweep.
    pub threads: Vec<usize>,
    /// `--quick`: workloads with extra dimensions may thin them out.
    pub quick: bool,
    /// `--threads` was not given: `threads` is the default sweep, and a workload may add thread
    /// counts of its own (the mutex hammer's 64 threads).
    pub default_sweep: bool,
    /// The measured window of each run (`--duration-ms`), for a workload whose runs take a time
    /// of their own (a server's benchmark) to say how long they take.
    pub duration: std::time::Duration,
}

impl Selection {
    /// Whether `lock` was selected.
    pub fn wants(&self, lock: &str) -> bool {
        match &self.locks {
            None => true,
            Some(l) => l.iter().any(|x| x == lock),
        }
    }
}

/// The closure that runs one point.
pub type RunFn = Box<dyn Fn(&Trial) -> Result<Measurement, String> + Send + Sync>;

/// One measurement to make.
pub struct Point {
    /// Value of the `lock` column.
    pub lock: String,
    /// Line label in tables and plots (defaults to `lock`).
    pub series: String,
    /// Sub-scenario, plotted separately.
    pub case: Option<String>,
    /// Worker threads.
    pub threads: usize,
    /// Latency sampling interval (see [`super::harness::sample_every_for`]).
    pub sample_every: u32,
    /// Extra JSON fields.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Time a run of this point takes beyond the harness's own warm-up and measured window (a
    /// child process, settling, a wait after it), for the time estimate printed at the start.
    pub overhead: std::time::Duration,
    /// The point's runs already happen outside the bench's process (a child of their own, a
    /// server): `--isolate` leaves them as they are.
    pub own_process: bool,
    /// Runs the point.
    pub run: RunFn,
}

impl Point {
    /// A point measuring `lock` on `threads` threads with `run`.
    pub fn new(
        lock: &str,
        threads: usize,
        run: impl Fn(&Trial) -> Result<Measurement, String> + Send + Sync + 'static,
    ) -> Point {
        Point {
            lock: lock.to_string(),
            series: lock.to_string(),
            case: None,
            threads,
            sample_every: 1,
            params: BTreeMap::new(),
            overhead: std::time::Duration::ZERO,
            own_process: false,
            run: Box::new(run),
        }
    }

    /// Sets the sub-scenario.
    pub fn case(mut self, case: impl Into<String>) -> Point {
        self.case = Some(case.into());
        self
    }

    /// Sets the line label.
    pub fn series(mut self, series: impl Into<String>) -> Point {
        self.series = series.into();
        self
    }

    /// Adds an extra JSON field under `params`.
    pub fn param(mut self, key: &str, value: impl Into<serde_json::Value>) -> Point {
        self.params.insert(key.to_string(), value.into());
        self
    }

    /// Marks the point as running outside the bench's process already (see
    /// [`Point::own_process`](struct.Point.html#structfield.own_process)).
    pub fn own_process(mut self) -> Point {
        self.own_process = true;
        self
    }

    /// Sets the time a run takes beyond its warm-up and measured window (see
    /// [`Point::overhead`](struct.Point.html#structfield.overhead)).
    pub fn overhead(mut self, d: std::time::Duration) -> Point {
        self.overhead = d;
        self
    }

    /// Sets the latency sampling interval.
    pub fn sample_every(mut self, n: u32) -> Point {
        self.sample_every = n.max(1);
        self
    }
}

/// One point per selected mutex in `locks` and per selected thread count, running `bench`.
pub fn mutex_points<B: MutexBench + Send + 'static>(
    sel: &Selection,
    lock_names: &[&'static str],
    bench: B,
    sample_every: u32,
) -> Vec<Point> {
    let bench = Arc::new(bench);
    let mut points = Vec::new();
    for &lock in lock_names.iter().filter(|l| sel.wants(l)) {
        for &threads in &sel.threads {
            let b = Arc::clone(&bench);
            points.push(
                Point::new(lock, threads, move |t| locks::run_mutex(lock, &*b, t))
                    .sample_every(sample_every),
            );
        }
    }
    points
}

/// One point per selected rwlock in `locks` and per selected thread count, running `bench`.
pub fn rwlock_points<B: RwBench + Send + 'static>(
    sel: &Selection,
    lock_names: &[&'static str],
    bench: B,
    sample_every: u32,
) -> Vec<Point> {
    let bench = Arc::new(bench);
    let mut points = Vec::new();
    for &lock in lock_names.iter().filter(|l| sel.wants(l)) {
        for &threads in &sel.threads {
            let b = Arc::clone(&bench);
            points.push(
                Point::new(lock, threads, move |t| locks::run_rwlock(lock, &*b, t))
                    .sample_every(sample_every),
            );
        }
    }
    points
}

/// Every name accepted by `--locks`: the union of all workloads' columns.
pub fn known_columns(workloads: &[Box<dyn Workload>]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for w in workloads {
        for c in w.columns() {
            if !names.contains(&c) {
                names.push(c);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_are_unique_and_documented() {
        let ws = all();
        for (i, w) in ws.iter().enumerate() {
            assert!(!w.about().is_empty(), "{}", w.name());
            assert!(!w.columns().is_empty(), "{}", w.name());
            assert!(ws[..i].iter().all(|o| o.name() != w.name()));
        }
    }

    #[test]
    fn every_workload_plans_points_for_its_own_columns_only() {
        let sel = Selection {
            locks: None,
            threads: vec![1, 2],
            quick: true,
            default_sweep: false,
            duration: std::time::Duration::from_millis(100),
        };
        for w in all() {
            let points = w.plan(&sel);
            assert!(!points.is_empty(), "{}", w.name());
            let cols = w.columns();
            assert!(points.iter().all(|p| cols.contains(&p.lock.as_str())));
        }
    }

    use crate::bench::harness::Trial;
    use crate::bench::locks::{BenchMutex, BenchRwLock, Nesting};
    use crate::bench::work::Work;
    use std::time::Duration;

    fn trial(threads: usize) -> Trial {
        Trial {
            threads,
            warmup: Duration::from_millis(2),
            duration: Duration::from_millis(15),
            sample_every: 4,
        }
    }

    /// A "lock" that does not lock: the workloads' checks must catch it.
    struct NoLock;

    impl BenchMutex for NoLock {
        fn new() -> Self {
            NoLock
        }
        fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
            f()
        }
    }

    impl BenchRwLock for NoLock {
        const NESTING: Nesting = Nesting::Reentrant;
        fn new() -> Self {
            NoLock
        }
        fn read<R>(&self, f: impl FnOnce() -> R) -> R {
            f()
        }
        fn write<R>(&self, f: impl FnOnce() -> R) -> R {
            f()
        }
    }

    fn hold() -> mutex_common::HoldBench {
        mutex_common::HoldBench {
            hold: Work::ns(50),
            think: Work::NONE,
        }
    }

    fn mix() -> rw_common::RwMix {
        rw_common::RwMix {
            write_one_in: 2,
            nested: true,
            think: Work::NONE,
        }
    }

    #[test]
    fn every_mutex_passes_the_lost_update_check_under_contention() {
        for lock in locks::MUTEXES.iter().chain([&locks::FLOOR]) {
            let m = locks::run_mutex(lock, &hold(), &trial(4))
                .unwrap_or_else(|e| panic!("{lock}: {e}"));
            assert!(m.ops_all > 0, "{lock}");
        }
    }

    #[test]
    fn the_hammers_and_rcu_reads_pass_their_checks_under_contention() {
        for w in [
            Box::new(mutex_hammer::MutexHammer) as Box<dyn Workload>,
            Box::new(rwlock_hammer::RwlockHammer),
            Box::new(rcu_read::RcuRead),
        ] {
            let sel = Selection {
                locks: None,
                threads: vec![3],
                quick: true,
                default_sweep: false,
                duration: std::time::Duration::from_millis(100),
            };
            for p in w.plan(&sel) {
                let m = (p.run)(&trial(p.threads))
                    .unwrap_or_else(|e| panic!("{} {}: {e}", w.name(), p.series));
                assert!(m.ops_all > 0, "{} {}", w.name(), p.series);
            }
        }
    }

    #[test]
    fn every_rwlock_passes_the_torn_read_and_lost_update_checks_under_contention() {
        for lock in locks::RWLOCKS {
            let m = locks::run_rwlock(lock, &mix(), &trial(4))
                .unwrap_or_else(|e| panic!("{lock}: {e}"));
            assert!(m.ops_all > 0 && m.tally > 0, "{lock}");
        }
    }

    #[test]
    fn the_checks_catch_a_lock_that_does_not_exclude() {
        // Races are likely but not certain in one short run; a few tries make a miss negligible.
        let caught_mutex = (0..20).any(|_| {
            <mutex_common::HoldBench as MutexBench>::run::<NoLock>(&hold(), &trial(4)).is_err()
        });
        assert!(caught_mutex, "lost updates went unnoticed");
        let caught_rw = (0..20)
            .any(|_| <rw_common::RwMix as RwBench>::run::<NoLock>(&mix(), &trial(4)).is_err());
        assert!(caught_rw, "torn reads / lost updates went unnoticed");
        let caught_hammer = (0..20).any(|_| {
            <mutex_hammer::HammerBench as MutexBench>::run::<NoLock>(
                &mutex_hammer::HammerBench,
                &trial(4),
            )
            .is_err()
        });
        assert!(caught_hammer, "mutex-hammer: lost updates went unnoticed");
        let rw = rwlock_hammer::HammerBench { write_one_in: 2 };
        let caught_rw_hammer = (0..20).any(|_| {
            <rwlock_hammer::HammerBench as RwBench>::run::<NoLock>(&rw, &trial(4)).is_err()
        });
        assert!(caught_rw_hammer, "rwlock-hammer: torn reads went unnoticed");
    }

    #[test]
    fn lock_selection_filters_points() {
        let sel = Selection {
            locks: Some(vec!["std".into()]),
            threads: vec![1, 4],
            quick: true,
            default_sweep: false,
            duration: std::time::Duration::from_millis(100),
        };
        for w in all() {
            for p in w.plan(&sel) {
                assert_eq!(p.lock, "std", "{}", w.name());
            }
        }
    }
}
