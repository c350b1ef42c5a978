//! Turning a [`Measurement`] into the numbers we report, and comparing locks.
//!
//! [`Record`] is one row of the JSON/CSV output. Its first fields are fixed by DESIGN.md
//! (`workload`, `lock`, `threads`, `ops_per_sec`, `cpu_ns_per_op`, `latency_ns{p50,p99,max}`,
//! `fairness{min_thread_ops,max_thread_ops}`); the rest are extras. A point measured several
//! times (`--repeat`) keeps every run in `runs`; its `ops_per_sec` is their median and
//! `ops_per_sec_spread` holds median, min and max.
//!
//! [`Ratio`] is a comparison of two series measured in the same rounds: the ratio of their
//! medians and the range of the per-round ratios, from which [`Ratio::undecided`] and
//! [`Ratio::standing`] follow.

use super::harness::{Measurement, Switches};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Sampled acquisition latency, nanoseconds (0 when nothing was sampled).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile (absent from files written before it was added: then 0).
    #[serde(default)]
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
    /// The longest stall: the longest stretch of the measured window in which some thread made
    /// no sampled acquisition (see `harness::stall`), which, unlike `max`, counts a wait that
    /// never ended in the window and one that no sample happened to time; 0 where the workload
    /// samples no acquisitions (and in files written before it was added).
    #[serde(default)]
    pub stall: u64,
}

/// Per-thread fairness: the fewest and most operations any one thread completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Operations of the least served thread.
    pub min_thread_ops: u64,
    /// Operations of the best served thread.
    pub max_thread_ops: u64,
}

/// One measured point: a (workload, case, lock, series, threads) combination.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// Workload name.
    pub workload: String,
    /// The thing compared: a lock name (or an allocator / map variant, for workloads that compare
    /// those).
    pub lock: String,
    /// Worker threads.
    pub threads: usize,
    /// Operations per second, all threads together.
    pub ops_per_sec: f64,
    /// Process CPU time (user + system) per operation, ns. When no operation completed in the
    /// window (a spinlock collapsing under oversubscription), the whole window's CPU time: a
    /// lower bound.
    pub cpu_ns_per_op: f64,
    /// Sampled acquisition latency.
    pub latency_ns: Latency,
    /// Per-thread operation counts.
    pub fairness: Fairness,
    /// Sub-scenario of the workload (e.g. `hold 1 µs`, `rwlock read`); plotted separately.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The line this point belongs to in tables and plots (usually the lock name; the spin
    /// policy in `adaptive-grid`).
    pub series: String,
    /// Wall-clock nanoseconds per operation on one thread (`threads / ops_per_sec`); like
    /// `cpu_ns_per_op`, a lower bound when no operation completed.
    pub ns_per_op: f64,
    /// Operations completed in the measured window.
    pub total_ops: u64,
    /// Length of the measured window, seconds.
    pub elapsed_s: f64,
    /// Number of latency samples behind `latency_ns`.
    pub latency_samples: u64,
    /// The worker threads' context switches per operation, median of the runs (absent where
    /// not measured: a workload whose operations run in another process, as the MariaDB one).
    /// What a lock costs the scheduler: a sleeper's wait and wake-up, a yield that ran
    /// another thread, a preemption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_switches_per_op: Option<f64>,
    /// Process CPU time over the CPU time the threads could have used
    /// (`elapsed × min(threads, usable CPUs)`): near 1 for spinning, low for sleeping locks, and
    /// low for a single thread when other work competed for the CPUs.
    pub cpu_utilization: f64,
    /// Workload-specific parameters (hold time, spin policy, nesting strategy...), of the
    /// median run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Median, min and max of the runs' `ops_per_sec`.
    pub ops_per_sec_spread: Spread,
    /// Every run of this point, in the order they ran (run `k` of every point of a cell ran in
    /// the same round, so runs with the same index are paired).
    pub runs: Vec<RunStats>,
}

/// One run of a point (one of `--repeat N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Operations per second, all threads.
    pub ops_per_sec: f64,
    /// CPU ns per operation.
    pub cpu_ns_per_op: f64,
    /// Latency percentiles of this run's samples.
    pub latency_ns: Latency,
    /// The worker threads' context switches in the measured window, by kind (absent where not
    /// measured, and in files written before they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches: Option<Switches>,
    /// `context_switches`, both kinds, per operation (absent with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches_per_op: Option<f64>,
    /// Operations in the measured window.
    pub total_ops: u64,
    /// Length of the measured window, seconds.
    pub elapsed_s: f64,
    /// Wall-clock time of the whole run, seconds: setup, thread start, warm-up, window, stop
    /// and join (what the bench's time estimate models).
    #[serde(default)]
    pub wall_s: f64,
    /// A cache line's round trip between two threads just before the run, ns (see
    /// `harness::line_round_trip_ns`): where a VM's virtual CPUs were placed for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_round_trip_ns: Option<f64>,
    /// The process that measured this run, when it was not the bench's own (`--isolate`, or a
    /// workload whose points run in child processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
}

