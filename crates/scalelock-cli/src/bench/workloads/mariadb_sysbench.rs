//! `mariadb-sysbench`: a real database server, MariaDB, under sysbench OLTP, with glibc's pthread
//! locks and with scalelock's (through `libscalelock_preload.so`).
//!
//! The seeds' users run MySQL and MariaDB; this is the end-to-end check that the preload library
//! holds up (and what it changes) inside one. The workload runs `scripts/mariadb-sysbench.sh`
//! once for all its points: it starts one private MariaDB per lock on unix sockets in a temp
//! directory (own datadirs, no TCP), prepares the sysbench tables once, and alternates the runs
//! between the servers point by point, each run once both servers are idle, and which server
//! runs first from point to point, so that load drifting on a shared machine hits both alike;
//! odd rounds of `--repeat` start each point with the other server.
//!
//! Not part of the default sweep (it needs the Debian packages `mariadb-server` and `sysbench`
//! and takes minutes): select it with `--workload mariadb-sysbench`. Each point runs sysbench for
//! the bench's `--duration-ms`, at least 5 s; `--repeat N` runs the script N times (fresh
//! servers and tables each time), one round of every point per run. The library's server runs
//! without lockstat, as a user gets it, so that both columns measure the locks alone. An
//! operation is a sysbench transaction; latencies
//! are sysbench's own per-transaction histogram; `cpu_ns_per_op` is the server's CPU time (user +
//! system, all its threads, from `/proc`) during the run per transaction: what a transaction
//! costs the server, where the machine is saturated and tps alone cannot say whether a lock
//! made the server do more work or wait more. The per-thread fairness columns hold the total,
//! since sysbench reports no per-thread counts.

use super::{Point, Selection, Workload};
use crate::bench::harness::{new_histogram, Measurement, Trial};
use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// See the module docs.
pub struct MariadbSysbench;

/// What a round of the script takes besides its sysbench runs, about (starting the servers,
/// preparing the tables, waiting for the servers to be idle before each run): shared out over
/// the round's points in the time estimate the bench prints at its start.
const ROUND_SETUP: Duration = Duration::from_secs(14);

/// How long sysbench runs at each point for a bench `duration`: whole seconds, at least 5.
fn sysbench_secs(duration: Duration) -> u64 {
    duration.as_secs().max(5)
}

/// The bench's lock names and the script's.
const LOCKS: [(&str, &str); 2] = [("pthread", "glibc"), ("scalelock", "scalelock")];
const CASES: [&str; 2] = ["oltp_read_only", "oltp_read_write"];

/// One sysbench run, from the script's `--results` file and its latency histogram file (read
/// as the script's run ends, before its directory is removed; an error says why it could not
/// be read).
#[derive(Clone, Debug)]
struct Run {
    transactions: u64,
    tps: f64,
    /// The server's CPU time during the run (zero from a script that does not report it).
    server_cpu: Duration,
    latency: Result<Histogram<u64>, String>,
}

type Key = (String, String, usize);

/// One run of the script: every point's row, or why the script failed.
type ScriptRun = Result<HashMap<Key, Run>, String>;

/// The script is run once per round (`--repeat`), by the first point of that round that needs
/// it; every point reads its row of its round's run. The bench calls each point once per round,
/// so a point's `k`-th call is round `k`: every repeat is a measurement of its own.
struct Shared {
    locks: Vec<&'static str>,
    threads: Vec<usize>,
    quick: bool,
    results: Mutex<HashMap<usize, ScriptRun>>,
}

