//! `scalelock bench`: every seed scenario against the usual alternatives.
//!
//! - [`locks`]: one adapter per lock (mutex-like and rwlock-like traits);
//! - [`workloads`]: one module per workload (see its docs for how to add one);
//! - [`harness`]: threads started together, warm-up, fixed-duration measurement, sampled latency;
//! - [`stats`]: percentiles, fairness, ratios; [`output`]: table, JSON, CSV; [`report`]: HTML.

pub mod child;
pub mod compare;
pub mod global_alloc;
pub mod group;
pub mod harness;
pub mod locks;
pub mod machine;
pub mod markdown;
pub mod memory;
pub mod output;
pub mod report;
pub mod stats;
pub mod work;
pub mod workloads;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use output::{Config, Metric, Run, WorkloadInfo};
use stats::{summarize, Record, RunStats, Spread};
use std::path::PathBuf;
use std::time::Duration;

/// Thread counts of the default sweep: up to 64x oversubscription on 2 cores (seed 004's cliff).
pub const DEFAULT_THREADS: &[usize] = &[1, 2, 4, 8, 32, 128];
/// Thread counts of `--quick`.
pub const QUICK_THREADS: &[usize] = &[1, 4, 32];
/// Measured milliseconds of one run of a point by default.
pub const DEFAULT_DURATION_MS: u64 = 100;
/// Measured milliseconds of one run with `--quick`.
pub const QUICK_DURATION_MS: u64 = 20;
/// Runs per point without `--repeat`.
pub const DEFAULT_REPEAT: usize = 1;
/// Largest accepted `--repeat`.
pub const MAX_REPEAT: usize = 1000;
/// Largest accepted `--duration-ms` (10 minutes).
pub const MAX_DURATION_MS: u64 = 600_000;
/// Largest accepted thread count.
pub const MAX_THREADS: usize = 4096;

/// What `scalelock bench` was asked to do (already parsed by the command line).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--workload`: names, or all.
    pub workloads: Option<Vec<String>>,
    /// `--locks`: names, or all.
    pub locks: Option<Vec<String>>,
    /// `--threads`, or the default sweep.
    pub threads: Option<Vec<usize>>,
    /// `--duration-ms`, or the default.
    pub duration_ms: Option<u64>,
    /// `--json FILE`.
    pub json: Option<PathBuf>,
    /// `--csv FILE`.
    pub csv: Option<PathBuf>,
    /// `--report DIR`.
    pub report: PathBuf,
    /// `--quick`.
    pub quick: bool,
    /// `--repeat N`, or [`DEFAULT_REPEAT`].
    pub repeat: Option<usize>,
    /// `--isolate`: every run of a point in a process of its own (see [`measure_run`]).
    pub isolate: bool,
    /// `--markdown FILE`.
    pub markdown: Option<PathBuf>,
    /// `--metric`: the figures the stdout table shows.
    pub metrics: Vec<Metric>,
    /// The command line as typed, for the results file.
    pub command: String,
}

/// Warm-up for a measured duration: a fifth of it, between 5 and 100 ms.
pub fn warmup_for(duration: Duration) -> Duration {
    (duration / 5).clamp(Duration::from_millis(5), Duration::from_millis(100))
}

