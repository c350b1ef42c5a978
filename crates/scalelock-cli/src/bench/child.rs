//! Running one point in a process of its own.
//!
//! Some comparisons are only fair between processes: an allocator keeps its heap, its page
//! tables and its resident memory from one point to the next, and two allocators in one process
//! measure each other's leftovers. A workload whose points need a fresh process calls
//! [`run_point`] from its point's closure; the bench then re-executes itself:
//!
//! ```text
//!   parent (the bench)                         child (same binary, [`ENV`] set)
//!   run_point(workload, lock, case, trial)
//!     spawn current_exe, ENV = the point ---->  main() -> serve(run_child_point): before the
//!                                               command line, plan the workload for that one
//!                                               lock and thread count, run the point's closure
//!                                               in-process
//!                                               ([`in_child`] is true), print one result line
//!     read stdout, wait    <-------------------  "scalelock-child-result {json}", exit 0
//!     Measurement, or Err(the child's error,
//!     its exit status and the end of stderr)
//! ```
//!
//! With `SCALELOCK_BENCH_VERBOSE` set, the parent passes the child's stderr on to its own.
//! `extra_env` lets the parent set more of the child's environment (the global allocator, see
//! [`super::global_alloc`]). A child that runs past its deadline exits on its own (status 3),
//! so a hung point cannot hang the bench.

use super::harness::{new_histogram, Measurement, Switches, Trial};
use serde_json::{json, Value};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Starting the bench binary again as a child, and its exit, for the bench's time estimate.
pub const START: Duration = Duration::from_millis(10);

/// The environment variable that makes the binary a child: the point to run, as JSON.
pub const ENV: &str = "SCALELOCK_BENCH_CHILD";
/// Set in the parent's environment (and so in the child's), the child's stderr is passed on.
const VERBOSE: &str = "SCALELOCK_BENCH_VERBOSE";
/// The prefix of the child's result line on its stdout.
const RESULT: &str = "scalelock-child-result ";

static IN_CHILD: AtomicBool = AtomicBool::new(false);

/// Whether this process is a child running one point (the point then measures in-process).
///
/// ```ignore
/// assert!(!in_child());
/// ```
pub fn in_child() -> bool {
    IN_CHILD.load(Ordering::Relaxed)
}

/// Runs the point of `workload` measuring `lock` (and `case`; and `series`, where a workload
/// has several series of one lock) under `trial` in a fresh process, with `extra_env` added to
/// its environment, and returns what it measured.
///
/// ```ignore
/// let m = run_point("large-alloc", "mimalloc", None, None, &trial, &[("SCALELOCK_BENCH_GLOBAL_ALLOC", "mimalloc")])?;
/// ```
pub fn run_point(
    workload: &str,
    lock: &str,
    case: Option<&str>,
    series: Option<&str>,
    trial: &Trial,
    extra_env: &[(&str, &str)],
) -> Result<Measurement, String> {
    let what = format!("{workload} {lock} {}t (child process)", trial.threads);
    let exe =
        std::env::current_exe().map_err(|e| format!("{what}: cannot find own binary: {e}"))?;
    let spec = json!({
        "workload": workload,
        "lock": lock,
        "case": case,
        "series": series,
        "threads": trial.threads,
        "warmup_ns": trial.warmup.as_nanos() as u64,
        "duration_ns": trial.duration.as_nanos() as u64,
        "sample_every": trial.sample_every,
    });
    let mut cmd = Command::new(&exe);
    cmd.env(ENV, spec.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot start {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if std::env::var_os(VERBOSE).is_some() {
        // What the child reported about itself (e.g. each run's memory figures).
        eprint!("{stderr}");
    }
    let result = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(RESULT))
        .map(serde_json::from_str::<Value>);
    match result {
        Some(Ok(v)) if out.status.success() => from_json(&v).map_err(|e| format!("{what}: {e}")),
        Some(Ok(v)) if v.get("error").is_some() => Err(format!(
            "{}{}",
            v["error"].as_str().unwrap_or("failed"),
            stderr_tail(&stderr)
        )),
        Some(Err(e)) => Err(format!(
            "{what}: unreadable result ({e}){}",
            stderr_tail(&stderr)
        )),
        _ => Err(format!(
            "{what} ended with {} without a result{}",
            out.status,
            stderr_tail(&stderr)
        )),
    }
}

fn stderr_tail(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        return String::new();
    }
    let start = s.char_indices().rev().nth(1500).map_or(0, |(i, _)| i);
    format!("; its stderr:\n{}", &s[start..])
}

