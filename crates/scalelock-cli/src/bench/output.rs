//! The stdout table, `--json` and `--csv`.

use super::group::{groups, is_own, line_split_ns, Group, Lines, Tail};
use super::locks;
use super::machine::Machine;
use super::stats::{duration_ns, si, Ratio, Record, Standing};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Everything one `scalelock bench` run produced.
#[derive(Serialize)]
pub struct Run {
    /// The machine.
    pub machine: Machine,
    /// One record per measured point.
    pub results: Vec<Record>,
    /// How the run was configured.
    pub config: Config,
    /// What each workload does (report only).
    #[serde(skip)]
    pub workloads: Vec<WorkloadInfo>,
}

/// How a run was configured (an extra JSON field).
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Measured time of one run of a point.
    pub duration_ms: u64,
    /// Runs per point (`--repeat`); `ops_per_sec` is their median.
    pub repeat: usize,
    /// `--isolate`: each run in a process of its own.
    pub isolate: bool,
    /// Warm-up before each run.
    pub warmup_ms: u64,
    /// Thread sweep.
    pub threads: Vec<usize>,
    /// `--quick`.
    pub quick: bool,
    /// Process-wide spin policy outside `adaptive-grid`.
    pub spin_policy: String,
    /// Cost of reading the clock twice, included in every latency sample (ns).
    pub clock_overhead_ns: u64,
    /// 1-minute load average when the run started and when it ended: well above the CPU count
    /// at the start means other work competed with the bench.
    pub load_average: [Option<f64>; 2],
    /// The command line, as typed (arguments quoted where needed).
    pub command: String,
    /// The commit the `scalelock` binary was built from (`git rev-parse HEAD` of its source
    /// tree, with `-dirty` when its sources had changes), or `unknown` (built outside a git
    /// checkout).
    pub commit: String,
    /// When the run started, UTC (`2026-12-01 15:42 UTC`).
    pub date: String,
    /// How long the measurements took, seconds.
    pub elapsed_s: f64,
    /// What the bench estimated at the start, seconds.
    pub estimate_s: f64,
}

/// A workload's description for the report and table.
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    /// Name.
    pub name: String,
    /// What it does, which seed.
    pub about: String,
    /// The series compared against the best other.
    pub ours: String,
    /// What its throughput counts (`ops/s, all threads`).
    pub throughput: String,
    /// What its latency times (`acquisition latency`).
    pub latency: String,
}

/// Fills the `ratio_to_best_other` (median), `ratio_min`, `ratio_max`, `ratio_undecided` and
/// `best_other` params of every record of the workload's own series, and where latencies were
/// sampled `max_ratio_to_lowest_other`, `max_ratio_min`, `max_ratio_max` and
/// `lowest_max_other`, and the same four of the longest stall (`stall_ratio_to_lowest_other`,
/// ..., `lowest_stall_other`; see [`Group::tail_ratio`]); where the runs' cache-line
/// round trips differ, also `line_split_ns` and the ratios over the runs on either side of it,
/// `ratio_cheap_lines` and `ratio_dear_lines` (see [`Group::ratio_on`]), where both sides have
/// runs.
pub fn annotate_ratios(records: &mut [Record], workloads: &[WorkloadInfo]) {
    use serde_json::json;
    let split = line_split_ns(records);
    // Per record of our series (workload, case, series, threads): the params it gets.
    let mut found = Vec::new();
    for g in groups(records) {
        let Some(info) = workloads.iter().find(|w| w.name == g.workload) else {
            continue;
        };
        let ours = info.ours.as_str();
        for s in g.own_series(ours) {
            for t in g.threads() {
                let mut params: Vec<(String, serde_json::Value)> = Vec::new();
                if let (Some(ratio), Some(best)) = (g.ratio(ours, s, t), g.best_other(ours, t)) {
                    params.extend([
                        ("ratio_to_best_other".into(), json!(ratio.median)),
                        ("ratio_min".into(), json!(ratio.min)),
                        ("ratio_max".into(), json!(ratio.max)),
                        ("ratio_undecided".into(), json!(ratio.undecided())),
                        ("best_other".into(), json!(best.series)),
                    ]);
                    if let Some(ns) = split {
                        params.push(("line_split_ns".into(), json!(ns)));
                        for lines in Lines::BOTH {
                            if let Some(v) = g.ratio_on(ours, s, t, lines, ns) {
                                params.push((lines.param().into(), json!(v)));
                            }
                        }
                    }
                }
                for (tail, name) in [(Tail::Max, "max"), (Tail::Stall, "stall")] {
                    if let Some((ratio, lowest)) = g.tail_ratio(ours, s, t, tail) {
                        params.extend([
                            (format!("{name}_ratio_to_lowest_other"), json!(ratio.median)),
                            (format!("{name}_ratio_min"), json!(ratio.min)),
                            (format!("{name}_ratio_max"), json!(ratio.max)),
                            (format!("lowest_{name}_other"), json!(lowest.series)),
                        ]);
                    }
                }
                if !params.is_empty() {
                    let case = g.case.map(str::to_string);
                    found.push((g.workload.to_string(), case, s.to_string(), t, params));
                }
            }
        }
    }
    for (w, c, s, t, params) in found {
        if let Some(r) = records
            .iter_mut()
            .find(|r| r.workload == w && r.case == c && r.threads == t && r.series == s)
        {
            r.params.extend(params);
        }
    }
}