/// Checks the options against the registered workloads and locks; returns the selected workloads.
fn select(opts: &Options) -> Result<Vec<Box<dyn workloads::Workload>>, String> {
    let all = workloads::all();
    let names: Vec<&str> = all.iter().map(|w| w.name()).collect();
    if let Some(wanted) = &opts.workloads {
        for w in wanted {
            if !names.contains(&w.as_str()) {
                return Err(format!(
                    "unknown workload `{w}`; choose from: {}",
                    names.join(", ")
                ));
            }
        }
    }
    if let Some(locks) = &opts.locks {
        let known = workloads::known_columns(&all);
        for l in locks {
            if !known.contains(&l.as_str()) {
                return Err(format!(
                    "unknown lock `{l}`; choose from: {}",
                    known.join(", ")
                ));
            }
        }
    }
    if let Some(threads) = &opts.threads {
        if let Some(bad) = threads.iter().find(|&&t| t == 0 || t > MAX_THREADS) {
            return Err(format!(
                "thread count {bad} is out of range 1..={MAX_THREADS}"
            ));
        }
    }
    if let Some(n) = opts.repeat {
        if n == 0 || n > MAX_REPEAT {
            return Err(format!("--repeat {n} is out of range 1..={MAX_REPEAT}"));
        }
    }
    if let Some(d) = opts.duration_ms {
        if d == 0 || d > MAX_DURATION_MS {
            return Err(format!(
                "--duration-ms {d} is out of range 1..={MAX_DURATION_MS}"
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|w| match &opts.workloads {
            None => w.in_default_sweep(),
            Some(ws) => ws.iter().any(|n| n == w.name()),
        })
        .collect())
}

/// The JSON record of one run of point `p` (its `runs` holds that run alone).
fn record(workload: &str, p: &workloads::Point, m: &harness::Measurement, cpus: usize) -> Record {
    let s = summarize(m);
    let run = stats::RunStats::of(&s, m.elapsed.as_secs_f64());
    Record {
        workload: workload.to_string(),
        lock: p.lock.clone(),
        threads: p.threads,
        ops_per_sec: s.ops_per_sec,
        cpu_ns_per_op: s.cpu_ns_per_op,
        latency_ns: s.latency,
        fairness: s.fairness,
        case: p.case.clone(),
        series: p.series.clone(),
        ns_per_op: s.ns_per_op,
        total_ops: s.total_ops,
        elapsed_s: m.elapsed.as_secs_f64(),
        latency_samples: s.samples,
        context_switches_per_op: s.switches_per_op,
        cpu_utilization: m.cpu.as_secs_f64()
            / (m.elapsed.as_secs_f64() * p.threads.min(cpus).max(1) as f64).max(1e-9),
        params: {
            let mut params = p.params.clone();
            for (k, v) in &m.extra {
                params.insert((*k).to_string(), v.clone());
            }
            params
        },
        ops_per_sec_spread: Spread::of(&[s.ops_per_sec]),
        runs: vec![run],
    }
}

/// Orders a workload's points case by case, and within a case thread count by thread count,
/// keeping the workload's lock order: the locks compared at one thread count run back to back,
/// so a burst of outside load hits them alike instead of penalising whichever lock ran during it.
fn interleave(points: &mut [workloads::Point]) {
    let mut cases: Vec<Option<String>> = Vec::new();
    for p in points.iter() {
        if !cases.contains(&p.case) {
            cases.push(p.case.clone());
        }
    }
    points.sort_by_key(|p| (cases.iter().position(|c| *c == p.case), p.threads));
}

/// Why `scalelock bench` failed.
#[derive(Debug)]
pub enum Error {
    /// Bad arguments (exit status 2).
    Usage(String),
    /// The run itself failed: a consistency check or an output file (exit status 1).
    Failed(String),
}

/// The cells of a plan: the indices of the points measured side by side (same workload, case
/// and thread count), in plan order.
fn cells(plan: &[(&str, workloads::Point)]) -> Vec<Vec<usize>> {
    let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, (w, p)) in plan.iter().enumerate() {
        let same = |j: usize| {
            let (w2, q) = &plan[j];
            w2 == w && q.case == p.case && q.threads == p.threads
        };
        match out.iter_mut().find(|(first, _)| same(*first)) {
            Some((_, members)) => members.push(i),
            None => out.push((i, vec![i])),
        }
    }
    out.into_iter().map(|(_, m)| m).collect()
}

/// A small xorshift generator for shuffling the order of each round (no statistical claims:
/// it only has to keep a lock from always running first).
struct Shuffler(u64);

impl Shuffler {
    fn new(seed: u64) -> Shuffler {
        Shuffler(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// The order of the runs: cell by cell; within a cell `repeat` rounds, each running every point
/// of the cell once, in an order shuffled per round. A phase change of the machine (other work
/// starting, a VM migrating) then hits every lock of the cell alike, and run `k` of each point
/// of a cell are paired (same round).
pub fn schedule(cells: &[Vec<usize>], repeat: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = Shuffler::new(seed);
    let mut out = Vec::new();
    for cell in cells {
        for round in 0..repeat {
            let mut order = cell.clone();
            rng.shuffle(&mut order);
            out.extend(order.into_iter().map(|i| (i, round)));
        }
    }
    out
}

/// What one run costs besides its warm-up and measured window, fitted to the per-run wall times
/// (`runs[].wall_s` in the JSON) of default and `--quick` sweeps on the 2-core development VM:
/// a fixed part (setting up the workload), half a warm-up (the harness gives threads that have
/// not run yet up to one more warm-up), starting, stopping and joining each thread, and a part
/// that grows with the square of the threads beyond the CPUs: when the stop flag is raised every
/// thread must still finish its operation, and with spinning locks under oversubscription each
/// of those waits for preempted holders.
const RUN_FIXED: Duration = Duration::from_millis(5);
/// See [`RUN_FIXED`].
const PER_THREAD: Duration = Duration::from_millis(4);
/// See [`RUN_FIXED`].
const PER_EXCESS_THREAD_SQUARED: Duration = Duration::from_micros(41);

/// How long one run of a point on `threads` threads takes, about, on a machine with `cpus`
/// usable CPUs.
pub fn run_estimate(threads: usize, cpus: usize, warmup: Duration, duration: Duration) -> Duration {
    let excess = threads.saturating_sub(cpus) as u32;
    warmup
        + duration
        + RUN_FIXED
        + warmup / 2
        + PER_THREAD * threads as u32
        + PER_EXCESS_THREAD_SQUARED * (excess * excess)
}

/// Fails unless `path` can be written: it is created (and removed again) when absent.
fn check_writable_file(path: &std::path::Path, flag: &str) -> Result<(), String> {
    let existed = path.exists();
    if path.is_dir() {
        return Err(format!("{flag} {}: is a directory", path.display()));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("{flag} {}: cannot write there: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Fails unless the report directory can be created and written into.
fn check_writable_dir(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--report {}: cannot create it: {e}", dir.display()))?;
    let probe = dir.join(".scalelock-write-check");
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--report {}: cannot write there: {e}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Checks every output path before anything is measured.
fn check_outputs(opts: &Options) -> Result<(), String> {
    for (flag, path) in [
        ("--json", &opts.json),
        ("--csv", &opts.csv),
        ("--markdown", &opts.markdown),
    ] {
        if let Some(p) = path {
            check_writable_file(p, flag)?;
        }
    }
    check_writable_dir(&opts.report)
}

/// Runs the point a child process was started for (see [`child::run_point`]): plans the
/// workload for that one lock and thread count and runs the point's closure in this process.
///
/// ```ignore
/// if let Some(code) = bench::child::serve(bench::run_child_point) { return code; }
/// ```
pub fn run_child_point(
    p: &child::PointSpec,
    trial: &harness::Trial,
) -> Result<harness::Measurement, String> {
    let all = workloads::all();
    let w = all
        .iter()
        .find(|w| w.name() == p.workload)
        .ok_or_else(|| format!("child: unknown workload `{}`", p.workload))?;
    let sel = workloads::Selection {
        locks: Some(vec![p.lock.clone()]),
        threads: vec![trial.threads],
        quick: false,
        default_sweep: false,
        duration: trial.duration,
    };
    let point = w
        .plan(&sel)
        .into_iter()
        .find(|q| {
            q.lock == p.lock
                && q.case == p.case
                && q.threads == trial.threads
                && p.series.as_ref().is_none_or(|s| *s == q.series)
        })
        .ok_or_else(|| {
            format!(
                "child: {} has no point {} {:?} {:?}",
                p.workload, p.lock, p.case, p.series
            )
        })?;
    (point.run)(trial)
}

/// One run of `point` of `workload`: in this process, or with `isolate` in a child process of
/// its own (a point whose runs already leave the process runs as it is).
///
/// Runs inside one process share what the process drew when it started and allocated: where
/// the lock's cache line and the threads' stacks landed (a line's home in the host's cache
/// decides what every transfer of it costs), and the rounds of `--repeat` then measure that
/// draw over and over (their spread hides it). A child per run samples it afresh.
fn measure_run(
    workload: &str,
    point: &workloads::Point,
    trial: &harness::Trial,
    isolate: bool,
) -> Result<harness::Measurement, String> {
    if isolate && !point.own_process && !child::in_child() {
        child::run_point(
            workload,
            &point.lock,
            point.case.as_deref(),
            Some(&point.series),
            trial,
            &[],
        )
    } else {
        (point.run)(trial)
    }
}

/// Runs the bench: measures, prints the table, writes JSON / CSV / markdown / report.
pub fn run(opts: &Options) -> Result<(), Error> {
    let started = std::time::SystemTime::now();
    // The commit this binary was built from: the code the run measures.
    let commit = machine::commit();
    let selected = select(opts).map_err(Error::Usage)?;
    let repeat = opts.repeat.unwrap_or(DEFAULT_REPEAT);
    let mut threads = opts.threads.clone().unwrap_or_else(|| {
        if opts.quick {
            QUICK_THREADS.to_vec()
        } else {
            DEFAULT_THREADS.to_vec()
        }
    });
    threads.sort_unstable();
    threads.dedup();
    let duration = Duration::from_millis(opts.duration_ms.unwrap_or(if opts.quick {
        QUICK_DURATION_MS
    } else {
        DEFAULT_DURATION_MS
    }));
    let sel = workloads::Selection {
        locks: opts.locks.clone(),
        threads: threads.clone(),
        quick: opts.quick,
        default_sweep: opts.threads.is_none(),
        duration,
    };

    let mut plan = Vec::new();
    for w in &selected {
        if let Some(why) = w.unavailable() {
            eprintln!("scalelock bench: note: skipping `{}`: {why}", w.name());
            continue;
        }
        let mut points = w.plan(&sel);
        interleave(&mut points);
        if points.is_empty() {
            eprintln!(
                "scalelock bench: note: workload `{}` has none of the selected locks; skipped",
                w.name()
            );
        }
        plan.extend(points.into_iter().map(|p| (w.name(), p)));
    }
    if plan.is_empty() {
        return Err(Error::Usage(
            "nothing to run: no selected workload measures any selected lock".into(),
        ));
    }
    check_outputs(opts).map_err(Error::Failed)?;

    let load_start = machine::load_average();
    let cpus = machine::detect().usable_cpus;
    if let Some(load) = load_start.filter(|&l| l > cpus as f64) {
        eprintln!(
            "scalelock bench: warning: load average {load:.1} on {cpus} CPUs: other work is \
             running, the numbers will be noisy"
        );
    }
    let warmup = warmup_for(duration);
    let order = schedule(
        &cells(&plan),
        repeat,
        started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    );
    let estimate: Duration = order
        .iter()
        .map(|&(i, _)| {
            let point = &plan[i].1;
            let start = if opts.isolate && !point.own_process {
                child::START
            } else {
                Duration::ZERO
            };
            run_estimate(point.threads, cpus, warmup, duration) + point.overhead + start
        })
        .sum();
    eprintln!(
        "scalelock bench: {} points × {repeat} run{} of {} ms (+{} ms warm-up), threads {:?}: \
         about {}",
        plan.len(),
        if repeat == 1 { "" } else { "s" },
        duration.as_millis(),
        warmup.as_millis(),
        threads,
        human_seconds(estimate.as_secs_f64())
    );
    let bar = ProgressBar::with_draw_target(Some(order.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} eta {eta:>3} {wide_msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );

    let spin_policy = scalelock::wait::spin_policy().to_string();
    let clock_overhead_ns = harness::clock_overhead_ns();
    let t0 = std::time::Instant::now();
    let mut runs: Vec<Vec<Record>> = (0..plan.len()).map(|_| Vec::new()).collect();
    let mut latency: Vec<hdrhistogram::Histogram<u64>> =
        (0..plan.len()).map(|_| harness::new_histogram()).collect();
    let mut failed: Vec<Option<String>> = vec![None; plan.len()];
    for (i, round) in order {
        let (workload, p) = &plan[i];
        bar.set_message(format!(
            "{workload} {}{} {}t, run {}/{repeat}",
            p.case
                .as_deref()
                .map_or(String::new(), |c| format!("[{c}] ")),
            p.series,
            p.threads,
            round + 1
        ));
        bar.inc(1);
        if failed[i].is_some() {
            continue;
        }
        let trial = harness::Trial {
            threads: p.threads,
            warmup,
            duration,
            sample_every: p.sample_every,
        };
        let round_trip = harness::line_round_trip_ns();
        let run_started = std::time::Instant::now();
        match measure_run(workload, p, &trial, opts.isolate) {
            Ok(m) => {
                let mut rec = record(workload, p, &m, cpus);
                for k in &mut rec.runs {
                    k.wall_s = run_started.elapsed().as_secs_f64();
                    k.line_round_trip_ns = round_trip;
                    k.process = m.process;
                }
                if bar.is_hidden() && std::env::var_os("SCALELOCK_BENCH_VERBOSE").is_some() {
                    eprintln!("{}", output::point_line(&rec));
                }
                let _ = latency[i].add(&m.latency);
                runs[i].push(rec);
            }
            Err(e) => {
                bar.suspend(|| {
                    eprintln!(
                        "scalelock bench: {workload} {} {}t FAILED: {e}",
                        p.series, p.threads
                    )
                });
                failed[i] = Some(format!(
                    "{workload} {} {} threads: {e}",
                    p.series, p.threads
                ));
            }
        }
    }
    let elapsed = t0.elapsed();
    bar.finish_and_clear();
    eprintln!(
        "scalelock bench: measured in {} (estimated {})",
        human_seconds(elapsed.as_secs_f64()),
        human_seconds(estimate.as_secs_f64())
    );
    let failures: Vec<String> = failed.into_iter().flatten().collect();
    let mut records: Vec<Record> = runs
        .into_iter()
        .zip(&latency)
        .filter_map(|(rs, h)| combine(rs, h))
        .collect();

    let infos: Vec<WorkloadInfo> = selected
        .iter()
        .map(|w| WorkloadInfo {
            name: w.name().to_string(),
            about: w.about().to_string(),
            ours: w.ours().to_string(),
            throughput: w.throughput_label().to_string(),
            latency: w.latency_label().to_string(),
        })
        .collect();
    output::annotate_ratios(&mut records, &infos);
    let run = Run {
        machine: machine::detect(),
        results: records,
        config: Config {
            duration_ms: duration.as_millis() as u64,
            repeat,
            isolate: opts.isolate,
            warmup_ms: warmup.as_millis() as u64,
            threads,
            quick: opts.quick,
            spin_policy,
            clock_overhead_ns,
            load_average: [load_start, machine::load_average()],
            command: opts.command.clone(),
            commit,
            date: machine::utc_date(started),
            elapsed_s: elapsed.as_secs_f64(),
            estimate_s: estimate.as_secs_f64(),
        },
        workloads: infos,
    };

    print!("{}", output::table(&run, &opts.metrics));
    if let Some(path) = &opts.json {
        output::write_json(&run, path).map_err(Error::Failed)?;
        eprintln!("scalelock bench: wrote {}", path.display());
    }
    if let Some(path) = &opts.csv {
        output::write_csv(&run, path).map_err(Error::Failed)?;
        eprintln!("scalelock bench: wrote {}", path.display());
    }
    if let Some(path) = &opts.markdown {
        markdown::write(&run, path).map_err(Error::Failed)?;
        eprintln!("scalelock bench: wrote {}", path.display());
    }
    let index = report::write(&run, &opts.report).map_err(Error::Failed)?;
    eprintln!("scalelock bench: report in {}", index.display());

    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Failed(format!(
            "{} point(s) failed their consistency check:\n  {}",
            failures.len(),
            failures.join("\n  ")
        )))
    }
}

/// One point's record from its runs: the median run's record, with `ops_per_sec`,
/// `cpu_ns_per_op` and `context_switches_per_op` the medians of the runs, latency percentiles
/// over every run's samples (`latency`) with the longest of the runs' stalls, and every run
/// kept in `runs`. `None` when the point never ran.
pub fn combine(runs: Vec<Record>, latency: &hdrhistogram::Histogram<u64>) -> Option<Record> {
    let ops: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
    let cpu: Vec<f64> = runs.iter().map(|r| r.cpu_ns_per_op).collect();
    // Measured in every run, or not at all (a workload measures them or does not).
    let switches: Option<Vec<f64>> = runs.iter().map(|r| r.context_switches_per_op).collect();
    let spread = Spread::of(&ops);
    let mid = stats::median_index(&ops);
    let kept: Vec<RunStats> = runs.iter().flat_map(|r| r.runs.clone()).collect();
    let mut rec = runs.into_iter().nth(mid)?;
    rec.ops_per_sec = spread.median;
    rec.cpu_ns_per_op = Spread::of(&cpu).median;
    rec.context_switches_per_op = switches.map(|v| Spread::of(&v).median);
    rec.ns_per_op = if spread.median > 0.0 {
        rec.threads as f64 * 1e9 / spread.median
    } else {
        rec.ns_per_op
    };
    if !latency.is_empty() {
        rec.latency_ns = stats::Latency {
            stall: kept.iter().map(|k| k.latency_ns.stall).max().unwrap_or(0),
            ..stats::latency(latency)
        };
        rec.latency_samples = latency.len();
    }
    rec.ops_per_sec_spread = spread;
    rec.runs = kept;
    Some(rec)
}

/// `45 s`, `6.2 min`.
pub fn human_seconds(s: f64) -> String {
    if s < 100.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            report: PathBuf::from("unused"),
            ..Options::default()
        }
    }

    #[test]
    fn unknown_names_and_bad_numbers_are_rejected_with_the_choices() {
        let e = select(&Options {
            workloads: Some(vec!["nope".into()]),
            ..opts()
        })
        .err()
        .unwrap();
        assert!(
            e.contains("unknown workload `nope`") && e.contains("mutex-short"),
            "{e}"
        );
        let e = select(&Options {
            locks: Some(vec!["futex9".into()]),
            ..opts()
        })
        .err()
        .unwrap();
        assert!(
            e.contains("unknown lock `futex9`") && e.contains("parking_lot"),
            "{e}"
        );
        assert!(select(&Options {
            threads: Some(vec![1, 0]),
            ..opts()
        })
        .is_err());
        assert!(select(&Options {
            duration_ms: Some(0),
            ..opts()
        })
        .is_err());
        assert!(select(&Options {
            repeat: Some(0),
            ..opts()
        })
        .err()
        .unwrap()
        .contains("--repeat 0"));
    }

    #[test]
    fn selection_keeps_registry_order() {
        let ws = select(&Options {
            workloads: Some(vec!["log-append".into(), "uncontended".into()]),
            ..opts()
        })
        .unwrap();
        let names: Vec<_> = ws.iter().map(|w| w.name()).collect();
        assert_eq!(names, vec!["uncontended", "log-append"]);
    }

    #[test]
    fn points_run_thread_count_by_thread_count_within_each_case() {
        let mk = |lock: &str, case: &str, t| {
            workloads::Point::new(lock, t, |_| Err(String::new())).case(case)
        };
        let mut ps = vec![
            mk("a", "x", 1),
            mk("a", "x", 4),
            mk("b", "x", 1),
            mk("b", "x", 4),
            mk("a", "y", 1),
            mk("b", "y", 1),
        ];
        interleave(&mut ps);
        let order: Vec<_> = ps
            .iter()
            .map(|p| format!("{}{}{}", p.case.as_deref().unwrap(), p.lock, p.threads))
            .collect();
        assert_eq!(order, ["xa1", "xb1", "xa4", "xb4", "ya1", "yb1"]);
    }

    #[test]
    fn rounds_interleave_the_points_of_a_cell_in_a_shuffled_order() {
        let mk = |lock: &str, t| workloads::Point::new(lock, t, |_| Err(String::new()));
        let plan = vec![
            ("w", mk("a", 1)),
            ("w", mk("b", 1)),
            ("w", mk("c", 1)),
            ("w", mk("a", 4)),
            ("w", mk("b", 4)),
            ("w", mk("c", 4)),
        ];
        let cells = cells(&plan);
        assert_eq!(cells, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        let order = schedule(&cells, 4, 12345);
        assert_eq!(order.len(), 24);
        // Cell by cell; within a cell, round by round, each point once per round.
        for (k, chunk) in order.chunks(3).enumerate() {
            let cell = &cells[k / 4];
            let mut seen: Vec<usize> = chunk.iter().map(|&(i, _)| i).collect();
            seen.sort_unstable();
            assert_eq!(&seen, cell);
            assert!(chunk.iter().all(|&(_, round)| round == k % 4));
        }
        // The order changes between rounds (for some seed; 4 rounds of 3 points all in the
        // same order would be a 1 in 216 chance per seed).
        let shuffled = (0..8u64).any(|seed| {
            let o = schedule(&cells[..1], 4, seed);
            let firsts: Vec<usize> = o.chunks(3).map(|c| c[0].0).collect();
            firsts.iter().any(|&f| f != firsts[0])
        });
        assert!(shuffled);
    }

    #[test]
    fn the_median_run_is_kept_with_every_run() {
        use crate::bench::output::tests::record_runs;
        let runs: Vec<Record> = [(30.0, 0.5), (10.0, 0.1), (20.0, 0.9)]
            .iter()
            .map(|&(o, sw)| {
                let mut r = record_runs("w", None, "std", 2, &[o]);
                r.context_switches_per_op = Some(sw);
                r
            })
            .collect();
        let mut h = harness::new_histogram();
        h.record(1234).unwrap();
        let r = combine(runs, &h).unwrap();
        assert_eq!(r.ops_per_sec, 20.0);
        // The median of the runs' own, not the median run's.
        assert_eq!(r.context_switches_per_op, Some(0.5));
        assert_eq!(
            (r.ops_per_sec_spread.min, r.ops_per_sec_spread.max),
            (10.0, 30.0)
        );
        assert_eq!(r.runs.len(), 3);
        assert_eq!(r.runs[1].ops_per_sec, 10.0, "runs keep their order");
        assert_eq!(r.latency_samples, 1);
        assert!(combine(Vec::new(), &h).is_none());
    }

    #[test]
    fn the_estimate_grows_with_threads_past_the_cpus() {
        let (w, d) = (Duration::from_millis(20), Duration::from_millis(100));
        let one = run_estimate(1, 2, w, d);
        assert!(one >= w + d && one < w + d + Duration::from_millis(50));
        let many = run_estimate(128, 2, w, d);
        assert!(many > run_estimate(128, 128, w, d));
        assert!(many > Duration::from_millis(500));
    }

    #[test]
    fn outputs_are_checked_before_measuring() {
        let dir = std::env::temp_dir().join(format!("scalelock-outputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Options {
            json: Some(dir.join("a.json")),
            report: dir.join("report"),
            ..opts()
        };
        assert!(check_outputs(&ok).is_ok());
        assert!(
            !dir.join("a.json").exists(),
            "the probe leaves nothing behind"
        );
        let bad = Options {
            csv: Some(PathBuf::from("/nonexistent-dir/x.csv")),
            ..ok.clone()
        };
        let e = check_outputs(&bad).unwrap_err();
        assert!(
            e.starts_with("--csv /nonexistent-dir/x.csv: cannot write there"),
            "{e}"
        );
        let dir_as_file = Options {
            markdown: Some(dir.clone()),
            ..ok
        };
        assert!(check_outputs(&dir_as_file)
            .unwrap_err()
            .contains("is a directory"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn warmup_is_a_fifth_within_bounds() {
        assert_eq!(
            warmup_for(Duration::from_millis(200)),
            Duration::from_millis(40)
        );
        assert_eq!(
            warmup_for(Duration::from_millis(1)),
            Duration::from_millis(5)
        );
        assert_eq!(
            warmup_for(Duration::from_secs(10)),
            Duration::from_millis(100)
        );
    }
}