/// If this process was started by [`run_point`], runs the point it names with `run` (which
/// finds the point's closure: see `bench::run_child_point`) and returns the exit status;
/// otherwise `None` (the normal command line follows). Call first thing in `main`.
///
/// ```ignore
/// if let Some(code) = bench::child::serve(bench::run_child_point) { return code; }
/// ```
pub fn serve(
    run: impl FnOnce(&PointSpec, &Trial) -> Result<Measurement, String>,
) -> Option<ExitCode> {
    let spec = std::env::var(ENV).ok()?;
    IN_CHILD.store(true, Ordering::Relaxed);
    // The child is not a bench any more: nothing it starts may re-execute the binary.
    std::env::remove_var(ENV);
    let (line, code) = match run_spec(&spec, run) {
        Ok(m) => (to_json(&m), 0),
        Err(e) => (json!({ "error": e }), 1),
    };
    println!("{RESULT}{line}");
    Some(ExitCode::from(code))
}

/// The point a child is asked to run (the rest of [`ENV`] is its [`Trial`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointSpec {
    /// The workload's name.
    pub workload: String,
    /// The lock (series) measured.
    pub lock: String,
    /// The case, for a workload with several.
    pub case: Option<String>,
    /// The series, where the parent named one (`--isolate`: a workload may measure one lock
    /// in several series).
    pub series: Option<String>,
}

fn run_spec(
    spec: &str,
    run: impl FnOnce(&PointSpec, &Trial) -> Result<Measurement, String>,
) -> Result<Measurement, String> {
    let v: Value = serde_json::from_str(spec).map_err(|e| format!("bad {ENV}: {e}"))?;
    let text = |k: &str| v[k].as_str().map(str::to_string);
    let num = |k: &str| {
        v[k].as_u64()
            .ok_or_else(|| format!("bad {ENV}: no number `{k}`"))
    };
    let point = PointSpec {
        workload: text("workload").ok_or_else(|| format!("bad {ENV}: no workload"))?,
        lock: text("lock").ok_or_else(|| format!("bad {ENV}: no lock"))?,
        case: text("case"),
        series: text("series"),
    };
    let trial = Trial {
        threads: num("threads")? as usize,
        warmup: Duration::from_nanos(num("warmup_ns")?),
        duration: Duration::from_nanos(num("duration_ns")?),
        sample_every: num("sample_every")? as u32,
    };
    watchdog(&trial);
    run(&point, &trial)
}

/// Ends the child if it runs far past what its trial needs (a hung point). Only time the child
/// could run counts: the watchdog sleeps in steps of [`WATCHDOG_STEP`], and a step that
/// overslept by more than another step is taken as time the process was stopped (SIGSTOP, as
/// another user's measurement does to niced work) or starved of CPU, and counts one step.
fn watchdog(trial: &Trial) {
    let limit = (trial.warmup + trial.duration) * 20 + Duration::from_secs(120);
    std::thread::spawn(move || {
        let mut counted = Duration::ZERO;
        let mut wall = Duration::ZERO;
        while counted < limit {
            let t = std::time::Instant::now();
            std::thread::sleep(WATCHDOG_STEP);
            let slept = t.elapsed();
            wall += slept;
            counted += if slept > 2 * WATCHDOG_STEP {
                WATCHDOG_STEP
            } else {
                slept
            };
        }
        eprintln!("child point still running after {limit:?} of running time ({wall:?} of wall time): giving up");
        std::process::exit(3);
    });
}

/// See [`watchdog`].
const WATCHDOG_STEP: Duration = Duration::from_secs(1);

/// A measurement as JSON (the latency histogram as `[value, count]` pairs).
fn to_json(m: &Measurement) -> Value {
    let latency: Vec<[u64; 2]> = m
        .latency
        .iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect();
    let extra: serde_json::Map<String, Value> = m
        .extra
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect();
    json!({
        "thread_ops": m.thread_ops,
        "ops_all": m.ops_all,
        "tally": m.tally,
        "elapsed_ns": m.elapsed.as_nanos() as u64,
        "cpu_ns": m.cpu.as_nanos() as u64,
        "thread_cpu_ns": m.thread_cpu.iter().map(|d| d.as_nanos() as u64).collect::<Vec<_>>(),
        "switches": m.switches.map(|s| [s.voluntary, s.involuntary]),
        "latency": latency,
        "thread_stall_ns": m.thread_stall.iter().map(|d| d.as_nanos() as u64).collect::<Vec<_>>(),
        "extra": extra,
        "pid": std::process::id(),
    })
}

