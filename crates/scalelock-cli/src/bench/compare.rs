//! `scalelock bench --compare A.json B.json`: how run B differs from run A, cell by cell.
//!
//! A cell is a (workload, case, series, thread count). Its figure is, by default, the median
//! throughput (in a case measured on one thread only, such as `uncontended`, operations per
//! CPU second, as the bench's own ratios use). B ÷ A is the ratio of the medians; its spread is
//! the range of the ratios of the runs matched by rank (B's slowest over A's slowest, …,
//! fastest over fastest), since runs of two separate invocations are not paired in time. A
//! cell is *undecided* when that spread crosses 1.0 or is wider than ±5%, else *better*,
//! *within 5%* or *worse* by its median. The summary also counts the cells of our own series
//! whose verdict against the best other lock (ahead / within 5% / behind / undecided) differs
//! between the two files.
//!
//! `--metric` compares other figures, one table each: `cpu` (CPU time per operation) and the
//! acquisition latencies `p99`, `p999` and `max`, for which lower is better (B ÷ A below 0.95
//! is *better*). A latency cell's figure is the median of its runs' own values (each run's
//! p99, p99.9 or largest sample), not the figure of all runs' samples together that the
//! bench's table shows: one run's outlier would be the whole cell's maximum. Cells that took
//! no latency samples are left out.
//!
//! Either side may be several files, comma-separated (`--compare A1.json,A2.json B1.json`):
//! repeats of one build run at different times, which on a machine whose speed drifts between
//! phases say more than any one file (run the two sides' files alternately, so that both
//! sides sample the same phases). A side's cell then pools the runs of every file that has
//! it, and its figure is the median of them all; its verdict against the best other lock is
//! the files' verdict where they agree and `mixed` where they do not.

use super::output::Metric;
use super::stats::{Ratio, Spread, Standing};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One cell of a results file.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Workload.
    pub workload: String,
    /// Case, if any.
    pub case: Option<String>,
    /// Series (the lock, usually).
    pub series: String,
    /// Threads.
    pub threads: u64,
    /// Median speed.
    pub median: f64,
    /// Every run's speed (just the median for files written without `runs`).
    pub runs: Vec<f64>,
    /// Our verdict against the best other in that file, for our own series.
    pub verdict: Option<String>,
    /// Where our series stands against the best other by the median ratio alone, ignoring the
    /// spread (for our own series).
    pub standing: Option<Standing>,
}

impl Cell {
    fn key(&self) -> (&str, Option<&str>, &str, u64) {
        (
            &self.workload,
            self.case.as_deref(),
            &self.series,
            self.threads,
        )
    }

    /// `workload / case`.
    pub fn title(&self) -> String {
        match &self.case {
            Some(c) => format!("{} / {c}", self.workload),
            None => self.workload.clone(),
        }
    }
}

/// Reads the cells of a `--json` file whose figure is `metric`.
pub fn load(path: &Path, metric: Metric) -> Result<Vec<Cell>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a JSON file written by `scalelock bench --json`: {e}",
            path.display()
        )
    })?;
    cells(&json, metric).map_err(|e| {
        format!(
            "{} is not a results file of `scalelock bench --json`: {e}",
            path.display()
        )
    })
}

/// The files one side of `--compare` names: `arg` itself where such a file exists (a path
/// may contain a comma), else the comma-separated paths in it (empty pieces skipped).
pub fn side_files(arg: &Path) -> Vec<PathBuf> {
    if arg.exists() {
        return vec![arg.to_path_buf()];
    }
    use std::os::unix::ffi::OsStrExt;
    let files: Vec<PathBuf> = arg
        .as_os_str()
        .as_bytes()
        .split(|&b| b == b',')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    if files.is_empty() {
        vec![arg.to_path_buf()]
    } else {
        files
    }
}

/// Reads the cells of one side's files whose figure is `metric`, pooled when there are
/// several (see [`pool`]).
pub fn load_side(files: &[PathBuf], metric: Metric) -> Result<Vec<Cell>, String> {
    match files {
        [] => Err("no results file given".into()),
        [one] => load(one, metric),
        _ => Ok(pool(
            files
                .iter()
                .map(|f| load(f, metric))
                .collect::<Result<Vec<_>, _>>()?,
        )),
    }
}