/// A figure the stdout table can show per cell (`--metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Throughput (median of the runs).
    Ops,
    /// CPU time per operation (median of the runs).
    Cpu,
    /// 99th percentile latency (all runs' samples together).
    P99,
    /// 99.9th percentile latency.
    P999,
    /// Largest latency sample.
    Max,
    /// Longest stall: the longest stretch in which some thread made no sampled acquisition.
    Stall,
    /// The worker threads' context switches per 1000 operations (median of the runs): what
    /// the lock costs the scheduler.
    Switches,
}

impl Metric {
    /// Every metric, in table order: the default of `--metric`.
    pub const ALL: [Metric; 7] = [
        Metric::Ops,
        Metric::Cpu,
        Metric::P99,
        Metric::P999,
        Metric::Max,
        Metric::Stall,
        Metric::Switches,
    ];

    /// The `--metric` names.
    pub const NAMES: [&'static str; 7] = ["ops", "cpu", "p99", "p999", "max", "stall", "switches"];

    /// The metric called `name` (see [`Metric::NAMES`]).
    pub fn parse(name: &str) -> Result<Metric, String> {
        Metric::NAMES
            .iter()
            .position(|n| *n == name.trim())
            .map(|i| Metric::ALL[i])
            .ok_or_else(|| {
                format!(
                    "unknown metric `{name}`; choose from: {}",
                    Metric::NAMES.join(", ")
                )
            })
    }

    /// The value of this metric in `r`, formatted (`-` when nothing was measured).
    pub fn cell(self, r: &Record) -> String {
        let lat = |v: u64| {
            if r.latency_samples == 0 {
                "-".to_string()
            } else {
                duration_ns(v as f64)
            }
        };
        match self {
            Metric::Ops => si(r.ops_per_sec),
            Metric::Cpu if r.total_ops == 0 => format!(">{}", duration_ns(r.cpu_ns_per_op)),
            Metric::Cpu => duration_ns(r.cpu_ns_per_op),
            Metric::P99 => lat(r.latency_ns.p99),
            Metric::P999 => lat(r.latency_ns.p999),
            Metric::Max => lat(r.latency_ns.max),
            // 0: not measured (a workload whose threads sample no acquisitions, as the
            // MariaDB one, whose samples are the server's transactions).
            Metric::Stall if r.latency_ns.stall == 0 => "-".to_string(),
            Metric::Stall => lat(r.latency_ns.stall),
            Metric::Switches => r
                .context_switches_per_op
                .map_or("-".to_string(), |v| per_thousand(v * 1000.0)),
        }
    }

    /// The tail figure this metric is, if it is one whose ratio to the lowest other the
    /// tables show.
    pub fn tail(self) -> Option<Tail> {
        match self {
            Metric::Max => Some(Tail::Max),
            Metric::Stall => Some(Tail::Stall),
            Metric::Ops | Metric::Cpu | Metric::P99 | Metric::P999 | Metric::Switches => None,
        }
    }

    /// The heading of this metric's block in `info`'s workload.
    pub fn heading(self, info: Option<&WorkloadInfo>) -> String {
        let latency = info.map_or("acquisition latency", |i| i.latency.as_str());
        match self {
            Metric::Ops => info
                .map_or("ops/s, all threads", |i| i.throughput.as_str())
                .into(),
            Metric::Cpu => "CPU time per operation".into(),
            Metric::P99 => format!("{latency}, p99"),
            Metric::P999 => format!("{latency}, p99.9"),
            Metric::Max => format!("{latency}, max"),
            Metric::Stall => "longest stall".into(),
            Metric::Switches => "context switches per 1000 operations".into(),
        }
    }
}

/// A count per 1000 operations, to three significant digits (`0` for none, `<0.001` below
/// what that shows).
pub fn per_thousand(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v < 0.001 {
        "<0.001".to_string()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        // Three significant digits below 1: 0.123, 0.0123.
        let decimals = (2.0 - v.log10().floor()) as usize;
        format!("{v:.decimals$}")
    }
}

/// Width of one cell in the stdout table (fits `1.10–1.31`).
const CELL: usize = 9;

/// The compact table printed at the end of a run: per (workload, case) one block per metric in
/// `metrics`, the ratio of each of our series to the best other (median of the runs, `?` when
/// undecided) with its spread, and one verdict line per workload and own series.
pub fn table(run: &Run, metrics: &[Metric]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Medians of {} run{} per point. Ratios: ours ÷ the best other lock (the test-and-set\n\
         floor is not a lock), medians, with the range of the per-round ratios; `?` marks a\n\
         cell left undecided (the range crosses 1.0 or is wider than ±5%).",
        run.config.repeat,
        if run.config.repeat == 1 { "" } else { "s" }
    );
    if run.config.repeat == 1 {
        out.push_str(
            "One run per point: no spread, nothing can be called undecided (--repeat N).\n",
        );
    }
    if metrics.contains(&Metric::Max) {
        out.push_str(
            "`÷ lowest other` under `max`: ours over the lowest other lock's largest latency,\n\
             medians of the runs' own maxima, with the range of the per-round ratios (lower is\n\
             better).\n",
        );
    }
    if metrics.contains(&Metric::Stall) {
        out.push_str(
            "`longest stall`: the longest stretch of a run in which some thread made no sampled\n\
             acquisition (a starved thread: the whole run), which `max`, taken from the waits\n\
             that ended and were sampled, misses; `÷ lowest other` as under `max`.\n",
        );
    }
    let split = line_split_ns(&run.results);
    if let Some(ns) = split {
        let _ = writeln!(
            out,
            "`cheap lines` / `dear lines`: the same ratio over only the runs whose cache-line\n\
             round trip, measured before each run, was at most / above the median of all runs\n\
             ({ns:.0} ns): how each lock fares when the host makes transfers cheap and when dear."
        );
    }
    let mut last_workload = "";
    for g in groups(&run.results) {
        let info = run.workloads.iter().find(|w| w.name == g.workload);
        let ours = info.map_or("scalelock", |i| i.ours.as_str());
        if g.workload != last_workload {
            if !last_workload.is_empty() {
                summary(&mut out, &run.results, last_workload, run);
            }
            last_workload = g.workload;
        }
        let title = match g.case {
            Some(c) => format!("{} / {c}", g.workload),
            None => g.workload.to_string(),
        };
        let threads = g.threads();
        let series = g.series();
        let label = |s: &str| -> String {
            if s == locks::FLOOR {
                format!("{s} (floor)")
            } else {
                s.to_string()
            }
        };
        let width = series
            .iter()
            .map(|s| label(s).len())
            .chain(own_or_missing(&g, ours).iter().map(|s| s.len() + 16))
            .max()
            .unwrap_or(0)
            .max(16);
        if g.is_single_thread() {
            let t = threads[0];
            let _ = writeln!(
                out,
                "\n{title}  ({t} thread{}; compared by CPU time per operation)",
                if t == 1 { "" } else { "s" }
            );
            let _ = write!(
                out,
                "  {:<width$} {:>CELL$} {:>CELL$}",
                "", "ns/op", "ops/s"
            );
            for m in metrics.iter().filter(|m| **m != Metric::Ops) {
                let _ = write!(out, " {:>CELL$}", Metric::NAMES[*m as usize]);
            }
            out.push('\n');
            for s in &series {
                if let Some(r) = g.get(s, t) {
                    let _ = write!(
                        out,
                        "  {:<width$} {:>CELL$} {:>CELL$}",
                        label(s),
                        format!("{:.2}", r.ns_per_op),
                        si(r.ops_per_sec),
                    );
                    for m in metrics.iter().filter(|m| **m != Metric::Ops) {
                        let _ = write!(out, " {:>CELL$}", m.cell(r));
                    }
                    out.push('\n');
                }
            }
            for own in own_or_missing(&g, ours) {
                let name = format!("{own} ÷ best other");
                match (g.ratio(ours, own, t), g.best_other(ours, t)) {
                    (Some(r), Some(best)) => {
                        let range = if r.pairs > 1 {
                            r.range()
                        } else {
                            String::new()
                        };
                        let _ = writeln!(
                            out,
                            "  {name:<width$} {:>CELL$} {range:>CELL$}  (best other: {}; {})",
                            r.cell(),
                            best.series,
                            r.standing().word()
                        );
                    }
                    _ => {
                        let _ = writeln!(out, "  {name:<width$} {:>CELL$}", "-");
                    }
                }
            }
        } else {
            let _ = writeln!(out, "\n{title}");
            let _ = write!(out, "  {:<width$}", "threads");
            for t in &threads {
                let _ = write!(out, " {t:>CELL$}");
            }
            out.push('\n');
            for (i, m) in metrics.iter().enumerate() {
                let _ = writeln!(out, "  [{}]", m.heading(info));
                for s in &series {
                    let _ = write!(out, "  {:<width$}", label(s));
                    for &t in &threads {
                        let cell = g.get(s, t).map_or("-".into(), |r| m.cell(r));
                        let _ = write!(out, " {cell:>CELL$}");
                    }
                    out.push('\n');
                }
                if i == 0 {
                    ratio_rows(&mut out, &g, ours, &threads, width, split);
                }
                if let Some(tail) = m.tail() {
                    tail_ratio_rows(&mut out, &g, ours, &threads, width, tail);
                }
            }
            out.push_str(&super::memory::table_rows(&g, width));
        }
    }
    if !last_workload.is_empty() {
        summary(&mut out, &run.results, last_workload, run);
    }
    out
}