/// The inverse of [`to_json`]. Extra fields keep their names only if the workload declared
/// them (`Measurement::extra` holds `&'static str` keys): unknown ones are leaked once per
/// point, a few bytes.
fn from_json(v: &Value) -> Result<Measurement, String> {
    let bad = |k: &str| format!("malformed result: `{k}`");
    let u64s = |k: &str| -> Result<Vec<u64>, String> {
        v[k].as_array()
            .ok_or_else(|| bad(k))?
            .iter()
            .map(|x| x.as_u64().ok_or_else(|| bad(k)))
            .collect()
    };
    let num = |k: &str| v[k].as_u64().ok_or_else(|| bad(k));
    let mut latency = new_histogram();
    for pair in v["latency"].as_array().ok_or_else(|| bad("latency"))? {
        let (Some(value), Some(count)) = (pair[0].as_u64(), pair[1].as_u64()) else {
            return Err(bad("latency"));
        };
        latency
            .record_n(value.max(1), count)
            .map_err(|_| bad("latency"))?;
    }
    let extra = v["extra"]
        .as_object()
        .ok_or_else(|| bad("extra"))?
        .iter()
        .map(|(k, x)| (&*Box::leak(k.clone().into_boxed_str()), x.clone()))
        .collect();
    Ok(Measurement {
        thread_ops: u64s("thread_ops")?,
        ops_all: num("ops_all")?,
        tally: num("tally")?,
        elapsed: Duration::from_nanos(num("elapsed_ns")?),
        cpu: Duration::from_nanos(num("cpu_ns")?),
        thread_cpu: u64s("thread_cpu_ns")?
            .into_iter()
            .map(Duration::from_nanos)
            .collect(),
        switches: match &v["switches"] {
            Value::Null => None,
            pair => match (pair[0].as_u64(), pair[1].as_u64()) {
                (Some(voluntary), Some(involuntary)) => Some(Switches {
                    voluntary,
                    involuntary,
                }),
                _ => return Err(bad("switches")),
            },
        },
        latency,
        thread_stall: u64s("thread_stall_ns")?
            .into_iter()
            .map(Duration::from_nanos)
            .collect(),
        extra,
        process: v["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_survives_the_trip_through_json() {
        let mut latency = new_histogram();
        latency.record_n(1500, 7).unwrap();
        latency.record(90_000).unwrap();
        let m = Measurement {
            thread_ops: vec![3, 4],
            ops_all: 9,
            tally: 2,
            elapsed: Duration::from_millis(20),
            cpu: Duration::from_millis(35),
            thread_cpu: vec![Duration::from_millis(17), Duration::from_millis(18)],
            switches: Some(Switches {
                voluntary: 5,
                involuntary: 11,
            }),
            latency,
            thread_stall: vec![Duration::from_millis(3), Duration::from_micros(40)],
            extra: vec![("peak_rss_mib", json!(12.5))],
            process: None,
        };
        // The trip out records the child's process, the trip back reads it.
        let sent = to_json(&m);
        assert_eq!(sent["pid"], json!(std::process::id()));
        let back = from_json(&serde_json::from_str(&to_json(&m).to_string()).unwrap()).unwrap();
        assert_eq!(back.thread_ops, m.thread_ops);
        assert_eq!((back.ops_all, back.tally), (9, 2));
        assert_eq!((back.elapsed, back.cpu), (m.elapsed, m.cpu));
        assert_eq!(back.thread_cpu, m.thread_cpu);
        assert_eq!(back.switches, m.switches);
        assert_eq!(back.thread_stall, m.thread_stall);
        assert_eq!(back.latency.len(), 8);
        assert_eq!(
            back.latency.value_at_quantile(0.5),
            m.latency.value_at_quantile(0.5)
        );
        assert_eq!(back.latency.max(), m.latency.max());
        assert_eq!(back.extra, m.extra);
        assert_eq!(back.process, Some(std::process::id()));
    }

    #[test]
    fn a_malformed_result_is_an_error_naming_the_field() {
        let e = from_json(&json!({
            "thread_ops": [1], "ops_all": "x", "tally": 0, "elapsed_ns": 1, "cpu_ns": 1,
            "thread_cpu_ns": [1], "latency": [], "extra": {}
        }))
        .err()
        .unwrap();
        assert!(e.contains("ops_all"), "{e}");
        let e = from_json(&json!({
            "thread_ops": [1], "ops_all": 1, "tally": 0, "elapsed_ns": 1, "cpu_ns": 1,
            "thread_cpu_ns": [1], "switches": [1], "latency": [], "thread_stall_ns": [],
            "extra": {}
        }))
        .err()
        .unwrap();
        assert!(e.contains("switches"), "{e}");
    }

    #[test]
    fn a_measurement_without_switches_says_so() {
        let m = Measurement {
            thread_ops: vec![1],
            ops_all: 1,
            tally: 0,
            elapsed: Duration::from_millis(1),
            cpu: Duration::ZERO,
            thread_cpu: Vec::new(),
            switches: None,
            latency: new_histogram(),
            thread_stall: Vec::new(),
            extra: Vec::new(),
            process: None,
        };
        let back = from_json(&to_json(&m)).unwrap();
        assert_eq!(back.switches, None);
    }

    #[test]
    fn the_stderr_tail_is_short_and_labelled() {
        assert_eq!(stderr_tail("  \n"), "");
        let long = "x".repeat(5000);
        let t = stderr_tail(&long);
        assert!(
            t.starts_with("; its stderr:\n") && t.len() < 1600,
            "{}",
            t.len()
        );
    }
}
