//! Turning a [`Measurement`] into the numbers we report, and comparing locks.
//!
//! [`Record`] is one row of the JSON/CSV output. Its first fields are fixed by DESIGN.md
//! (`workload`, `lock`, `threads`, `ops_per_sec`, `cpu_ns_per_op`, `latency_ns{p50,p99,max}`,
//! `fairness{min_thread_ops,max_thread_ops}`); the rest are extras.

use super::harness::Measurement;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Sampled acquisition latency, nanoseconds (0 when nothing was sampled).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest sample.
    pub max: u64,
}

/// Per-thread fairness: the fewest and most operations any one thread completed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    /// Process CPU time over the CPU time the threads could have used
    /// (`elapsed × min(threads, usable CPUs)`): near 1 for spinning, low for sleeping locks, and
    /// low for a single thread when other work competed for the CPUs.
    pub cpu_utilization: f64,
    /// Workload-specific parameters (hold time, spin policy, nesting strategy...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, serde_json::Value>,
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
        latency: latency(&m.latency),
        fairness: fairness(&m.thread_ops),
        total_ops: total,
        samples: m.latency.len(),
    }
}

/// p50 / p99 / max of a latency histogram (zeros when empty).
pub fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        p50: h.value_at_quantile(0.50),
        p99: h.value_at_quantile(0.99),
        max: h.max(),
    }
}

/// Fewest and most operations per thread (zeros for no threads).
pub fn fairness(thread_ops: &[u64]) -> Fairness {
    Fairness {
        min_thread_ops: thread_ops.iter().copied().min().unwrap_or(0),
        max_thread_ops: thread_ops.iter().copied().max().unwrap_or(0),
    }
}

/// `ours / best(others)`, or `None` when either side is missing or the best other is zero.
pub fn ratio_to_best(ours: Option<f64>, others: impl IntoIterator<Item = f64>) -> Option<f64> {
    let best = others
        .into_iter()
        .fold(None, |b: Option<f64>, x| Some(b.map_or(x, |b| b.max(x))))?;
    let ours = ours?;
    (best > 0.0).then(|| ours / best)
}

/// True when `ratio` is within `tolerance` (e.g. 0.05 for 5%) of the best, i.e. `ratio ≥ 1 − tol`.
pub fn within(ratio: f64, tolerance: f64) -> bool {
    ratio >= 1.0 - tolerance
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
            latency: h,
            extra: Vec::new(),
        }
    }

    #[test]
    fn percentiles_of_a_uniform_sample() {
        let values: Vec<u64> = (1..=1000).collect();
        let l = latency(&measurement(vec![1], 1, 1, &values).latency);
        // HDR histograms with 3 significant digits are exact to 0.1%.
        assert!((499..=501).contains(&l.p50), "{l:?}");
        assert!((989..=991).contains(&l.p99), "{l:?}");
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
    fn ratio_is_against_the_best_other() {
        assert_eq!(ratio_to_best(Some(90.0), [50.0, 100.0, 80.0]), Some(0.9));
        assert_eq!(ratio_to_best(Some(150.0), [50.0, 100.0]), Some(1.5));
        assert_eq!(ratio_to_best(None, [50.0]), None);
        assert_eq!(ratio_to_best(Some(1.0), []), None);
        assert_eq!(ratio_to_best(Some(1.0), [0.0]), None);
    }

    #[test]
    fn within_five_percent() {
        assert!(within(0.95, 0.05));
        assert!(within(1.2, 0.05));
        assert!(!within(0.94, 0.05));
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
