//! The stdout table, `--json` and `--csv`.

use super::locks;
use super::machine::Machine;
use super::stats::{duration_ns, ratio_to_best, si, within, Record};
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
    /// Measured time per point, all rounds together.
    pub duration_ms: u64,
    /// Rounds per point (each `duration_ms / rounds`; the best round is reported).
    pub rounds: usize,
    /// Warm-up per point.
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
}

/// Records of one (workload, case): one table block, one row of plots.
pub struct Group<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// Case, if the workload has several.
    pub case: Option<&'a str>,
    /// The records, in run order.
    pub records: Vec<&'a Record>,
}

impl<'a> Group<'a> {
    /// Distinct thread counts, ascending.
    pub fn threads(&self) -> Vec<usize> {
        let mut t: Vec<usize> = self.records.iter().map(|r| r.threads).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// Distinct series, in first-appearance order.
    pub fn series(&self) -> Vec<&'a str> {
        let mut s: Vec<&'a str> = Vec::new();
        for r in &self.records {
            if !s.contains(&r.series.as_str()) {
                s.push(&r.series);
            }
        }
        s
    }

    /// The record of `series` at `threads`.
    pub fn get(&self, series: &str, threads: usize) -> Option<&'a Record> {
        self.records
            .iter()
            .copied()
            .find(|r| r.series == series && r.threads == threads)
    }

    /// Throughput of `series` over the best series at `threads` that is not of the `ours`
    /// family (see [`is_own`]); the bare test-and-set floor is a reference, not an alternative,
    /// and is left out too.
    ///
    /// In a group measured on one thread only (`uncontended`), throughput is taken as
    /// operations per CPU second (`1 / cpu_ns_per_op`): with one running thread that is the
    /// lock's cost, while wall time also counts whatever preemption the thread suffered.
    pub fn ratio(&self, ours: &str, series: &str, threads: usize) -> Option<f64> {
        let single = self.is_single_thread();
        let speed = |r: &Record| {
            if single {
                1e9 / r.cpu_ns_per_op.max(1e-3)
            } else {
                r.ops_per_sec
            }
        };
        ratio_to_best(
            self.get(series, threads).map(&speed),
            self.records
                .iter()
                .filter(|r| r.threads == threads && !is_own(ours, &r.series))
                .filter(|r| r.lock != locks::FLOOR)
                .copied()
                .map(&speed),
        )
    }

    /// Whether every record of the group ran on one thread.
    pub fn is_single_thread(&self) -> bool {
        self.records.iter().all(|r| r.threads == 1)
    }

    /// The series of the `ours` family present in this group.
    pub fn own_series(&self, ours: &str) -> Vec<&'a str> {
        self.series()
            .into_iter()
            .filter(|s| is_own(ours, s))
            .collect()
    }
}

/// Whether `series` belongs to the family of the workload's own series `ours`: `ours` itself or
/// `ours-<variant>` (`scalelock`, `scalelock-biased`). Ratios compare each of them with the best
/// series outside the family.
pub fn is_own(ours: &str, series: &str) -> bool {
    series
        .strip_prefix(ours)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// Groups records by (workload, case), keeping run order.
pub fn groups(records: &[Record]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for r in records {
        let key = (r.workload.as_str(), r.case.as_deref());
        match out.iter_mut().find(|g| (g.workload, g.case) == key) {
            Some(g) => g.records.push(r),
            None => out.push(Group {
                workload: key.0,
                case: key.1,
                records: vec![r],
            }),
        }
    }
    out
}

/// Fills the `ratio_to_best_other` param of every record of the workload's own series.
pub fn annotate_ratios(records: &mut [Record], workloads: &[WorkloadInfo]) {
    let mut ratios = Vec::new();
    for g in groups(records) {
        let Some(info) = workloads.iter().find(|w| w.name == g.workload) else {
            continue;
        };
        for s in g.own_series(&info.ours) {
            for t in g.threads() {
                if let Some(ratio) = g.ratio(&info.ours, s, t) {
                    let key = (g.workload.to_string(), g.case.map(str::to_string));
                    ratios.push((key, s.to_string(), t, ratio));
                }
            }
        }
    }
    for ((w, c), s, t, ratio) in ratios {
        if let Some(r) = records
            .iter_mut()
            .find(|r| r.workload == w && r.case == c && r.threads == t && r.series == s)
        {
            r.params
                .insert("ratio_to_best_other".into(), serde_json::json!(ratio));
        }
    }
}

/// The compact table printed at the end of a run.
pub fn table(run: &Run) -> String {
    let mut out = String::new();
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
        let width = series
            .iter()
            .map(|s| s.len())
            .max()
            .unwrap_or(0)
            .max(ours.len() + 14)
            .max(
                g.own_series(ours)
                    .iter()
                    .map(|s| s.len() + 14)
                    .max()
                    .unwrap_or(0),
            );
        if g.is_single_thread() {
            let t = threads[0];
            let _ = writeln!(
                out,
                "\n{title}  ({t} thread{})",
                if t == 1 { "" } else { "s" }
            );
            let _ = writeln!(
                out,
                "  {:<width$} {:>10} {:>9} {:>12}",
                "", "ns/op", "ops/s", "cpu ns/op"
            );
            for s in &series {
                if let Some(r) = g.get(s, t) {
                    let _ = writeln!(
                        out,
                        "  {s:<width$} {:>10} {:>9} {:>12}",
                        format!("{:.2}", r.ns_per_op),
                        si(r.ops_per_sec),
                        format!("{:.2}", r.cpu_ns_per_op),
                    );
                }
            }
            for own in own_or_missing(&g, ours) {
                let ratio = g
                    .ratio(ours, own, t)
                    .map_or("-".into(), |r| format!("{r:.2}"));
                let _ = writeln!(
                    out,
                    "  {:<width$} {ratio:>10}",
                    format!("{own} ÷ best other")
                );
            }
        } else {
            let _ = writeln!(out, "\n{title}  (ops/s, all threads)");
            let _ = write!(out, "  {:<width$}", "threads");
            for t in &threads {
                let _ = write!(out, " {t:>7}");
            }
            out.push('\n');
            for s in &series {
                let _ = write!(out, "  {s:<width$}");
                for &t in &threads {
                    let cell = g.get(s, t).map_or("-".into(), |r| si(r.ops_per_sec));
                    let _ = write!(out, " {cell:>7}");
                }
                out.push('\n');
            }
            for own in own_or_missing(&g, ours) {
                let _ = write!(out, "  {:<width$}", format!("{own} ÷ best other"));
                for &t in &threads {
                    let cell = g
                        .ratio(ours, own, t)
                        .map_or("-".into(), |r| format!("{r:.2}"));
                    let _ = write!(out, " {cell:>7}");
                }
                out.push('\n');
            }
            out.push_str(&super::memory::table_rows(&g, width));
        }
    }
    if !last_workload.is_empty() {
        summary(&mut out, &run.results, last_workload, run);
    }
    out
}