/// The `÷ best other` row and its spread row, per own series; with a `split` of the runs by
/// their cache-line round trip, the ratio over the runs on either side of it (see
/// [`Group::ratio_on`]), where some cell has runs on both.
fn ratio_rows(
    out: &mut String,
    g: &Group<'_>,
    ours: &str,
    threads: &[usize],
    width: usize,
    split: Option<f64>,
) {
    for own in own_or_missing(g, ours) {
        let ratios: Vec<Option<Ratio>> = threads.iter().map(|&t| g.ratio(ours, own, t)).collect();
        if !ratio_and_spread_rows(out, &format!("{own} ÷ best other"), &ratios, width) {
            continue;
        }
        for (lines, cells) in g.rows_on_lines(ours, own, threads, split) {
            let _ = write!(out, "  {:<width$}", format!("  {}", lines.label()));
            for cell in cells {
                let _ = write!(out, " {cell:>CELL$}");
            }
            out.push('\n');
        }
    }
}

/// Under the `max` or `stall` block: per own series, its `tail` figure over the lowest
/// other's (see [`Group::tail_ratio`]; lower is better, `?` when the per-round ratios leave it
/// open), and the spread of the per-round ratios.
fn tail_ratio_rows(
    out: &mut String,
    g: &Group<'_>,
    ours: &str,
    threads: &[usize],
    width: usize,
    tail: Tail,
) {
    for own in own_or_missing(g, ours) {
        let ratios: Vec<Option<Ratio>> = threads
            .iter()
            .map(|&t| g.tail_ratio(ours, own, t, tail).map(|(r, _)| r))
            .collect();
        if ratios.iter().any(Option::is_some) {
            ratio_and_spread_rows(out, &format!("{own} ÷ lowest other"), &ratios, width);
        }
    }
}

