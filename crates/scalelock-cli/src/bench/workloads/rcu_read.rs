//! `rcu-read`: what a read of a small shared value costs, RCU against the locks a reader would
//! otherwise take.
//!
//! Every thread reads the same `[u64; 4]` in a loop, nothing in between, and checks it (the
//! value is never changed, so every read must sum to the same total). Series: `scalelock-rcu`
//! (an outermost [`Rcu::read`]), `scalelock-rcu-nested` (sixteen reads inside one enclosing
//! read, as code called from a read-side section does; one operation = one read), and the
//! lock-based reads it replaces: scalelock's and std's `RwLock` read, and scalelock's `Mutex`.
//! A read that writes a shared cache line (a lock word, a reader count) costs more CPU per read
//! as threads are added, the line bouncing between cores; an RCU read should not. It
//! reproduces a hot lookup structure (a routing table, a dentry) read by every thread.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use scalelock::rcu::Rcu;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// See the module docs.
pub struct RcuRead;

type Value = [u64; 4];
const VALUE: Value = [1, 2, 3, 4];
const SUM: u64 = 10;
/// Reads per enclosing read in `scalelock-rcu-nested`.
const NESTED: u64 = 16;

/// The series measured, in table order.
const SERIES: &[&str] = &[
    "scalelock-rcu",
    "scalelock-rcu-nested",
    "scalelock",
    "std",
    "scalelock-mutex",
];

fn sum(v: &Value) -> u64 {
    v.iter().sum()
}

/// Runs `read` (which returns the sums it saw and how many reads it did) on the trial's threads;
/// fails if any read saw a wrong value.
fn run_reads<S: Sync>(
    trial: &Trial,
    shared: &S,
    read: impl Fn(&S) -> (u64, u64) + Sync,
) -> Result<Measurement, String> {
    let wrong = AtomicU64::new(0);
    let m = measure(trial, &(shared, &wrong), |(sh, wrong), w| {
        let s = w.sample();
        let (total, reads) = read(sh);
        w.acquired(s);
        if total != SUM * reads {
            wrong.fetch_add(1, Relaxed);
        }
        reads
    });
    match wrong.load(Relaxed) {
        0 => Ok(m),
        n => Err(format!("{n} reads saw a value that was never stored")),
    }
}

fn point(series: &'static str, threads: usize) -> Point {
    Point::new(series, threads, move |t| match series {
        "scalelock-rcu" => run_reads(t, &Rcu::new(VALUE), |c| (sum(&c.read()), 1)),
        "scalelock-rcu-nested" => run_reads(t, &Rcu::new(VALUE), |c| {
            let _outer = c.read();
            let total = (0..NESTED).map(|_| sum(&c.read())).sum();
            (total, NESTED)
        }),
        "scalelock" => run_reads(t, &scalelock::RwLock::new(VALUE), |l| (sum(&l.read()), 1)),
        "std" => run_reads(t, &std::sync::RwLock::new(VALUE), |l| {
            (sum(&l.read().unwrap_or_else(|e| e.into_inner())), 1)
        }),
        "scalelock-mutex" => run_reads(t, &scalelock::Mutex::new(VALUE), |l| (sum(&l.lock()), 1)),
        other => Err(format!("rcu-read has no series `{other}`")),
    })
}

impl Workload for RcuRead {
    fn name(&self) -> &'static str {
        "rcu-read"
    }

    fn about(&self) -> &'static str {
        "Every thread reads one shared [u64; 4] in a loop, nothing in between: an outermost RCU \
         read (`scalelock-rcu`), sixteen RCU reads inside an enclosing one \
         (`scalelock-rcu-nested`, per read), and the lock reads they replace (scalelock and \
         std RwLock read, scalelock Mutex). Compare CPU time per read: a read that writes a \
         shared line pays more as threads are added; an RCU read should not. A hot lookup \
         structure read by every thread."
    }

    fn columns(&self) -> Vec<&'static str> {
        SERIES.to_vec()
    }

    fn ours(&self) -> &'static str {
        "scalelock-rcu"
    }

    fn latency_label(&self) -> &'static str {
        "read latency"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mut points = Vec::new();
        for &series in SERIES.iter().filter(|s| sel.wants(s)) {
            for &threads in &sel.threads {
                points.push(point(series, threads).sample_every(sample_every_for(10)));
            }
        }
        points
    }
}