impl RunStats {
    /// The run's figures from a summary (`wall_s` is filled in by the driver).
    pub fn of(s: &Summary, elapsed_s: f64) -> RunStats {
        RunStats {
            ops_per_sec: s.ops_per_sec,
            cpu_ns_per_op: s.cpu_ns_per_op,
            latency_ns: s.latency.clone(),
            context_switches: s.switches,
            context_switches_per_op: s.switches_per_op,
            total_ops: s.total_ops,
            elapsed_s,
            wall_s: 0.0,
            line_round_trip_ns: None,
            process: None,
        }
    }
}

/// Median, smallest and largest of a set of measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `xs` (all zero when empty; NaNs are ignored).
    pub fn of(xs: &[f64]) -> Spread {
        let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// The index of the run whose value is the median (the lower middle for an even count).
pub fn median_index(xs: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    idx.get(xs.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

/// How far a ratio may stray from 1.0, or its spread from its median, and still count as
/// "within" (5%).
pub const TOLERANCE: f64 = 0.05;

/// Where a ratio stands, by its median.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Above 1 + [`TOLERANCE`].
    Ahead,
    /// Within [`TOLERANCE`] of 1.
    Within,
    /// Below 1 − [`TOLERANCE`].
    Behind,
}

impl Standing {
    /// `ahead`, `within 5%`, `behind`.
    pub fn word(self) -> &'static str {
        match self {
            Standing::Ahead => "ahead",
            Standing::Within => "within 5%",
            Standing::Behind => "behind",
        }
    }
}

/// A ratio between two series (ours over the best other, or run B over run A): the ratio of
/// their medians, and the range of the ratios of paired runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    /// Ratio of the medians.
    pub median: f64,
    /// Smallest paired ratio (never above `median`).
    pub min: f64,
    /// Largest paired ratio (never below `median`).
    pub max: f64,
    /// How many paired ratios there were.
    pub pairs: usize,
}

impl Ratio {
    /// The ratio `num / den` of medians, with the spread of the ratios of `pairs`
    /// (`(num_k, den_k)`); pairs with a zero denominator are left out. `None` when `den` is
    /// not positive. The spread is widened to include the median ratio, so the range shown
    /// always holds the value shown.
    pub fn new(num: f64, den: f64, pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<Ratio> {
        if den <= 0.0 || !den.is_finite() || !num.is_finite() {
            return None;
        }
        let median = num / den;
        let ks: Vec<f64> = pairs
            .into_iter()
            .filter(|(n, d)| *d > 0.0 && d.is_finite() && n.is_finite())
            .map(|(n, d)| n / d)
            .collect();
        Some(Ratio {
            median,
            min: ks.iter().copied().fold(median, f64::min),
            max: ks.iter().copied().fold(median, f64::max),
            pairs: ks.len(),
        })
    }

    /// Whether the runs leave the comparison open: the spread crosses 1.0, or it reaches more
    /// than ±[`TOLERANCE`] around the median.
    pub fn undecided(&self) -> bool {
        let crosses = self.min < 1.0 && self.max > 1.0;
        let wide = (self.max - self.min) / 2.0 > TOLERANCE * self.median;
        crosses || wide
    }

    /// Ahead, within 5% or behind, by the median.
    pub fn standing(&self) -> Standing {
        if self.median > 1.0 + TOLERANCE {
            Standing::Ahead
        } else if self.median >= 1.0 - TOLERANCE {
            Standing::Within
        } else {
            Standing::Behind
        }
    }

    /// `1.23` with a `?` when undecided.
    pub fn cell(&self) -> String {
        format!(
            "{:.2}{}",
            self.median,
            if self.undecided() { "?" } else { "" }
        )
    }

    /// `1.10–1.31`.
    pub fn range(&self) -> String {
        format!("{:.2}–{:.2}", self.min, self.max)
    }
}

/// The summary numbers of a measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Operations per second, all threads.
    pub ops_per_sec: f64,
    /// CPU ns per operation (the window's CPU time if no operation completed: a lower bound).
    pub cpu_ns_per_op: f64,
    /// Wall ns per operation per thread (same lower bound).
    pub ns_per_op: f64,
    /// Latency percentiles.
    pub latency: Latency,
    /// Fairness.
    pub fairness: Fairness,
    /// Total operations in the window.
    pub total_ops: u64,
    /// Latency samples.
    pub samples: u64,
    /// The worker threads' context switches (`None`: not measured).
    pub switches: Option<Switches>,
    /// Those switches per operation (per the window, when no operation completed: a lower
    /// bound, as `cpu_ns_per_op`).
    pub switches_per_op: Option<f64>,
}