/// A ratio row (`label`, then per thread count the median ratio, `?` when undecided, or `-`)
/// and, where some cell paired more than one run, the row of their spreads. Returns whether
/// the spread row was written.
fn ratio_and_spread_rows(
    out: &mut String,
    label: &str,
    ratios: &[Option<Ratio>],
    width: usize,
) -> bool {
    let _ = write!(out, "  {label:<width$}");
    for r in ratios {
        let cell = r.as_ref().map_or("-".into(), Ratio::cell);
        let _ = write!(out, " {cell:>CELL$}");
    }
    out.push('\n');
    if ratios.iter().flatten().all(|r| r.pairs <= 1) {
        // One run: nothing to spread.
        return false;
    }
    let _ = write!(out, "  {:<width$}", "  spread");
    for r in ratios {
        let cell = r.as_ref().map_or("-".into(), Ratio::range);
        let _ = write!(out, " {cell:>CELL$}");
    }
    out.push('\n');
    true
}

/// How a workload's own series fared against the best other, over all its cases and thread
/// counts, each cell judged by its median ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Cells where both ours and another series were measured.
    pub cells: usize,
    /// Cells ahead (median ratio above 1.05).
    pub ahead: usize,
    /// Cells within 5% (median ratio 0.95 – 1.05).
    pub within: usize,
    /// Cells behind (median ratio below 0.95).
    pub behind: usize,
    /// Cells whose spread leaves the comparison undecided (counted in the three above too).
    pub undecided: usize,
    /// The worst median ratio.
    pub worst: f64,
    /// Geometric mean of the median ratios.
    pub geomean: f64,
}

impl Verdict {
    /// The overall standing, by the geometric mean of the median ratios.
    pub fn standing(&self) -> Standing {
        Ratio::new(self.geomean, 1.0, []).map_or(Standing::Behind, |r| r.standing())
    }

    /// `ahead overall (geometric mean 1.21): ahead at 3, within 5% at 2, behind at 1 of 6
    /// cells; 2 undecided`.
    pub fn sentence(&self) -> String {
        format!(
            "{} overall (geometric mean of the median ratios {:.2}): ahead at {}, within 5% at \
             {}, behind at {} of {} cell{}; {} undecided; worst {:.2}",
            self.standing().word(),
            self.geomean,
            self.ahead,
            self.within,
            self.behind,
            self.cells,
            if self.cells == 1 { "" } else { "s" },
            self.undecided,
            self.worst
        )
    }
}

/// The [`Verdict`] of series `own` (of the `ours` family) in `workload` (`None` when no cell has
/// both it and another series).
pub fn verdict(records: &[Record], workload: &str, ours: &str, own: &str) -> Option<Verdict> {
    let ratios: Vec<Ratio> = groups(records)
        .iter()
        .filter(|g| g.workload == workload)
        .flat_map(|g| {
            g.threads()
                .into_iter()
                .filter_map(|t| g.ratio(ours, own, t))
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let count = |s: Standing| ratios.iter().filter(|r| r.standing() == s).count();
    Some(Verdict {
        cells: ratios.len(),
        ahead: count(Standing::Ahead),
        within: count(Standing::Within),
        behind: count(Standing::Behind),
        undecided: ratios.iter().filter(|r| r.undecided()).count(),
        worst: ratios
            .iter()
            .map(|r| r.median)
            .fold(f64::INFINITY, f64::min),
        geomean: (ratios.iter().map(|r| r.median.max(1e-12).ln()).sum::<f64>()
            / ratios.len() as f64)
            .exp(),
    })
}

/// The own-family series measured in `workload`, in run order (just `ours` when none was, so
/// the table still shows where ours is missing).
pub fn own_series_of<'a>(records: &'a [Record], workload: &str, ours: &'a str) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    for r in records.iter().filter(|r| r.workload == workload) {
        if is_own(ours, &r.series) && !out.contains(&r.series.as_str()) {
            out.push(&r.series);
        }
    }
    if out.is_empty() {
        out.push(ours);
    }
    out
}

fn own_or_missing<'a>(g: &Group<'a>, ours: &'a str) -> Vec<&'a str> {
    let own = g.own_series(ours);
    if own.is_empty() {
        vec![ours]
    } else {
        own
    }
}

/// One verdict line per own series of a workload.
fn summary(out: &mut String, records: &[Record], workload: &str, run: &Run) {
    let Some(info) = run.workloads.iter().find(|w| w.name == workload) else {
        return;
    };
    for own in own_series_of(records, workload, &info.ours) {
        if let Some(v) = verdict(records, workload, &info.ours, own) {
            let _ = writeln!(out, "  => {own}: {}", v.sentence());
        }
    }
}

/// Writes the `--json` file.
pub fn write_json(run: &Run, path: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(run).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The CSV header.
pub const CSV_HEADER: &str = "workload,case,lock,series,threads,ops_per_sec,cpu_ns_per_op,\
p50_ns,p99_ns,max_ns,min_thread_ops,max_thread_ops,total_ops,elapsed_s,latency_samples,\
p999_ns,ops_per_sec_min,ops_per_sec_max,runs,stall_ns,context_switches_per_op";

/// One CSV field, quoted when needed.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The `--csv` text: one line per record (the median run's figures; latency over all runs).
pub fn csv(run: &Run) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in &run.results {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{:.2},{},{},{},{},{},{},{:.4},{},{},{:.1},{:.1},{},{},{}",
            csv_field(&r.workload),
            csv_field(r.case.as_deref().unwrap_or("")),
            csv_field(&r.lock),
            csv_field(&r.series),
            r.threads,
            r.ops_per_sec,
            r.cpu_ns_per_op,
            r.latency_ns.p50,
            r.latency_ns.p99,
            r.latency_ns.max,
            r.fairness.min_thread_ops,
            r.fairness.max_thread_ops,
            r.total_ops,
            r.elapsed_s,
            r.latency_samples,
            r.latency_ns.p999,
            r.ops_per_sec_spread.min,
            r.ops_per_sec_spread.max,
            r.runs.len(),
            r.latency_ns.stall,
            // Empty where not measured.
            r.context_switches_per_op
                .map_or(String::new(), |v| format!("{v:.6}")),
        );
    }
    out
}