/// The cells of several files as one side: a cell's runs are those of every file that has
/// it, its figure their median; its verdict is the files' where they agree, else `mixed`, and
/// its standing the files' where they agree, else none.
pub fn pool(files: Vec<Vec<Cell>>) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for cell in files.into_iter().flatten() {
        match out.iter_mut().find(|c| c.key() == cell.key()) {
            None => out.push(cell),
            Some(c) => {
                c.runs.extend_from_slice(&cell.runs);
                if c.verdict != cell.verdict {
                    c.verdict = Some("mixed".into());
                }
                if c.standing != cell.standing {
                    c.standing = None;
                }
            }
        }
    }
    for c in &mut out {
        c.median = Spread::of(&c.runs).median;
    }
    out
}

/// The latency figure `metric` names, in a `latency_ns` object.
fn latency_key(metric: Metric) -> Option<&'static str> {
    match metric {
        Metric::P99 => Some("p99"),
        Metric::P999 => Some("p999"),
        Metric::Max => Some("max"),
        Metric::Stall => Some("stall"),
        Metric::Ops | Metric::Cpu | Metric::Switches => None,
    }
}

/// Whether a smaller figure of `metric` is the better one.
fn lower_is_better(metric: Metric) -> bool {
    metric != Metric::Ops
}

/// The cells of a parsed results file whose figure is `metric` (see the module docs).
pub fn cells(json: &Value, metric: Metric) -> Result<Vec<Cell>, String> {
    match latency_key(metric) {
        None if metric == Metric::Switches => run_figure_cells(json, RunFigure::Switches),
        None => speed_cells(json, metric == Metric::Cpu),
        Some(key) => run_figure_cells(json, RunFigure::Latency(key)),
    }
}

/// Result `i`'s workload, series (its lock, unless named) and thread count.
fn identity(r: &Value, i: usize) -> Result<(String, String, u64), String> {
    let text = |k: &str| -> Result<String, String> {
        r[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("result {i} has no `{k}`"))
    };
    let workload = text("workload")?;
    let lock = text("lock")?;
    let series = r["series"].as_str().map_or(lock, str::to_string);
    let threads = r["threads"]
        .as_u64()
        .ok_or_else(|| format!("result {i} has no `threads`"))?;
    Ok((workload, series, threads))
}

/// A figure each run of a result has, compared as the median of the runs' own.
#[derive(Clone, Copy)]
enum RunFigure {
    /// `latency_ns.<key>`; results without latency samples, and stalls of 0 (not measured),
    /// are left out.
    Latency(&'static str),
    /// `context_switches_per_op`; results without it (not measured, or written before it
    /// was) are left out.
    Switches,
}

impl RunFigure {
    /// The figure's path in a result or a run, as an error names it.
    fn path(self) -> String {
        match self {
            RunFigure::Latency(key) => format!("latency_ns.{key}"),
            RunFigure::Switches => "context_switches_per_op".into(),
        }
    }

    /// The figure in `v` (a result or one of its runs).
    fn of(self, v: &Value) -> Option<f64> {
        match self {
            RunFigure::Latency(key) => v["latency_ns"][key].as_f64(),
            RunFigure::Switches => v["context_switches_per_op"].as_f64(),
        }
    }

    /// Whether result `r` did not measure the figure (`runs`: its runs' values).
    fn unmeasured(self, r: &Value, runs: Option<&[f64]>) -> bool {
        match self {
            RunFigure::Latency(key) => {
                r["latency_samples"].as_u64() == Some(0)
                    // A stall of 0: not measured (see `stats::Latency::stall`).
                    || (key == "stall" && runs.is_some_and(|v| v.iter().all(|&x| x == 0.0)))
            }
            RunFigure::Switches => r["context_switches_per_op"].is_null(),
        }
    }
}

/// Cells of a figure each run has (see [`RunFigure`]): the runs' own, the cell's figure their
/// median.
fn run_figure_cells(json: &Value, figure: RunFigure) -> Result<Vec<Cell>, String> {
    let results = json["results"]
        .as_array()
        .ok_or("it has no `results` array")?;
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let (workload, series, threads) = identity(r, i)?;
        if figure.unmeasured(r, None) {
            continue;
        }
        let of = |v: &Value, what: &str| -> Result<f64, String> {
            figure
                .of(v)
                .ok_or_else(|| format!("result {i} has no number `{what}{}`", figure.path()))
        };
        let runs: Vec<f64> = match r["runs"].as_array() {
            Some(rs) if !rs.is_empty() => rs
                .iter()
                .map(|run| of(run, "runs[]."))
                .collect::<Result<_, String>>()?,
            _ => vec![of(r, "")?],
        };
        if figure.unmeasured(r, Some(&runs)) {
            continue;
        }
        let median = Spread::of(&runs).median;
        out.push(Cell {
            workload,
            case: r["case"].as_str().map(str::to_string),
            series,
            threads,
            median,
            runs,
            verdict: None,
            standing: None,
        });
    }
    Ok(out)
}