/// Summarises a measurement.
pub fn summarize(m: &Measurement) -> Summary {
    let total: u64 = m.thread_ops.iter().sum();
    let secs = m.elapsed.as_secs_f64();
    let ops_per_sec = if secs > 0.0 { total as f64 / secs } else { 0.0 };
    let per_op = |ns: f64| ns / total.max(1) as f64;
    Summary {
        ops_per_sec,
        cpu_ns_per_op: per_op(m.cpu.as_nanos() as f64),
        ns_per_op: per_op(m.elapsed.as_nanos() as f64 * m.thread_ops.len() as f64),
        latency: Latency {
            stall: m
                .thread_stall
                .iter()
                .max()
                .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64),
            ..latency(&m.latency)
        },
        fairness: fairness(&m.thread_ops),
        total_ops: total,
        samples: m.latency.len(),
        switches: m.switches,
        switches_per_op: m.switches.map(|s| per_op(s.total() as f64)),
    }
}

/// p50 / p99 / p99.9 / max of a latency histogram (zeros when empty; no stall).
pub fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        p50: h.value_at_quantile(0.50),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
        stall: 0,
    }
}

/// Fewest and most operations per thread (zeros for no threads).
pub fn fairness(thread_ops: &[u64]) -> Fairness {
    Fairness {
        min_thread_ops: thread_ops.iter().copied().min().unwrap_or(0),
        max_thread_ops: thread_ops.iter().copied().max().unwrap_or(0),
    }
}

