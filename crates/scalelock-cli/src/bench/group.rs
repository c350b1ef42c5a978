//! Records grouped by (workload, case), and how a group compares our series with the best
//! other lock: what the table, the markdown, the report and the memory rows all read.

use super::locks;
use super::stats::{Latency, Ratio, Record, Spread};

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

    /// The best series at `threads` that is not of the `ours` family (see [`is_own`]) and not
    /// the bare test-and-set floor (a reference, not an alternative), by median speed (see
    /// [`Group::ratio`]).
    pub fn best_other(&self, ours: &str, threads: usize) -> Option<&'a Record> {
        let single = self.is_single_thread();
        self.others(ours, threads)
            .max_by(|a, b| speed(single, a).total_cmp(&speed(single, b)))
    }

    /// The records at `threads` that a series of the `ours` family is compared with: not of
    /// the family (see [`is_own`]) and not the bare test-and-set floor.
    fn others<'b>(
        &'b self,
        ours: &'b str,
        threads: usize,
    ) -> impl Iterator<Item = &'a Record> + 'b {
        self.records
            .iter()
            .copied()
            .filter(move |r| r.threads == threads && !is_own(ours, &r.series))
            .filter(|r| r.lock != locks::FLOOR)
    }

    /// Speed of `series` over the best other at `threads` ([`Group::best_other`]): the ratio
    /// of their medians, with the spread of the ratios of their paired runs (run `k` of both
    /// ran in the same round).
    ///
    /// In a group measured on one thread only (`uncontended`), speed is operations per CPU
    /// second (`1 / cpu_ns_per_op`): with one running thread that is the lock's cost, while
    /// wall time also counts whatever preemption the thread suffered.
    pub fn ratio(&self, ours: &str, series: &str, threads: usize) -> Option<Ratio> {
        let single = self.is_single_thread();
        let own = self.get(series, threads)?;
        let best = self.best_other(ours, threads)?;
        let runs = |r: &Record| -> Vec<f64> {
            r.runs
                .iter()
                .map(|k| run_speed(single, k.ops_per_sec, k.cpu_ns_per_op))
                .collect()
        };
        Ratio::new(
            speed(single, own),
            speed(single, best),
            runs(own).into_iter().zip(runs(best)),
        )
    }

    /// The `tail` figure of `series` over the lowest of the other locks' at `threads` (lower is
    /// better): the ratio of the medians of the runs' own figures, with the spread of the
    /// ratios of their paired runs (run `k` of both ran in the same round, so a phase of the
    /// machine that stretches every lock's tail cancels out). The lowest other is chosen by that
    /// median among the records that took latency samples. `None` where `series` took none, or
    /// no other did.
    pub fn tail_ratio(
        &self,
        ours: &str,
        series: &str,
        threads: usize,
        tail: Tail,
    ) -> Option<(Ratio, &'a Record)> {
        let median = |r: &Record| tail_spread(r, tail).median;
        let sampled = |r: &&Record| r.latency_samples > 0 && median(r) > 0.0;
        let own = self.get(series, threads).filter(sampled)?;
        let lowest = self
            .others(ours, threads)
            .filter(sampled)
            .min_by(|a, b| median(a).total_cmp(&median(b)))?;
        let ratio = Ratio::new(
            median(own),
            median(lowest),
            run_tails(own, tail)
                .into_iter()
                .zip(run_tails(lowest, tail)),
        )?;
        Some((ratio, lowest))
    }

    /// Speed of `series` over the best other at `threads`, counting only the runs on `lines`
    /// (see [`Lines`]; `split`: from [`line_split_ns`]): the median speed of those runs of each
    /// series, the best other chosen among them. `None` where `series`, or every other series,
    /// has no such run, and on one thread (a lone thread moves no line between CPUs). A VM's
    /// cost of moving a cache line between its CPUs changes with where the host placed them;
    /// this says how a lock fares when transfers are cheap and when they are dear, where the
    /// ratio over all runs mixes the two.
    pub fn ratio_on(
        &self,
        ours: &str,
        series: &str,
        threads: usize,
        lines: Lines,
        split: f64,
    ) -> Option<f64> {
        if threads <= 1 {
            return None;
        }
        let median_on = |r: &Record| -> Option<f64> {
            let speeds: Vec<f64> = r
                .runs
                .iter()
                .filter(|k| {
                    k.line_round_trip_ns
                        .is_some_and(|ns| lines.keeps(ns, split))
                })
                .map(|k| run_speed(false, k.ops_per_sec, k.cpu_ns_per_op))
                .collect();
            (!speeds.is_empty()).then(|| Spread::of(&speeds).median)
        };
        let own = median_on(self.get(series, threads)?)?;
        let best = self
            .others(ours, threads)
            .filter_map(median_on)
            .max_by(f64::total_cmp)?;
        (best > 0.0).then(|| own / best)
    }

    /// The rows of [`ratio_on`](Self::ratio_on) for `series` across `threads`: per half of
    /// `split`, one cell per thread count (`0.95`, or `-` where that half has no ratio). Empty
    /// without a split, or where no thread count has a ratio on both halves.
    pub fn rows_on_lines(
        &self,
        ours: &str,
        series: &str,
        threads: &[usize],
        split: Option<f64>,
    ) -> Vec<(Lines, Vec<String>)> {
        let Some(ns) = split else { return Vec::new() };
        let on: Vec<[Option<f64>; 2]> = threads
            .iter()
            .map(|&t| Lines::BOTH.map(|lines| self.ratio_on(ours, series, t, lines, ns)))
            .collect();
        if !on.iter().any(|c| c.iter().all(Option::is_some)) {
            return Vec::new();
        }
        Lines::BOTH
            .into_iter()
            .enumerate()
            .map(|(i, lines)| {
                let cells = on
                    .iter()
                    .map(|c| c[i].map_or("-".into(), |v| format!("{v:.2}")))
                    .collect();
                (lines, cells)
            })
            .collect()
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

/// A figure of a run's tail, lower being better, that [`Group::tail_ratio`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// The largest sampled acquisition latency (`latency_ns.max`).
    Max,
    /// The longest stall (`latency_ns.stall`, see `harness::stall`).
    Stall,
}