impl Workload for MariadbSysbench {
    fn name(&self) -> &'static str {
        "mariadb-sysbench"
    }

    fn about(&self) -> &'static str {
        "MariaDB under sysbench oltp_read_only and oltp_read_write, with glibc's pthread locks \
         and with scalelock's through LD_PRELOAD (scripts/mariadb-sysbench.sh; needs mariadb-server \
         and sysbench; not in the default sweep). Operations are sysbench transactions, latencies \
         sysbench's per-transaction histogram; CPU time is not measured."
    }

    fn columns(&self) -> Vec<&'static str> {
        LOCKS.iter().map(|(bench, _)| *bench).collect()
    }

    fn in_default_sweep(&self) -> bool {
        false
    }

    fn unavailable(&self) -> Option<String> {
        let missing: Vec<&str> = [
            "mariadbd",
            "mariadb-install-db",
            "mariadb-admin",
            "sysbench",
        ]
        .into_iter()
        .filter(|tool| !installed(tool))
        .collect();
        if !missing.is_empty() {
            return Some(format!(
                "{} not installed (Debian packages mariadb-server, sysbench)",
                missing.join(", ")
            ));
        }
        let script = script_path();
        (!script.is_file()).then(|| format!("{} not found", script.display()))
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let locks: Vec<&'static str> = LOCKS
            .iter()
            .filter(|(bench, _)| sel.wants(bench))
            .map(|(_, script)| *script)
            .collect();
        let shared = Arc::new(Shared {
            locks: locks.clone(),
            threads: sel.threads.clone(),
            quick: sel.quick,
            results: Mutex::new(HashMap::new()),
        });
        // A point's run is a sysbench run, not the harness's window (see Point::overhead).
        let per_round = CASES.len() * locks.len() * sel.threads.len();
        let overhead = Duration::from_secs(sysbench_secs(sel.duration))
            .saturating_sub(sel.duration)
            + ROUND_SETUP / per_round.max(1) as u32;
        let mut points = Vec::new();
        for case in CASES {
            for &(bench_lock, script_lock) in LOCKS.iter().filter(|(_, s)| locks.contains(s)) {
                for &threads in &sel.threads {
                    let shared = Arc::clone(&shared);
                    let calls = AtomicUsize::new(0);
                    points.push(
                        Point::new(bench_lock, threads, move |trial| {
                            let round = calls.fetch_add(1, Ordering::Relaxed);
                            shared.point(case, script_lock, threads, round, trial)
                        })
                        .case(case)
                        .own_process()
                        .overhead(overhead),
                    );
                }
            }
        }
        points
    }
}

impl Shared {
    fn point(
        &self,
        case: &str,
        lock: &str,
        threads: usize,
        round: usize,
        trial: &Trial,
    ) -> Result<Measurement, String> {
        let mut guard = self.results.lock().map_err(|_| "poisoned".to_string())?;
        let results = guard
            .entry(round)
            .or_insert_with(|| self.run_script(round, trial.duration));
        let results = results.as_ref().map_err(Clone::clone)?;
        let run = results
            .get(&(case.to_string(), lock.to_string(), threads))
            .ok_or_else(|| {
                format!("the script reported no {case} run for {lock} at {threads} threads")
            })?;
        measurement(run)
    }

    fn run_script(&self, round: usize, duration: Duration) -> ScriptRun {
        let script = script_path();
        let dir = std::env::temp_dir().join(format!(
            "scalelock-bench-mariadb-{}-{round}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let results_file = dir.join("results.txt");
        let hist_dir = dir.join("histograms");
        let threads: Vec<String> = self.threads.iter().map(usize::to_string).collect();
        let secs = sysbench_secs(duration);
        let mut cmd = Command::new("bash");
        cmd.arg(&script);
        if self.quick {
            cmd.arg("--quick");
        }
        // The script runs the servers one after the other at each point, and the one that ran
        // second took more CPU per transaction than the first, whichever lock it had (perf
        // record of both orders; the first server's background work after its run shared the
        // machine with the second's run). The script waits for both servers to be idle before
        // each run and alternates the order from point to point; odd rounds also swap it, so
        // that with an even --repeat each lock runs first at every point as often as second.
        let mut order = self.locks.clone();
        if round % 2 == 1 {
            order.reverse();
        }
        cmd.args(["--threads", &threads.join(" ")])
            .args(["--time", &secs.to_string()])
            .args(["--locks", &order.join(" ")])
            .arg("--results")
            .arg(&results_file)
            .arg("--histograms")
            .arg(&hist_dir);
        if let Ok(lib) = crate::launch::find_library() {
            cmd.arg("--lib").arg(lib);
        }
        // The script's own report goes to our stderr: the side-by-side table and lockstat.
        let out = match cmd.stdout(std::process::Stdio::inherit()).status() {
            Ok(out) => out,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot run {}: {e}", script.display()));
            }
        };
        let text = std::fs::read_to_string(&results_file).unwrap_or_default();
        let parsed = parse_results(&text, &hist_dir);
        // Everything the points need is in `parsed` now: the directory goes, whatever the
        // outcome (the script printed its own report and errors).
        let _ = std::fs::remove_dir_all(&dir);
        match out.code() {
            Some(0) => Ok(parsed),
            Some(77) => Err(
                "mariadbd or sysbench is not installed (Debian packages mariadb-server, \
                             sysbench)"
                    .into(),
            ),
            _ => Err(format!(
                "{} failed ({out}); see its output above",
                script.display()
            )),
        }
    }
}

/// Whether `tool` is on `PATH` (or in `/usr/sbin`, where Debian puts `mariadbd`).
fn installed(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .any(|dir| dir.join(tool).is_file())
}

/// `scripts/mariadb-sysbench.sh` in this source tree, or `$SCALELOCK_MARIADB_SCRIPT`.
fn script_path() -> PathBuf {
    std::env::var_os("SCALELOCK_MARIADB_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mariadb-sysbench.sh")
        })
}