/// Formats a rate with an SI suffix: `12.3M`, `950k`, `87.0`.
pub fn si(x: f64) -> String {
    let (v, unit) = if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

/// Formats nanoseconds with a readable unit and three significant digits: `850 ns`, `12.5 µs`,
/// `3.20 ms`, `1.50 s`.
pub fn duration_ns(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    if v == 0.0 || v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::harness::new_histogram;
    use std::time::Duration;

    fn measurement(thread_ops: Vec<u64>, elapsed_ms: u64, cpu_ms: u64, lat: &[u64]) -> Measurement {
        let mut h = new_histogram();
        for &v in lat {
            h.record(v).unwrap();
        }
        Measurement {
            ops_all: thread_ops.iter().sum(),
            thread_ops,
            tally: 0,
            elapsed: Duration::from_millis(elapsed_ms),
            cpu: Duration::from_millis(cpu_ms),
            thread_cpu: Vec::new(),
            switches: Some(Switches {
                voluntary: 100,
                involuntary: 150,
            }),
            latency: h,
            thread_stall: Vec::new(),
            extra: Vec::new(),
            process: None,
        }
    }

    #[test]
    fn percentiles_of_a_uniform_sample() {
        let values: Vec<u64> = (1..=1000).collect();
        let l = latency(&measurement(vec![1], 1, 1, &values).latency);
        // HDR histograms with 3 significant digits are exact to 0.1%.
        assert!((499..=501).contains(&l.p50), "{l:?}");
        assert!((989..=991).contains(&l.p99), "{l:?}");
        assert!((998..=1000).contains(&l.p999), "{l:?}");
        assert!((1000..=1001).contains(&l.max), "{l:?}");
    }

    #[test]
    fn percentiles_see_the_tail() {
        let mut values = vec![100u64; 980];
        values.extend([1_000_000u64; 20]);
        let l = latency(&measurement(vec![1], 1, 1, &values).latency);
        assert!((100..=101).contains(&l.p50));
        assert!(l.p99 >= 999_000, "{l:?}");
        assert!(l.max >= 1_000_000);
    }

    #[test]
    fn empty_latency_is_zero() {
        assert_eq!(latency(&new_histogram()), Latency::default());
    }

    #[test]
    fn throughput_and_cpu_per_op() {
        let s = summarize(&measurement(vec![300, 700], 500, 1000, &[]));
        assert_eq!(s.total_ops, 1000);
        assert!((s.ops_per_sec - 2000.0).abs() < 1e-6);
        assert!((s.cpu_ns_per_op - 1_000_000.0).abs() < 1e-6);
        // Two threads, 0.5 s, 1000 ops: each op took 1 ms of a thread's time.
        assert!((s.ns_per_op - 1_000_000.0).abs() < 1e-6);
        // 250 switches over 1000 ops.
        assert_eq!(s.switches_per_op, Some(0.25));
        let run = RunStats::of(&s, 0.5);
        assert_eq!(run.context_switches.map(|c| c.total()), Some(250));
        assert_eq!(run.context_switches_per_op, Some(0.25));
    }

    #[test]
    fn switches_not_measured_stay_absent() {
        let mut m = measurement(vec![10], 100, 100, &[]);
        m.switches = None;
        let s = summarize(&m);
        assert_eq!((s.switches, s.switches_per_op), (None, None));
        let run = serde_json::to_value(RunStats::of(&s, 0.1)).unwrap();
        assert!(run.get("context_switches").is_none(), "{run}");
        assert!(run.get("context_switches_per_op").is_none(), "{run}");
    }

    #[test]
    fn no_operations_report_the_window_as_a_lower_bound() {
        let s = summarize(&measurement(vec![0, 0], 100, 150, &[]));
        assert_eq!(s.ops_per_sec, 0.0);
        assert_eq!(s.cpu_ns_per_op, 150e6);
        assert_eq!(s.ns_per_op, 200e6);
    }

    #[test]
    fn fairness_is_min_and_max_thread_ops() {
        assert_eq!(
            fairness(&[5, 9, 1, 7]),
            Fairness {
                min_thread_ops: 1,
                max_thread_ops: 9
            }
        );
        assert_eq!(fairness(&[]), Fairness::default());
    }

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Spread::of(&[]), Spread::default());
        assert_eq!(median_index(&[5.0, 1.0, 3.0]), 2);
        assert_eq!(median_index(&[4.0, 1.0, 2.0, 3.0]), 2);
        assert_eq!(median_index(&[]), 0);
    }

    #[test]
    fn ratio_of_medians_with_the_spread_of_pairs() {
        let r = Ratio::new(2.0, 1.0, [(1.9, 1.0), (2.2, 1.0), (2.0, 0.0)]).unwrap();
        assert_eq!(r.median, 2.0);
        assert!((r.min - 1.9).abs() < 1e-12 && (r.max - 2.2).abs() < 1e-12);
        assert_eq!(r.pairs, 2);
        assert_eq!(r.standing(), Standing::Ahead);
        // ±7.5%: too wide to call.
        assert!(r.undecided());
        assert_eq!(r.cell(), "2.00?");
        assert_eq!(r.range(), "1.90–2.20");
        assert!(Ratio::new(1.0, 0.0, []).is_none());
    }

    #[test]
    fn a_spread_across_one_is_undecided_a_tight_one_is_not() {
        let crossing = Ratio::new(1.01, 1.0, [(0.99, 1.0), (1.02, 1.0)]).unwrap();
        assert!(crossing.undecided());
        assert_eq!(crossing.standing(), Standing::Within);
        let tight = Ratio::new(0.5, 1.0, [(0.49, 1.0), (0.52, 1.0)]).unwrap();
        assert!(!tight.undecided());
        assert_eq!(tight.standing(), Standing::Behind);
        assert_eq!(tight.cell(), "0.50");
        let single = Ratio::new(1.2, 1.0, []).unwrap();
        assert!(!single.undecided());
        assert_eq!((single.min, single.max), (1.2, 1.2));
    }

    #[test]
    fn standing_by_the_median() {
        let at = |m| Ratio::new(m, 1.0, []).unwrap().standing();
        assert_eq!(at(1.06), Standing::Ahead);
        assert_eq!(at(1.05), Standing::Within);
        assert_eq!(at(0.95), Standing::Within);
        assert_eq!(at(0.94), Standing::Behind);
        assert_eq!(Standing::Within.word(), "within 5%");
    }

    #[test]
    fn human_units() {
        assert_eq!(si(12_345_678.0), "12.3M");
        assert_eq!(si(950_000.0), "950k");
        assert_eq!(si(87.0), "87.0");
        assert_eq!(duration_ns(850.0), "850 ns");
        assert_eq!(duration_ns(12_500.0), "12.5 µs");
        assert_eq!(duration_ns(3_200_000.0), "3.20 ms");
        assert_eq!(duration_ns(4.3), "4.30 ns");
        assert_eq!(duration_ns(0.0), "0 ns");
        assert_eq!(duration_ns(100e6), "100 ms");
    }
}