impl Tail {
    /// This figure of `l`, in ns.
    pub fn of(self, l: &Latency) -> u64 {
        match self {
            Tail::Max => l.max,
            Tail::Stall => l.stall,
        }
    }
}

/// Median, smallest and largest of [`run_tails`]: the `tail` figure a cell of `r` shows.
pub fn tail_spread(r: &Record, tail: Tail) -> Spread {
    Spread::of(&run_tails(r, tail))
}

/// The `tail` figure of each run of `r` in ns (of `r` itself where it kept no runs): what its
/// cells and ratios take the median and spread of.
pub fn run_tails(r: &Record, tail: Tail) -> Vec<f64> {
    if r.runs.is_empty() {
        vec![tail.of(&r.latency_ns) as f64]
    } else {
        r.runs
            .iter()
            .map(|k| tail.of(&k.latency_ns) as f64)
            .collect()
    }
}

/// Operations per second, or per CPU second in a single-thread group (see [`Group::ratio`]);
/// zero when no operation completed (`cpu_ns_per_op` is then the window's CPU time).
pub fn run_speed(single: bool, ops_per_sec: f64, cpu_ns_per_op: f64) -> f64 {
    if ops_per_sec <= 0.0 {
        0.0
    } else if single {
        1e9 / cpu_ns_per_op.max(1e-3)
    } else {
        ops_per_sec
    }
}

/// The median speed of a record.
fn speed(single: bool, r: &Record) -> f64 {
    run_speed(single, r.ops_per_sec, r.cpu_ns_per_op)
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

/// Which of a cell's runs [`Group::ratio_on`] counts: those whose cache-line round trip,
/// measured just before the run (`runs[].line_round_trip_ns`), was at most the split (`Cheap`)
/// or above it (`Dear`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// Runs whose round trip was at most the split.
    Cheap,
    /// Runs whose round trip was above the split.
    Dear,
}

impl Lines {
    /// Both halves, cheap first.
    pub const BOTH: [Lines; 2] = [Lines::Cheap, Lines::Dear];

    /// Whether a run with a round trip of `ns` falls in this half of `split`.
    pub fn keeps(self, ns: f64, split: f64) -> bool {
        match self {
            Lines::Cheap => ns <= split,
            Lines::Dear => ns > split,
        }
    }

    /// The row label in the table.
    pub fn label(self) -> &'static str {
        match self {
            Lines::Cheap => "cheap lines",
            Lines::Dear => "dear lines",
        }
    }

    /// The record's parameter that holds [`Group::ratio_on`] for this half.
    pub fn param(self) -> &'static str {
        match self {
            Lines::Cheap => "ratio_cheap_lines",
            Lines::Dear => "ratio_dear_lines",
        }
    }
}

/// The median of the cache-line round trips measured before the runs of `records`: where
/// [`Lines`] splits them. `None` unless at least two runs were measured and their round trips
/// differ (nothing to split).
pub fn line_split_ns(records: &[Record]) -> Option<f64> {
    let ns: Vec<f64> = records
        .iter()
        .flat_map(|r| r.runs.iter().filter_map(|k| k.line_round_trip_ns))
        .collect();
    let spread = Spread::of(&ns);
    (ns.len() >= 2 && spread.min < spread.max).then_some(spread.median)
}