/// Writes the `--csv` file.
pub fn write_csv(run: &Run, path: &Path) -> Result<(), String> {
    std::fs::write(path, csv(run)).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A human line for one finished point (progress messages).
pub fn point_line(r: &Record) -> String {
    format!(
        "{} {}{} {}t: {} ops/s, p99 {}",
        r.workload,
        r.case
            .as_deref()
            .map_or(String::new(), |c| format!("[{c}] ")),
        r.series,
        r.threads,
        si(r.ops_per_sec),
        duration_ns(r.latency_ns.p99 as f64)
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::stats::{Fairness, Latency, RunStats, Spread};
    use std::collections::BTreeMap;

    pub fn record(
        workload: &str,
        case: Option<&str>,
        series: &str,
        threads: usize,
        ops: f64,
    ) -> Record {
        Record {
            workload: workload.into(),
            lock: series.into(),
            threads,
            ops_per_sec: ops,
            cpu_ns_per_op: 10.0,
            latency_ns: Latency {
                p50: 10,
                p99: 100,
                p999: 500,
                max: 1000,
                stall: 2000,
            },
            fairness: Fairness {
                min_thread_ops: 1,
                max_thread_ops: 2,
            },
            case: case.map(str::to_string),
            series: series.into(),
            ns_per_op: threads as f64 * 1e9 / ops,
            total_ops: ops as u64,
            elapsed_s: 1.0,
            latency_samples: 5,
            context_switches_per_op: None,
            cpu_utilization: 1.0,
            params: BTreeMap::new(),
            ops_per_sec_spread: Spread::of(&[ops]),
            runs: Vec::new(),
        }
    }

    /// `record` with its runs (the median is taken from them).
    pub fn record_runs(
        workload: &str,
        case: Option<&str>,
        series: &str,
        threads: usize,
        runs: &[f64],
    ) -> Record {
        let mut r = record(workload, case, series, threads, Spread::of(runs).median);
        r.ops_per_sec_spread = Spread::of(runs);
        r.runs = runs
            .iter()
            .map(|&o| RunStats {
                ops_per_sec: o,
                cpu_ns_per_op: 10.0,
                latency_ns: r.latency_ns.clone(),
                context_switches: None,
                context_switches_per_op: None,
                total_ops: o as u64,
                elapsed_s: 1.0,
                wall_s: 1.1,
                line_round_trip_ns: None,
                process: None,
            })
            .collect();
        r
    }

    pub fn run(results: Vec<Record>) -> Run {
        Run {
            machine: crate::bench::machine::detect(),
            results,
            config: Config {
                duration_ms: 1,
                repeat: 3,
                isolate: false,
                warmup_ms: 1,
                threads: vec![1, 2],
                quick: true,
                spin_policy: "auto".into(),
                clock_overhead_ns: 20,
                load_average: [Some(0.5), Some(2.0)],
                command: "scalelock bench --repeat 3".into(),
                commit: "abc123".into(),
                date: "2026-12-01 15:00 UTC".into(),
                elapsed_s: 61.0,
                estimate_s: 60.0,
            },
            workloads: vec![WorkloadInfo {
                name: "w".into(),
                about: "about w".into(),
                ours: "scalelock".into(),
                throughput: "ops/s, all threads".into(),
                latency: "acquisition latency".into(),
            }],
        }
    }

    fn sample() -> Vec<Record> {
        vec![
            record("w", None, "scalelock", 1, 100.0),
            record("w", None, "std", 1, 50.0),
            record("w", None, "scalelock", 2, 90.0),
            record("w", None, "std", 2, 100.0),
            record("w", None, "spin", 2, 120.0),
        ]
    }

    #[test]
    fn groups_keep_run_order_and_split_cases() {
        let mut rs = sample();
        rs.push(record("w", Some("c"), "std", 1, 1.0));
        let g = groups(&rs);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].series(), vec!["scalelock", "std", "spin"]);
        assert_eq!(g[0].threads(), vec![1, 2]);
        assert_eq!(g[1].case, Some("c"));
    }

    #[test]
    fn ratio_per_thread_count_is_against_the_best_other() {
        let rs = sample();
        let g = &groups(&rs)[0];
        let median = |t| g.ratio("scalelock", "scalelock", t).map(|r| r.median);
        assert_eq!(median(1), Some(2.0));
        assert_eq!(median(2), Some(0.75));
        assert_eq!(g.best_other("scalelock", 2).unwrap().series, "spin");
        assert_eq!(g.ratio("scalelock", "missing", 2), None);
    }

    #[test]
    fn ratio_spread_pairs_runs_of_the_same_round() {
        let rs = vec![
            record_runs("w", None, "scalelock", 2, &[110.0, 200.0, 300.0]),
            record_runs("w", None, "std", 2, &[100.0, 100.0, 300.0]),
        ];
        let g = &groups(&rs)[0];
        let r = g.ratio("scalelock", "scalelock", 2).unwrap();
        assert_eq!(r.median, 2.0);
        assert_eq!((r.min, r.max, r.pairs), (1.0, 2.0, 3));
        assert!(r.undecided());
    }

    #[test]
    fn the_floor_is_shown_as_a_floor_and_never_compared() {
        let mut a = record("u", Some("mutex"), "scalelock", 1, 50.0);
        let mut b = record("u", Some("mutex"), "std", 1, 40.0);
        let mut f = record("u", Some("mutex"), "tas", 1, 100.0);
        a.cpu_ns_per_op = 8.0;
        b.cpu_ns_per_op = 10.0;
        f.cpu_ns_per_op = 2.0;
        let rs = vec![f, a, b];
        let g = &groups(&rs)[0];
        assert_eq!(g.best_other("scalelock", 1).unwrap().series, "std");
        let t = table(&run(rs.clone()), &Metric::ALL);
        assert!(t.contains("tas (floor)"), "{t}");
        assert!(t.contains("best other: std"), "{t}");
    }

    #[test]
    fn table_shows_ratios_and_a_verdict_by_the_median() {
        let r = run(sample());
        let t = table(&r, &Metric::ALL);
        assert!(t.contains("scalelock ÷ best other"), "{t}");
        assert!(t.contains("2.00") && t.contains("0.75"), "{t}");
        assert!(
            t.contains("ahead at 1, within 5% at 0, behind at 1 of 2 cells"),
            "{t}"
        );
        // Geometric mean of 2.0 and 0.75 is 1.22: ahead overall.
        assert!(t.contains("=> scalelock: ahead overall"), "{t}");
        assert!(t.contains("120"), "{t}");
        for heading in [
            "[ops/s, all threads]",
            "[CPU time per operation]",
            "p99]",
            "p99.9]",
            "max]",
        ] {
            assert!(t.contains(heading), "{heading}: {t}");
        }
        assert!(t.contains("500 ns"), "p99.9 shown: {t}");
        let only = table(&r, &[Metric::P99]);
        assert!(!only.contains("[ops/s") && only.contains("p99]"), "{only}");
    }

    #[test]
    fn undecided_cells_are_marked() {
        let rs = vec![
            record_runs("w", None, "scalelock", 2, &[90.0, 110.0, 130.0]),
            record_runs("w", None, "std", 2, &[100.0, 100.0, 100.0]),
        ];
        let t = table(&run(rs), &[Metric::Ops]);
        assert!(t.contains("1.10?"), "{t}");
        assert!(t.contains("0.90–1.30"), "{t}");
        assert!(t.contains("1 undecided"), "{t}");
    }

    #[test]
    fn metric_names_parse_and_unknown_ones_list_the_choices() {
        assert_eq!(Metric::parse("p999"), Ok(Metric::P999));
        let e = Metric::parse("p42").unwrap_err();
        assert!(
            e.contains("unknown metric `p42`") && e.contains("ops, cpu"),
            "{e}"
        );
        assert_eq!(Metric::parse("switches"), Ok(Metric::Switches));
    }

    #[test]
    fn switches_show_per_thousand_operations_and_a_dash_where_not_measured() {
        let mut rs = vec![
            record("w", None, "scalelock", 4, 100.0),
            record("w", None, "std", 4, 100.0),
        ];
        rs[0].context_switches_per_op = Some(0.01234);
        rs[1].context_switches_per_op = None;
        let t = table(&run(rs), &[Metric::Ops, Metric::Switches]);
        assert!(t.contains("[context switches per 1000 operations]"), "{t}");
        let row = |s: &str| {
            t.lines()
                .skip_while(|l| !l.contains("[context switches"))
                .find(|l| l.trim_start().starts_with(s))
        };
        assert!(
            row("scalelock").is_some_and(|l| l.ends_with(" 12.3")),
            "{t}"
        );
        assert!(row("std").is_some_and(|l| l.ends_with(" -")), "{t}");
        assert_eq!(per_thousand(0.5), "0.500");
        assert_eq!(per_thousand(0.0123), "0.0123");
        assert_eq!(per_thousand(2.346), "2.35");
        assert_eq!(per_thousand(1234.4), "1234");
        assert_eq!(per_thousand(0.0), "0");
        assert_eq!(per_thousand(0.0001), "<0.001");
    }

    #[test]
    fn verdict_counts_cells_by_their_median_ratio() {
        let rs = sample();
        let v = verdict(&rs, "w", "scalelock", "scalelock").unwrap();
        assert_eq!((v.cells, v.ahead, v.within, v.behind), (2, 1, 0, 1));
        assert_eq!(v.worst, 0.75);
        assert_eq!(v.standing(), Standing::Ahead);
        assert!((v.geomean - (2.0f64 * 0.75).sqrt()).abs() < 1e-9);
        assert_eq!(verdict(&rs, "w", "scalelock", "nobody"), None);
    }

    #[test]
    fn single_thread_groups_compare_cpu_time_per_op() {
        let mut a = record("u", Some("mutex"), "scalelock", 1, 50.0);
        let mut b = record("u", Some("mutex"), "std", 1, 100.0);
        // ours was preempted (half the wall throughput) but cost less CPU per op.
        a.cpu_ns_per_op = 8.0;
        b.cpu_ns_per_op = 10.0;
        let rs = vec![a, b];
        let g = &groups(&rs)[0];
        assert!(g.is_single_thread());
        assert!((g.ratio("scalelock", "scalelock", 1).unwrap().median - 1.25).abs() < 1e-9);
    }

    #[test]
    fn family_members_are_compared_with_outsiders_only() {
        assert!(is_own("scalelock", "scalelock"));
        assert!(is_own("scalelock", "scalelock-biased"));
        assert!(!is_own("scalelock", "scalelockx"));
        assert!(!is_own("auto", "always"));
        let mut rs = sample();
        rs.push(record("w", None, "scalelock-biased", 2, 240.0));
        let g = &groups(&rs)[0];
        assert_eq!(
            g.own_series("scalelock"),
            vec!["scalelock", "scalelock-biased"]
        );
        // Both are compared with spin (120), not with each other.
        let median = |s| g.ratio("scalelock", s, 2).map(|r| r.median);
        assert_eq!(median("scalelock"), Some(0.75));
        assert_eq!(median("scalelock-biased"), Some(2.0));
        let t = table(&run(rs), &Metric::ALL);
        assert!(t.contains("scalelock-biased ÷ best other"), "{t}");
    }

    #[test]
    fn ratios_are_annotated_on_our_records_only() {
        let mut r = run(sample());
        let infos = r.workloads.clone();
        annotate_ratios(&mut r.results, &infos);
        let annotated: Vec<_> = r
            .results
            .iter()
            .filter_map(|x| {
                x.params
                    .get("ratio_to_best_other")
                    .map(|v| (x.series.clone(), v.as_f64()))
            })
            .collect();
        assert_eq!(
            annotated,
            vec![
                ("scalelock".to_string(), Some(2.0)),
                ("scalelock".to_string(), Some(0.75))
            ]
        );
    }

    /// `record_runs` at 8 threads whose runs' largest latencies are `maxima` (ns).
    fn record_maxima(series: &str, maxima: &[u64]) -> Record {
        let mut r = record_runs("w", None, series, 8, &vec![100.0; maxima.len()]);
        for (k, &m) in r.runs.iter_mut().zip(maxima) {
            k.latency_ns.max = m;
        }
        r
    }

    /// Ours: medians of the runs' maxima 300; std 300; spin 150, the lowest.
    fn maxima() -> Vec<Record> {
        vec![
            record_maxima("scalelock", &[300, 200, 900]),
            record_maxima("std", &[100, 400, 300]),
            record_maxima("spin", &[150, 100, 1000]),
        ]
    }

    #[test]
    fn max_ratio_is_over_the_lowest_other_and_pairs_runs_of_the_same_round() {
        let rs = maxima();
        let g = &groups(&rs)[0];
        let (r, lowest) = g
            .tail_ratio("scalelock", "scalelock", 8, Tail::Max)
            .unwrap();
        assert_eq!(lowest.series, "spin");
        assert_eq!(r.median, 2.0);
        // Per round: 300/150, 200/100, 900/1000.
        assert_eq!((r.min, r.max, r.pairs), (0.9, 2.0, 3));
        assert!(g
            .tail_ratio("scalelock", "scalelock", 2, Tail::Max)
            .is_none());
        // A lock that took no latency samples is never the lowest; ours without any has no
        // ratio.
        let mut rs = maxima();
        rs[2].latency_samples = 0;
        let g = &groups(&rs)[0];
        let (r, lowest) = g
            .tail_ratio("scalelock", "scalelock", 8, Tail::Max)
            .unwrap();
        assert_eq!((lowest.series.as_str(), r.median), ("std", 1.0));
        let mut rs = maxima();
        rs[0].latency_samples = 0;
        assert!(groups(&rs)[0]
            .tail_ratio("scalelock", "scalelock", 8, Tail::Max)
            .is_none());
    }

    #[test]
    fn the_max_ratio_is_in_the_table_under_max_and_in_the_json() {
        let mut r = run(maxima());
        let t = table(&r, &[Metric::Ops, Metric::Max]);
        assert!(t.contains("scalelock ÷ lowest other"), "{t}");
        let row = t
            .lines()
            .find(|l| l.contains("scalelock ÷ lowest other"))
            .unwrap();
        assert!(row.contains("2.00"), "{t}");
        assert!(t.contains("0.90–2.00"), "{t}");
        assert!(!table(&r, &[Metric::Ops]).contains("lowest other"));
        let infos = r.workloads.clone();
        annotate_ratios(&mut r.results, &infos);
        let p = &r.results[0].params;
        assert_eq!(p["max_ratio_to_lowest_other"], serde_json::json!(2.0));
        assert_eq!(p["max_ratio_min"], serde_json::json!(0.9));
        assert_eq!(p["max_ratio_max"], serde_json::json!(2.0));
        assert_eq!(p["lowest_max_other"], serde_json::json!("spin"));
        assert!(!r.results[1]
            .params
            .contains_key("max_ratio_to_lowest_other"));
    }

    #[test]
    fn the_stall_ratio_is_in_the_table_under_stall_and_in_the_json() {
        let mut rs = maxima();
        for r in &mut rs {
            for k in &mut r.runs {
                k.latency_ns.stall = k.latency_ns.max * 10;
            }
        }
        let mut r = run(rs);
        let t = table(&r, &[Metric::Ops, Metric::Stall]);
        assert!(t.contains("[longest stall]"), "{t}");
        assert!(t.contains("`longest stall`: the longest stretch"), "{t}");
        let row = t
            .lines()
            .find(|l| l.contains("scalelock ÷ lowest other"))
            .unwrap();
        assert!(row.contains("2.00"), "{t}");
        let infos = r.workloads.clone();
        annotate_ratios(&mut r.results, &infos);
        let p = &r.results[0].params;
        assert_eq!(p["stall_ratio_to_lowest_other"], serde_json::json!(2.0));
        assert_eq!(p["stall_ratio_min"], serde_json::json!(0.9));
        assert_eq!(p["lowest_stall_other"], serde_json::json!("spin"));
        assert_eq!(Metric::parse("stall"), Ok(Metric::Stall));
        // A stall of 0 was not measured.
        let mut quiet = r.results[0].clone();
        quiet.latency_ns.stall = 0;
        assert_eq!(Metric::Stall.cell(&quiet), "-");
        assert_ne!(Metric::Stall.cell(&r.results[0]), "-");
    }

    /// `record_runs`, each run with the cache-line round trip given beside its throughput.
    fn record_lines(series: &str, runs: &[(f64, f64)]) -> Record {
        let ops: Vec<f64> = runs.iter().map(|r| r.0).collect();
        let mut r = record_runs("w", None, series, 2, &ops);
        for (k, &(_, ns)) in r.runs.iter_mut().zip(runs) {
            k.line_round_trip_ns = Some(ns);
        }
        r
    }

    /// Ours keeps up while lines are cheap and falls behind while they are dear; the other lock
    /// is steady. Round trips 80, 90 (cheap) and 300, 400 (dear): the split is 195 ns.
    pub fn by_lines() -> Vec<Record> {
        vec![
            record_lines(
                "scalelock",
                &[(100.0, 80.0), (50.0, 300.0), (110.0, 90.0), (40.0, 400.0)],
            ),
            record_lines(
                "std",
                &[(100.0, 90.0), (80.0, 400.0), (100.0, 80.0), (80.0, 300.0)],
            ),
        ]
    }

    #[test]
    fn ratios_on_cheap_and_dear_lines_count_only_the_runs_on_either_side_of_the_split() {
        let rs = by_lines();
        let split = line_split_ns(&rs).unwrap();
        assert_eq!(split, 195.0);
        let g = &groups(&rs)[0];
        let on = |lines| {
            g.ratio_on("scalelock", "scalelock", 2, lines, split)
                .unwrap()
        };
        assert!(
            (on(Lines::Cheap) - 1.05).abs() < 1e-9,
            "{}",
            on(Lines::Cheap)
        );
        assert!(
            (on(Lines::Dear) - 45.0 / 80.0).abs() < 1e-9,
            "{}",
            on(Lines::Dear)
        );
        // Over all runs the two are mixed: 75 against 90.
        let all = g.ratio("scalelock", "scalelock", 2).unwrap().median;
        assert!((all - 75.0 / 90.0).abs() < 1e-9, "{all}");
        // One thread moves no line between CPUs: no ratio by lines.
        let mut one = by_lines();
        for r in &mut one {
            r.threads = 1;
        }
        let g1 = &groups(&one)[0];
        assert_eq!(
            g1.ratio_on("scalelock", "scalelock", 1, Lines::Cheap, split),
            None
        );
        // No run of ours on one side: no ratio there.
        assert_eq!(
            g.ratio_on("scalelock", "scalelock", 2, Lines::Cheap, 50.0),
            None
        );
        // Runs without a measured round trip, or all alike: nothing to split.
        assert_eq!(line_split_ns(&sample()), None);
        let same = vec![record_lines("std", &[(1.0, 100.0), (2.0, 100.0)])];
        assert_eq!(line_split_ns(&same), None);
    }

    #[test]
    fn the_table_and_the_json_show_the_ratios_on_cheap_and_dear_lines() {
        let t = table(&run(by_lines()), &Metric::ALL);
        assert!(t.contains("(195 ns)"), "{t}");
        let row = |label: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label} row in\n{t}"))
                .to_string()
        };
        assert!(row("cheap lines").contains("1.05"), "{t}");
        assert!(row("dear lines").contains("0.56"), "{t}");
        let mut r = run(by_lines());
        let infos = r.workloads.clone();
        annotate_ratios(&mut r.results, &infos);
        let p = &r.results[0].params;
        assert_eq!(p["line_split_ns"].as_f64(), Some(195.0));
        assert!((p["ratio_dear_lines"].as_f64().unwrap() - 0.5625).abs() < 1e-9);
        assert!((p["ratio_cheap_lines"].as_f64().unwrap() - 1.05).abs() < 1e-9);
        assert!(!r.results[1].params.contains_key("ratio_dear_lines"));
        // Without round trips the rows and the parameters are absent.
        let t = table(&run(sample()), &Metric::ALL);
        assert!(!t.contains("cheap lines"), "{t}");
    }

    #[test]
    fn csv_has_a_header_and_one_line_per_record_with_quoting() {
        let mut rs = sample();
        rs.push(record("w", Some("a, \"b\""), "std", 1, 1.0));
        rs[0].context_switches_per_op = Some(0.125);
        let text = csv(&run(rs));
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 7);
        // The last column: the switches where measured, empty where not.
        assert!(lines[1].ends_with(",0.125000"), "{}", lines[1]);
        assert!(lines[6].ends_with(','), "{}", lines[6]);
        let columns = CSV_HEADER.split(',').count();
        for l in lines[1..6].iter() {
            assert_eq!(l.split(',').count(), columns, "{l}");
        }
        assert!(
            lines[6].starts_with("w,\"a, \"\"b\"\"\",std,std,1,"),
            "{}",
            lines[6]
        );
    }

    #[test]
    fn json_has_the_design_fields() {
        let v = serde_json::to_value(run(sample())).unwrap();
        let r = &v["results"][0];
        for k in [
            "workload",
            "lock",
            "threads",
            "ops_per_sec",
            "cpu_ns_per_op",
        ] {
            assert!(!r[k].is_null(), "{k}");
        }
        assert!(r["latency_ns"]["p99"].is_u64());
        assert!(r["latency_ns"]["p999"].is_u64());
        assert!(r["ops_per_sec_spread"]["median"].is_f64());
        assert!(r["runs"].is_array());
        assert!(r["fairness"]["min_thread_ops"].is_u64());
        assert!(v["machine"]["cpus"].is_u64());
        assert!(v["machine"]["model"].is_string());
    }
}