/// Lines `workload lock threads tps p95 max errors transactions [server_cpu_ms]`.
fn parse_results(text: &str, hist_dir: &Path) -> HashMap<Key, Run> {
    let mut runs = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let (Ok(threads), Ok(tps), Ok(transactions)) = (
            f[2].parse::<usize>(),
            f[3].parse::<f64>(),
            f[7].parse::<u64>(),
        ) else {
            continue;
        };
        runs.insert(
            (f[0].to_string(), f[1].to_string(), threads),
            Run {
                transactions,
                tps,
                server_cpu: Duration::from_millis(
                    f.get(8).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0),
                ),
                latency: read_histogram(
                    &hist_dir.join(format!("{}-{}-{}.txt", f[0], f[1], threads)),
                ),
            },
        );
    }
    runs
}

/// sysbench's per-transaction latency histogram, as the script saved it.
fn read_histogram(file: &Path) -> Result<Histogram<u64>, String> {
    let mut latency = new_histogram();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    for line in text.lines() {
        // "       0.185 |*****************          1082"
        let Some((value, rest)) = line.split_once('|') else {
            continue;
        };
        let (Ok(ms), Some(Ok(count))) = (
            value.trim().parse::<f64>(),
            rest.split_whitespace().last().map(str::parse::<u64>),
        ) else {
            continue;
        };
        let ns = (ms * 1e6).round().max(1.0) as u64;
        latency
            .record_n(ns.min(latency.high()), count)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(latency)
}

fn measurement(run: &Run) -> Result<Measurement, String> {
    let latency = run.latency.clone()?;
    let elapsed = if run.tps > 0.0 {
        Duration::from_secs_f64(run.transactions as f64 / run.tps)
    } else {
        Duration::ZERO
    };
    Ok(Measurement {
        thread_ops: vec![run.transactions],
        ops_all: run.transactions,
        tally: 0,
        elapsed,
        cpu: run.server_cpu,
        // The server's threads are another process's.
        thread_cpu: Vec::new(),
        switches: None,
        latency,
        thread_stall: Vec::new(),
        extra: Vec::new(),
        process: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_estimated_at_its_sysbench_run_and_a_share_of_the_round() {
        let sel = |ms: u64| Selection {
            locks: None,
            threads: vec![32, 128],
            quick: false,
            default_sweep: false,
            duration: Duration::from_millis(ms),
        };
        // 2 workloads x 2 locks x 2 thread counts: 8 points to a round.
        let short = MariadbSysbench.plan(&sel(100));
        assert_eq!(short.len(), 8);
        let share = ROUND_SETUP / 8;
        for p in &short {
            // sysbench runs 5 s where the harness's window is 100 ms.
            assert_eq!(p.overhead, Duration::from_millis(4900) + share);
        }
        // A window of whole seconds past the minimum is sysbench's own length.
        for p in MariadbSysbench.plan(&sel(7000)) {
            assert_eq!(p.overhead, share);
        }
    }

    #[test]
    fn parses_results_and_histograms() {
        let dir =
            std::env::temp_dir().join(format!("mariadb-sysbench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("oltp_read_only-glibc-4.txt"),
            "       0.500 |****   10\n       2.000 |*      1\n",
        )
        .unwrap();
        let runs = parse_results(
            "oltp_read_only glibc 4 1100.00 2.00 2.00 0 11000 7700\n\
             oltp_read_only glibc 8 1200.00 2.00 2.00 0 12000\n",
            &dir,
        );
        // The histograms were read with the results: the directory may go before the points
        // are measured (the bench removes it).
        std::fs::remove_dir_all(&dir).unwrap();
        let run = &runs[&("oltp_read_only".into(), "glibc".into(), 4)];
        let m = measurement(run).unwrap();
        assert_eq!(m.thread_ops, vec![11000]);
        assert_eq!(m.latency.len(), 11);
        assert!(m.latency.max() >= 1_990_000 && m.latency.max() <= 2_010_000);
        assert!((m.elapsed.as_secs_f64() - 10.0).abs() < 1e-6);
        // The server's CPU time: 7.7 s for 11000 transactions, 700 us each.
        assert_eq!(m.cpu, Duration::from_millis(7700));
        assert_eq!(crate::bench::stats::summarize(&m).cpu_ns_per_op, 700_000.0);
        // A row from a script that does not report the server's CPU time reads zero.
        let old = &runs[&("oltp_read_only".into(), "glibc".into(), 8)];
        assert_eq!(old.server_cpu, Duration::ZERO);
        // A row whose histogram file is missing fails its point, naming the file.
        let missing = measurement(&runs[&("oltp_read_only".into(), "glibc".into(), 8)]);
        assert!(
            matches!(&missing, Err(e) if e.contains("oltp_read_only-glibc-8.txt")),
            "{:?}",
            missing.err()
        );
    }
}
