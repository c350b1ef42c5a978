//! `scalelock bench`: every seed scenario against the usual alternatives.
//!
//! - [`locks`]: one adapter per lock (mutex-like and rwlock-like traits);
//! - [`workloads`]: one module per workload (see its docs for how to add one);
//! - [`harness`]: threads on a barrier, warm-up, fixed-duration measurement, sampled latency;
//! - [`stats`]: percentiles, fairness, ratios; [`output`]: table, JSON, CSV; [`report`]: HTML.

pub mod child;
pub mod global_alloc;
pub mod harness;
pub mod locks;
pub mod machine;
pub mod memory;
pub mod output;
pub mod report;
pub mod stats;
pub mod work;
pub mod workloads;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use output::{Config, Run, WorkloadInfo};
use stats::{summarize, Record};
use std::path::PathBuf;
use std::time::Duration;

/// Thread counts of the default sweep: up to 64x oversubscription on 2 cores (seed 004's cliff).
pub const DEFAULT_THREADS: &[usize] = &[1, 2, 4, 8, 32, 128];
/// Thread counts of `--quick`.
pub const QUICK_THREADS: &[usize] = &[1, 4, 32];
/// Measured milliseconds per point by default.
pub const DEFAULT_DURATION_MS: u64 = 200;
/// Measured milliseconds per point with `--quick`.
pub const QUICK_DURATION_MS: u64 = 40;
/// Rounds per point: each runs half the duration, the second in reverse order, and the round
/// with the higher throughput is reported.
pub const ROUNDS: usize = 2;
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

/// The JSON record of one measured round of point `p`.
fn record(workload: &str, p: &workloads::Point, m: &harness::Measurement, cpus: usize) -> Record {
    let s = summarize(m);
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
        cpu_utilization: m.cpu.as_secs_f64()
            / (m.elapsed.as_secs_f64() * p.threads.min(cpus).max(1) as f64).max(1e-9),
        params: {
            let mut params = p.params.clone();
            for (k, v) in &m.extra {
                params.insert((*k).to_string(), v.clone());
            }
            params
        },
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

/// Runs the bench: measures, prints the table, writes JSON / CSV / report.
pub fn run(opts: &Options) -> Result<(), Error> {
    let selected = select(opts).map_err(Error::Usage)?;
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

    let load_start = machine::load_average();
    let cpus = machine::detect().usable_cpus;
    if let Some(load) = load_start.filter(|&l| l > cpus as f64) {
        eprintln!(
            "scalelock bench: warning: load average {load:.1} on {cpus} CPUs: other work is \
             running, the numbers will be noisy"
        );
    }
    // Each point runs in ROUNDS rounds of half the duration, the second round in reverse order;
    // the round with the higher throughput is reported (outside load only ever slows a round).
    let round = (duration / ROUNDS as u32).max(Duration::from_millis(1));
    let warmup = warmup_for(round);
    // Per-round overhead measured on a 2-core machine: starting up to 128 threads, building a
    // workload's shared state (path-lookup's 100k-entry map), joining.
    let per_point = (warmup + round + Duration::from_millis(115)) * ROUNDS as u32;
    eprintln!(
        "scalelock bench: {} points, {} rounds of {} ms each (+{} ms warm-up), threads {:?}: about {} s",
        plan.len(),
        ROUNDS,
        round.as_millis(),
        warmup.as_millis(),
        threads,
        (per_point * plan.len() as u32).as_secs().max(1)
    );
    let bar = ProgressBar::with_draw_target(
        Some((plan.len() * ROUNDS) as u64),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} eta {eta:>3} {wide_msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );

    let spin_policy = scalelock::wait::spin_policy().to_string();
    let clock_overhead_ns = harness::clock_overhead_ns();
    let mut best: Vec<Option<Record>> = vec![None; plan.len()];
    let mut rounds_seen: Vec<Vec<f64>> = vec![Vec::new(); plan.len()];
    let mut failed: Vec<Option<String>> = vec![None; plan.len()];
    for r in 0..ROUNDS {
        let order: Vec<usize> = if r % 2 == 0 {
            (0..plan.len()).collect()
        } else {
            (0..plan.len()).rev().collect()
        };
        for i in order {
            let (workload, p) = &plan[i];
            bar.set_message(format!(
                "{workload} {}{} {}t",
                p.case
                    .as_deref()
                    .map_or(String::new(), |c| format!("[{c}] ")),
                p.series,
                p.threads
            ));
            bar.inc(1);
            if failed[i].is_some() {
                continue;
            }
            let trial = harness::Trial {
                threads: p.threads,
                warmup,
                duration: round,
                sample_every: p.sample_every,
            };
            match (p.run)(&trial) {
                Ok(m) => {
                    let rec = record(workload, p, &m, cpus);
                    if bar.is_hidden() && std::env::var_os("SCALELOCK_BENCH_VERBOSE").is_some() {
                        eprintln!("{}", output::point_line(&rec));
                    }
                    rounds_seen[i].push(rec.ops_per_sec);
                    let better = match &best[i] {
                        None => true,
                        Some(b) => rec.ops_per_sec > b.ops_per_sec,
                    };
                    if better {
                        best[i] = Some(rec);
                    }
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
    }
    let failures: Vec<String> = failed.into_iter().flatten().collect();
    let mut records: Vec<Record> = Vec::with_capacity(plan.len());
    for (i, rec) in best.into_iter().enumerate() {
        if let Some(mut rec) = rec {
            rec.params.insert(
                "round_ops_per_sec".into(),
                serde_json::json!(rounds_seen[i]),
            );
            records.push(rec);
        }
    }
    bar.finish_and_clear();

    let infos: Vec<WorkloadInfo> = selected
        .iter()
        .map(|w| WorkloadInfo {
            name: w.name().to_string(),
            about: w.about().to_string(),
            ours: w.ours().to_string(),
        })
        .collect();
    output::annotate_ratios(&mut records, &infos);
    let run = Run {
        machine: machine::detect(),
        results: records,
        config: Config {
            duration_ms: duration.as_millis() as u64,
            rounds: ROUNDS,
            warmup_ms: warmup.as_millis() as u64,
            threads,
            quick: opts.quick,
            spin_policy,
            clock_overhead_ns,
            load_average: [load_start, machine::load_average()],
        },
        workloads: infos,
    };

    print!("{}", output::table(&run));
    if let Some(path) = &opts.json {
        output::write_json(&run, path).map_err(Error::Failed)?;
        eprintln!("scalelock bench: wrote {}", path.display());
    }
    if let Some(path) = &opts.csv {
        output::write_csv(&run, path).map_err(Error::Failed)?;
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