/// How a workload's own series fared against the best other, over all its cases and thread
/// counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Points where both ours and another series were measured.
    pub points: usize,
    /// Points where ours is within 5% of the best other (ratio ≥ 0.95).
    pub within_5pct: usize,
    /// The worst ratio.
    pub worst: f64,
    /// Geometric mean of the ratios.
    pub geomean: f64,
}

/// The [`Verdict`] of series `own` (of the `ours` family) in `workload` (`None` when no point has
/// both it and another series).
pub fn verdict(records: &[Record], workload: &str, ours: &str, own: &str) -> Option<Verdict> {
    let ratios: Vec<f64> = groups(records)
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
    Some(Verdict {
        points: ratios.len(),
        within_5pct: ratios.iter().filter(|&&r| within(r, 0.05)).count(),
        worst: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        geomean: (ratios.iter().map(|r| r.max(1e-12).ln()).sum::<f64>() / ratios.len() as f64)
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

/// One line per own series of a workload: at how many points it is within 5% of the best other.
fn summary(out: &mut String, records: &[Record], workload: &str, run: &Run) {
    let Some(info) = run.workloads.iter().find(|w| w.name == workload) else {
        return;
    };
    for own in own_series_of(records, workload, &info.ours) {
        if let Some(v) = verdict(records, workload, &info.ours, own) {
            let _ = writeln!(
                out,
                "  => {own}: within 5% of the best other (ratio ≥ 0.95) at {} of {} points; \
                 worst {:.2}, geometric mean {:.2}",
                v.within_5pct, v.points, v.worst, v.geomean
            );
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
p50_ns,p99_ns,max_ns,min_thread_ops,max_thread_ops,total_ops,elapsed_s,latency_samples";

/// One CSV field, quoted when needed.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The `--csv` text: one line per record.
pub fn csv(run: &Run) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in &run.results {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{:.2},{},{},{},{},{},{},{:.4},{}",
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
    use crate::bench::stats::{Fairness, Latency};
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
                max: 1000,
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
            cpu_utilization: 1.0,
            params: BTreeMap::new(),
        }
    }

    pub fn run(results: Vec<Record>) -> Run {
        Run {
            machine: crate::bench::machine::detect(),
            results,
            config: Config {
                duration_ms: 1,
                rounds: 2,
                warmup_ms: 1,
                threads: vec![1, 2],
                quick: true,
                spin_policy: "auto".into(),
                clock_overhead_ns: 20,
                load_average: [Some(0.5), Some(2.0)],
            },
            workloads: vec![WorkloadInfo {
                name: "w".into(),
                about: "about w".into(),
                ours: "scalelock".into(),
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
        assert_eq!(g.ratio("scalelock", "scalelock", 1), Some(2.0));
        assert_eq!(g.ratio("scalelock", "scalelock", 2), Some(0.75));
        assert_eq!(g.ratio("scalelock", "missing", 2), None);
    }

    #[test]
    fn table_shows_ratios_and_the_five_percent_summary() {
        let r = run(sample());
        let t = table(&r);
        assert!(t.contains("scalelock ÷ best other"), "{t}");
        assert!(t.contains("2.00") && t.contains("0.75"), "{t}");
        assert!(t.contains("at 1 of 2 points"), "{t}");
        assert!(t.contains("120"), "{t}");
    }

    #[test]
    fn verdict_counts_points_within_five_percent() {
        let rs = sample();
        let v = verdict(&rs, "w", "scalelock", "scalelock").unwrap();
        assert_eq!((v.points, v.within_5pct), (2, 1));
        assert_eq!(v.worst, 0.75);
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
        assert!((g.ratio("scalelock", "scalelock", 1).unwrap() - 1.25).abs() < 1e-9);
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
        assert_eq!(g.ratio("scalelock", "scalelock", 2), Some(0.75));
        assert_eq!(g.ratio("scalelock", "scalelock-biased", 2), Some(2.0));
        let t = table(&run(rs));
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

    #[test]
    fn csv_has_a_header_and_one_line_per_record_with_quoting() {
        let mut rs = sample();
        rs.push(record("w", Some("a, \"b\""), "std", 1, 1.0));
        let text = csv(&run(rs));
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 7);
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
        assert!(r["fairness"]["min_thread_ops"].is_u64());
        assert!(v["machine"]["cpus"].is_u64());
        assert!(v["machine"]["model"].is_string());
    }
}