/// Throughput cells (or, with `cpu`, CPU time per operation).
fn speed_cells(json: &Value, cpu_time: bool) -> Result<Vec<Cell>, String> {
    let results = json["results"]
        .as_array()
        .ok_or("it has no `results` array")?;
    let mut raw = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let num = |v: &Value, k: &str| -> Result<f64, String> {
            v.as_f64()
                .ok_or_else(|| format!("result {i} has no number `{k}`"))
        };
        let (workload, series, threads) = identity(r, i)?;
        let ops = num(&r["ops_per_sec"], "ops_per_sec")?;
        let cpu = num(&r["cpu_ns_per_op"], "cpu_ns_per_op")?;
        let runs: Vec<(f64, f64)> = match r["runs"].as_array() {
            Some(rs) if !rs.is_empty() => rs
                .iter()
                .map(|k| {
                    Ok((
                        num(&k["ops_per_sec"], "runs[].ops_per_sec")?,
                        num(&k["cpu_ns_per_op"], "runs[].cpu_ns_per_op")?,
                    ))
                })
                .collect::<Result<_, String>>()?,
            _ => vec![(ops, cpu)],
        };
        let p = &r["params"];
        let standing = p["ratio_to_best_other"]
            .as_f64()
            .and_then(|m| Ratio::new(m, 1.0, []))
            .map(|r| r.standing());
        let verdict = p["ratio_to_best_other"].as_f64().map(|m| {
            let lo = p["ratio_min"].as_f64().unwrap_or(m);
            let hi = p["ratio_max"].as_f64().unwrap_or(m);
            let ratio = Ratio {
                median: m,
                min: lo,
                max: hi,
                pairs: 0,
            };
            verdict_word(&ratio, "ahead", "within 5%", "behind")
        });
        raw.push((
            workload,
            r["case"].as_str().map(str::to_string),
            series,
            threads,
            ops,
            cpu,
            runs,
            verdict,
            standing,
        ));
    }
    // Single-thread cases compare CPU time per operation, as the bench's ratios do.
    let single = |w: &str, c: &Option<String>| {
        raw.iter()
            .filter(|x| x.0 == w && x.1 == *c)
            .all(|x| x.3 == 1)
    };
    let speed = super::group::run_speed;
    let figure = |one: bool, ops: f64, cpu: f64| {
        if cpu_time {
            cpu
        } else {
            speed(one, ops, cpu)
        }
    };
    Ok(raw
        .iter()
        .map(|(w, c, s, t, ops, cpu, runs, verdict, standing)| {
            let one = single(w, c);
            Cell {
                workload: w.clone(),
                case: c.clone(),
                series: s.clone(),
                threads: *t,
                median: figure(one, *ops, *cpu),
                runs: runs.iter().map(|&(o, c)| figure(one, o, c)).collect(),
                // The verdict against the best other is the bench's, on throughput.
                verdict: if cpu_time { None } else { verdict.clone() },
                standing: if cpu_time { None } else { *standing },
            }
        })
        .collect())
}

/// `undecided`, or the word for the median's standing.
fn verdict_word(
    r: &Ratio,
    ahead: &'static str,
    within: &'static str,
    behind: &'static str,
) -> String {
    if r.undecided() {
        return "undecided".into();
    }
    match r.standing() {
        Standing::Ahead => ahead,
        Standing::Within => within,
        Standing::Behind => behind,
    }
    .into()
}

/// B ÷ A of one cell: medians, with the spread of the rank-matched runs.
pub fn ratio(a: &Cell, b: &Cell) -> Option<Ratio> {
    let (mut ra, mut rb) = (a.runs.clone(), b.runs.clone());
    ra.sort_by(f64::total_cmp);
    rb.sort_by(f64::total_cmp);
    let n = ra.len().min(rb.len());
    let at = |v: &[f64], k: usize| {
        if n <= 1 {
            v[v.len() / 2]
        } else {
            v[k * (v.len() - 1) / (n - 1)]
        }
    };
    let pairs: Vec<(f64, f64)> = (0..n).map(|k| (at(&rb, k), at(&ra, k))).collect();
    Ratio::new(b.median, a.median, pairs)
}

