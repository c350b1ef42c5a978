//! `reader-tail`: one reader against writers that write in a loop.
//!
//! Seed 004 (Linux + MySQL sysbench): once threads outnumber cores, throughput and *tail
//! latency* collapse. Thread 0 reads one shared rwlock in a loop and times each whole read, from
//! asking for the lock to having released it; every other thread takes the write lock in a loop
//! with nothing in between. The reported throughput is the reader's reads per second and the
//! latency is per read; the writers' rate is in the `writes_per_sec` param, and the share of
//! a CPU the reader got (`reader_cpu_share`) and its reads per second of its own CPU time
//! (`reads_per_reader_cpu_sec`) tell the lock's cost from the scheduler's verdict: with more
//! threads than CPUs, runnable writers share the CPUs with the reader, and the reader's rate
//! is mostly its CPU share (two stable states: writers that keep blocking leave the reader most
//! of a CPU, writers that rarely block leave it 1/threads of them).
//!
//! The release counts because a lock that wakes a sleeper from its unlock can lose its CPU to
//! the thread it woke, and then waits for a CPU behind every runnable thread. With one thread
//! only the reader runs (no writers).
//!
//! Checks: the reader never sees the counter go back, and the counter ends equal to the number
//! of writes.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, Measurement, Trial};
use crate::bench::locks::{self, BenchRwLock, RwBench};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// See the module docs.
pub struct ReaderTail;

impl Workload for ReaderTail {
    fn name(&self) -> &'static str {
        "reader-tail"
    }

    fn about(&self) -> &'static str {
        "Thread 0 reads one rwlock in a loop, timing each whole read (lock to unlock); every \
         other thread writes it in a loop, nothing in between. Throughput: the reader's reads \
         per second; latency: per read; params: the writers' rate (`writes_per_sec`), the \
         reader's share of a CPU (`reader_cpu_share`) and its reads per second of its own CPU \
         time (`reads_per_reader_cpu_sec`). It reproduces the collapse of tail latency \
         once threads outnumber cores, worst for a thread that loses its CPU to a thread its \
         unlock woke."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::RWLOCKS.to_vec()
    }

    fn throughput_label(&self) -> &'static str {
        "reads/s of the one reader (writers not counted)"
    }

    fn latency_label(&self) -> &'static str {
        "whole-read latency"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        // Every read is timed: the reader does few of them when the lock serves it badly.
        super::rwlock_points(sel, locks::RWLOCKS, TailBench, 1)
    }
}

struct TailBench;

/// The counter has a cache line of its own, as the other workloads' data does: whether a
/// lock's word happens to share a line with the data it protects changes this workload's
/// result by 10-100x (for every lock, std's included), and the locks differ in size, so each
/// would otherwise be measured with a different layout.
struct Shared<L> {
    lock: L,
    /// Incremented by each write.
    counter: CachePadded<AtomicU64>,
    /// The reader's own line: the last value it saw, and how many reads saw the counter go back
    /// (only the reader writes either).
    reader: CachePadded<ReaderLine>,
}

#[derive(Default)]
struct ReaderLine {
    last_read: AtomicU64,
    backwards: AtomicU64,
}

impl RwBench for TailBench {
    fn run<L: BenchRwLock>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = Shared {
            lock: L::new(),
            counter: CachePadded::new(AtomicU64::new(0)),
            reader: CachePadded::default(),
        };
        let mut m = measure(trial, &shared, |sh, w| {
            if w.index == 0 {
                let s = w.sample();
                let v = sh.lock.read(|| sh.counter.load(Relaxed));
                w.acquired(s); // after the unlock: the whole read
                if v < sh.reader.last_read.load(Relaxed) {
                    sh.reader.backwards.fetch_add(1, Relaxed);
                }
                sh.reader.last_read.store(v, Relaxed);
            } else {
                w.tally += 1;
                sh.lock.write(|| {
                    sh.counter.store(sh.counter.load(Relaxed) + 1, Relaxed);
                });
            }
            // Writers count too, so that the harness sees every thread start; the reader's
            // count alone is reported (below).
            1
        });
        let backwards = shared.reader.backwards.load(Relaxed);
        if backwards != 0 {
            return Err(format!("{backwards} reads saw the counter go back"));
        }
        let counter = shared.counter.load(Relaxed);
        if counter != m.tally {
            return Err(format!(
                "lost updates: {} writes but the counter is {counter}",
                m.tally
            ));
        }
        let writes: u64 = m.thread_ops.iter().skip(1).sum();
        let secs = m.elapsed.as_secs_f64();
        let writes_per_sec = if secs > 0.0 {
            writes as f64 / secs
        } else {
            0.0
        };
        m.extra
            .push(("writes_per_sec", serde_json::json!(writes_per_sec)));
        // How much CPU the reader got, and what it did with it: with more threads than CPUs
        // the scheduler shares the CPUs among the runnable threads, so a lock whose writers
        // rarely block leaves the reader its fair share (1/threads of the CPUs) and no more,
        // however cheap its reads are.
        let reader_cpu = m.thread_cpu.first().copied().unwrap_or_default();
        if secs > 0.0 && !reader_cpu.is_zero() {
            let reads = m.thread_ops.first().copied().unwrap_or(0) as f64;
            m.extra.push((
                "reader_cpu_share",
                serde_json::json!(reader_cpu.as_secs_f64() / secs),
            ));
            m.extra.push((
                "reads_per_reader_cpu_sec",
                serde_json::json!(reads / reader_cpu.as_secs_f64()),
            ));
        }
        m.thread_ops.truncate(1);
        Ok(m)
    }
}