/// What a comparison found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Cells present in both files.
    pub common: usize,
    /// Faster in B by more than 5%, decided.
    pub better: usize,
    /// Slower in B by more than 5%, decided.
    pub worse: usize,
    /// Within 5%, decided.
    pub same: usize,
    /// Undecided.
    pub undecided: usize,
    /// Cells of our own series compared against the best other in both files.
    pub verdicts: usize,
    /// ... of which the verdict differs.
    pub verdict_changes: usize,
    /// ... of which the standing by the median alone differs (ignoring whether it was decided).
    pub standing_changes: usize,
    /// ... of which the standing went from ahead to behind or back.
    pub standing_flips: usize,
}

/// What the table of `metric` compares, for its heading.
fn figure_name(metric: Metric) -> &'static str {
    match metric {
        Metric::Ops => "throughput",
        Metric::Cpu => "CPU time per operation (lower is better)",
        Metric::P99 => "acquisition latency p99, median of the runs' own (lower is better)",
        Metric::P999 => "acquisition latency p99.9, median of the runs' own (lower is better)",
        Metric::Max => {
            "largest acquisition latency, median of the runs' own maxima (lower is better)"
        }
        Metric::Stall => "longest stall, median of the runs' own (lower is better)",
        Metric::Switches => {
            "context switches per operation, median of the runs' own (lower is better)"
        }
    }
}

/// The comparison report of cells whose figure is `metric`, and its summary.
pub fn compare(
    a: &[Cell],
    b: &[Cell],
    a_name: &str,
    b_name: &str,
    metric: Metric,
) -> Result<(String, Summary), String> {
    let (up, down) = if lower_is_better(metric) {
        ("worse", "better")
    } else {
        ("better", "worse")
    };
    let mut s = Summary::default();
    let mut out = String::new();
    let mut rows = Vec::new();
    for cb in b {
        let Some(ca) = a.iter().find(|ca| ca.key() == cb.key()) else {
            continue;
        };
        let Some(r) = ratio(ca, cb) else {
            continue;
        };
        s.common += 1;
        let word = verdict_word(&r, up, "within 5%", down);
        match word.as_str() {
            "better" => s.better += 1,
            "worse" => s.worse += 1,
            "within 5%" => s.same += 1,
            _ => s.undecided += 1,
        }
        let change = match (&ca.verdict, &cb.verdict) {
            (Some(va), Some(vb)) => {
                s.verdicts += 1;
                if let (Some(sa), Some(sb)) = (ca.standing, cb.standing) {
                    if sa != sb {
                        s.standing_changes += 1;
                        if sa != Standing::Within && sb != Standing::Within {
                            s.standing_flips += 1;
                        }
                    }
                }
                if va != vb {
                    s.verdict_changes += 1;
                    format!("{va} → {vb}")
                } else {
                    va.clone()
                }
            }
            _ => String::new(),
        };
        rows.push((cb, r, word, change));
    }
    if s.common == 0 {
        return Err(format!(
            "{a_name} and {b_name} have no cell (workload, case, lock, threads) in common"
        ));
    }
    let _ = writeln!(
        out,
        "B ÷ A per cell, B = {b_name}, A = {a_name}, of the {}: ratio of the medians, the \
         range of the runs matched by rank, and `?` when undecided (the range crosses 1.0 or is \
         wider than ±5%). The last column is our series' verdict against the best other lock \
         (on throughput), A → B where it changed.",
        figure_name(metric)
    );
    let w = rows
        .iter()
        .map(|(c, ..)| c.title().len())
        .max()
        .unwrap_or(0)
        .max(8);
    let sw = rows
        .iter()
        .map(|(c, ..)| c.series.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let _ = writeln!(
        out,
        "\n  {:<w$} {:<sw$} {:>7} {:>7} {:>11} {:>10}  verdict vs best other",
        "workload", "series", "threads", "B÷A", "spread", "change"
    );
    for (c, r, word, change) in &rows {
        let _ = writeln!(
            out,
            "  {:<w$} {:<sw$} {:>7} {:>7} {:>11} {:>10}  {change}",
            c.title(),
            c.series,
            c.threads,
            r.cell(),
            r.range(),
            word
        );
    }
    let _ = writeln!(
        out,
        "\n{} cells in common: {} better, {} worse, {} within 5%, {} undecided.",
        s.common, s.better, s.worse, s.same, s.undecided
    );
    if s.verdicts > 0 {
        let _ = writeln!(
            out,
            "Our verdict against the best other changed at {} of {} cells; by the median ratio \
             alone (ahead / within 5% / behind, spread ignored) at {} ({} between ahead and \
             behind).",
            s.verdict_changes, s.verdicts, s.standing_changes, s.standing_flips
        );
    }
    Ok((out, s))
}

/// `--compare A B [--metric M,..]`: prints one comparison per metric (throughput alone by
/// default). Each side is one results file or several, pooled (see [`pool`]).
pub fn run(a: &[PathBuf], b: &[PathBuf], metrics: &[Metric]) -> Result<(), String> {
    let metrics = if metrics.is_empty() {
        &[Metric::Ops][..]
    } else {
        metrics
    };
    let name = |files: &[PathBuf]| {
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (k, &m) in metrics.iter().enumerate() {
        let (ca, cb) = (load_side(a, m)?, load_side(b, m)?);
        let (text, _) = compare(&ca, &cb, &name(a), &name(b), m)?;
        if k > 0 {
            println!();
        }
        print!("{text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(j: &Value) -> Vec<Cell> {
        cells(j, Metric::Ops).unwrap()
    }

    /// A file of one cell per lock, each run with the given largest latency sample.
    fn latencies(maxima: &[(&str, &[u64])]) -> Value {
        let results: Vec<Value> = maxima
            .iter()
            .map(|(lock, runs)| {
                json!({
                    "workload": "w", "lock": lock, "threads": 8,
                    "ops_per_sec": 1.0, "cpu_ns_per_op": 10.0, "latency_samples": 100,
                    "latency_ns": {"p99": 1, "p999": 2, "max": runs.iter().max()},
                    "runs": runs.iter().map(|m| json!({
                        "ops_per_sec": 1.0, "cpu_ns_per_op": 10.0,
                        "latency_ns": {"p99": 1, "p999": 2, "max": m}
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({ "results": results })
    }

    fn file(ops: &[(&str, f64, &[f64])]) -> Value {
        let results: Vec<Value> = ops
            .iter()
            .map(|(lock, median, runs)| {
                json!({
                    "workload": "w", "lock": lock, "series": lock, "threads": 4,
                    "ops_per_sec": median, "cpu_ns_per_op": 10.0,
                    "runs": runs.iter().map(|o| json!({"ops_per_sec": o, "cpu_ns_per_op": 10.0}))
                        .collect::<Vec<_>>(),
                    "params": if *lock == "scalelock" {
                        json!({"ratio_to_best_other": median / 100.0,
                               "ratio_min": median / 100.0, "ratio_max": median / 100.0})
                    } else { json!({}) }
                })
            })
            .collect();
        json!({ "machine": {}, "results": results })
    }

    #[test]
    fn a_side_of_several_files_pools_their_runs() {
        let one = ops(&file(&[
            ("scalelock", 200.0, &[190.0, 200.0, 210.0]),
            ("std", 100.0, &[100.0]),
        ]));
        let two = ops(&file(&[
            ("scalelock", 90.0, &[80.0, 90.0, 100.0]),
            ("spin", 50.0, &[50.0]),
        ]));
        let three = ops(&file(&[("scalelock", 300.0, &[300.0])]));
        let pooled = pool(vec![one.clone(), two, three]);
        assert_eq!(pooled.len(), 3, "{pooled:?}");
        let ours = pooled.iter().find(|c| c.series == "scalelock").unwrap();
        assert_eq!(ours.runs.len(), 7);
        // The median of all seven runs: 80 90 100 190 200 210 300.
        assert_eq!(ours.median, 190.0);
        // Ahead (2.00) in the first file, behind (0.90) in the second: mixed.
        assert_eq!(ours.verdict.as_deref(), Some("mixed"));
        assert_eq!(ours.standing, None);
        // A cell of one file only keeps its runs.
        let std = pooled.iter().find(|c| c.series == "std").unwrap();
        assert_eq!((std.runs.clone(), std.median), (vec![100.0], 100.0));
        // Files that agree keep their verdict.
        let agreed = pool(vec![one.clone(), one.clone()]);
        let ours = agreed.iter().find(|c| c.series == "scalelock").unwrap();
        assert_eq!(ours.verdict.as_deref(), Some("ahead"));
        assert!(ours.standing.is_some());
        // One file is read as it is.
        let dir = std::env::temp_dir().join(format!("scalelock-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        std::fs::write(
            &a,
            file(&[("scalelock", 200.0, &[190.0, 200.0, 210.0])]).to_string(),
        )
        .unwrap();
        std::fs::write(&b, file(&[("scalelock", 90.0, &[80.0, 90.0])]).to_string()).unwrap();
        assert_eq!(
            load_side(std::slice::from_ref(&a), Metric::Ops).unwrap()[0].median,
            200.0
        );
        let both = load_side(&[a.clone(), b.clone()], Metric::Ops).unwrap();
        assert_eq!((both[0].runs.len(), both[0].median), (5, 190.0));
        assert!(load_side(&[], Metric::Ops).is_err());
        assert!(
            load_side(&[a.clone(), dir.join("missing.json")], Metric::Ops)
                .unwrap_err()
                .contains("cannot read")
        );
        // A side names an existing file, or several separated by commas.
        assert_eq!(side_files(&a), vec![a.clone()]);
        let list = format!("{},{},", a.display(), b.display());
        assert_eq!(side_files(Path::new(&list)), [a.clone(), b.clone()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn better_worse_same_and_undecided() {
        let a = ops(&file(&[
            ("scalelock", 200.0, &[190.0, 200.0, 210.0]),
            ("std", 100.0, &[99.0, 100.0, 101.0]),
            ("spin", 100.0, &[99.0, 100.0, 101.0]),
            ("pthread", 100.0, &[50.0, 100.0, 150.0]),
        ]));
        let b = ops(&file(&[
            ("scalelock", 90.0, &[89.0, 90.0, 91.0]),
            ("std", 150.0, &[149.0, 150.0, 151.0]),
            ("spin", 101.0, &[100.0, 101.0, 102.0]),
            ("pthread", 110.0, &[60.0, 110.0, 160.0]),
            ("parking_lot", 1.0, &[1.0]),
        ]));
        let (text, s) = compare(&a, &b, "a.json", "b.json", Metric::Ops).unwrap();
        assert_eq!(
            (s.common, s.better, s.worse, s.same, s.undecided),
            (4, 1, 1, 1, 1),
            "{text}"
        );
        // scalelock: 2.00 (ahead) in A, 0.90 (behind) in B.
        assert_eq!((s.verdicts, s.verdict_changes), (1, 1));
        assert_eq!((s.standing_changes, s.standing_flips), (1, 1));
        assert!(text.contains("ahead → behind"), "{text}");
        assert!(text.contains("1.50") && text.contains("0.45"), "{text}");
    }

    #[test]
    fn rank_matched_spread() {
        let c = |runs: &[f64]| Cell {
            workload: "w".into(),
            case: None,
            series: "x".into(),
            threads: 1,
            median: 2.0,
            runs: runs.to_vec(),
            verdict: None,
            standing: None,
        };
        let r = ratio(&c(&[1.0, 2.0, 3.0]), &c(&[2.0, 2.0, 6.0])).unwrap();
        assert_eq!((r.min, r.max), (1.0, 2.0));
        // Different run counts: matched by quantile.
        let r = ratio(&c(&[1.0, 2.0, 3.0, 4.0, 5.0]), &c(&[2.0, 10.0])).unwrap();
        assert_eq!((r.min, r.max), (1.0, 2.0));
    }

    #[test]
    fn single_thread_cases_compare_cpu_time() {
        let j = json!({"results": [
            {"workload": "u", "case": "mutex", "lock": "std", "threads": 1,
             "ops_per_sec": 5.0, "cpu_ns_per_op": 20.0}
        ]});
        let c = ops(&j);
        assert_eq!(c[0].median, 5e7);
        assert_eq!(c[0].runs, vec![5e7]);
    }

    #[test]
    fn latency_cells_compare_the_runs_own_figures_lower_being_better() {
        let a = latencies(&[
            ("scalelock", &[10_000, 30_000, 1_000_000]),
            ("std", &[100, 100, 100]),
            ("spin", &[5, 50, 500]),
        ]);
        let mut b = latencies(&[
            ("scalelock", &[1_000, 3_000, 100_000]),
            ("std", &[200, 200, 200]),
            ("spin", &[5, 50, 500]),
            ("pthread", &[1, 1, 1]),
        ]);
        // A cell that took no samples is left out.
        b["results"][3]["latency_samples"] = json!(0);
        let (ca, cb) = (
            cells(&a, Metric::Max).unwrap(),
            cells(&b, Metric::Max).unwrap(),
        );
        // The median of the runs' maxima, not the largest of them.
        assert_eq!((ca[0].median, cb[0].median), (30_000.0, 3_000.0));
        assert_eq!(cb.len(), 3);
        let (text, s) = compare(&ca, &cb, "a", "b", Metric::Max).unwrap();
        assert_eq!(
            (s.common, s.better, s.worse, s.same),
            (3, 1, 1, 1),
            "{text}"
        );
        assert!(text.contains("lower is better"), "{text}");
        // Throughput is still compared from the same files.
        let (_, s) = compare(&ops(&a), &ops(&b), "a", "b", Metric::Ops).unwrap();
        assert_eq!((s.common, s.same), (3, 3));
        // A file without the figure is named.
        let bare = json!({"results": [{"workload": "w", "lock": "x", "threads": 1}]});
        assert!(cells(&bare, Metric::P999)
            .unwrap_err()
            .contains("latency_ns.p999"));
    }

    #[test]
    fn stalls_are_compared_where_they_were_measured() {
        let mut a = latencies(&[("scalelock", &[1, 2, 3]), ("mariadb", &[4, 5, 6])]);
        for (r, stalls) in [[3_000_000, 2_000_000, 4_000_000], [0, 0, 0]]
            .iter()
            .enumerate()
        {
            for (k, v) in stalls.iter().enumerate() {
                a["results"][r]["runs"][k]["latency_ns"]["stall"] = json!(v);
            }
        }
        let c = cells(&a, Metric::Stall).unwrap();
        // A stall of 0 in every run was not measured: no cell.
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].series.as_str(), c[0].median), ("scalelock", 3e6));
    }

    #[test]
    fn switches_are_compared_where_they_were_measured() {
        let side = |ours: [f64; 3]| {
            let mut v = latencies(&[("scalelock", &[1, 2, 3]), ("mariadb", &[4, 5, 6])]);
            v["results"][0]["context_switches_per_op"] = json!(ours[1]);
            for (k, sw) in ours.iter().enumerate() {
                v["results"][0]["runs"][k]["context_switches_per_op"] = json!(sw);
            }
            v
        };
        let (a, b) = (side([0.02, 0.03, 0.04]), side([0.002, 0.003, 0.004]));
        let (ca, cb) = (
            cells(&a, Metric::Switches).unwrap(),
            cells(&b, Metric::Switches).unwrap(),
        );
        // The MariaDB cell measured none: no cell.
        assert_eq!(ca.len(), 1);
        assert_eq!((ca[0].median, ca[0].runs.len()), (0.03, 3));
        let (text, s) = compare(&ca, &cb, "a", "b", Metric::Switches).unwrap();
        assert_eq!((s.common, s.better), (1, 1), "{text}");
        assert!(text.contains("context switches"), "{text}");
        // A run without the figure, in a result that has it, is an error naming it.
        let mut bad = side([0.1, 0.2, 0.3]);
        bad["results"][0]["runs"][1]
            .as_object_mut()
            .unwrap()
            .remove("context_switches_per_op");
        assert!(cells(&bad, Metric::Switches)
            .unwrap_err()
            .contains("runs[].context_switches_per_op"));
    }

    #[test]
    fn bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("scalelock-compare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        assert!(load(&missing, Metric::Ops)
            .unwrap_err()
            .contains("cannot read"));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{not json").unwrap();
        assert!(load(&bad, Metric::Ops)
            .unwrap_err()
            .contains("is not a JSON file"));
        std::fs::write(&bad, "{\"results\": [{\"lock\": \"x\"}]}").unwrap();
        let e = load(&bad, Metric::Ops).unwrap_err();
        assert!(e.contains("no `workload`"), "{e}");
        std::fs::write(&bad, "[1, 2]").unwrap();
        assert!(load(&bad, Metric::Ops)
            .unwrap_err()
            .contains("no `results` array"));
        let a = ops(&file(&[("std", 1.0, &[1.0])]));
        let b = ops(&file(&[("spin", 1.0, &[1.0])]));
        assert!(compare(&a, &b, "a", "b", Metric::Ops)
            .unwrap_err()
            .contains("no cell (workload, case, lock, threads) in common"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
