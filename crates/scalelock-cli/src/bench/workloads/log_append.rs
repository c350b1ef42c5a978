//! `log-append`: reserve an LSN range under a short lock, then copy a record into a shared log
//! buffer.
//!
//! Seed 001 (MariaDB MDEV, `mtr_t::do_write` / `log_sys.latch`): write-intensive workloads on
//! many cores spent their time in the kernel's spinlock slow path around the redo log; a
//! user-space spinlock patch helped one machine and cost 35% TPS on another. Each operation
//! builds a "mini-transaction" (~200 ns private work), takes the log mutex just long enough to
//! advance the LSN by the record's length (64-512 bytes), releases it, then copies its record
//! into the 1 MiB ring buffer at its reserved offset.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use crate::bench::locks::{self, BenchMutex, MutexBench};
use crate::bench::work::Work;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// See the module docs.
pub struct LogAppend;

/// Ring buffer size in 8-byte words (1 MiB).
const LOG_WORDS: usize = 1 << 17;
/// Longest record in words (512 bytes).
const MAX_RECORD_WORDS: u64 = 64;
/// Shortest record in words (64 bytes).
const MIN_RECORD_WORDS: u64 = 8;
/// Private work building each record.
const THINK_NS: u64 = 200;

#[derive(Clone, Copy)]
struct Append {
    think: Work,
}

struct Log<M> {
    /// In cache lines of its own, whichever lock it is: glibc's mutex lives in a heap cell of
    /// its own (it must not move once initialised), so a lock inline beside `buf` and `record`,
    /// which every thread reads outside the lock, would pay for sharing its line where the
    /// pthread columns do not.
    lock: CachePadded<M>,
    /// Next free log sequence number, in words; only changed under `lock`.
    lsn: CachePadded<AtomicU64>,
    buf: Box<[AtomicU64]>,
    record: [u64; MAX_RECORD_WORDS as usize],
}

impl MutexBench for Append {
    fn run<M: BenchMutex>(&self, trial: &Trial) -> Result<Measurement, String> {
        let log = Log {
            lock: CachePadded::new(M::new()),
            lsn: CachePadded::new(AtomicU64::new(0)),
            buf: (0..LOG_WORDS).map(|_| AtomicU64::new(0)).collect(),
            record: std::array::from_fn(|i| 0x5EED_0000 + i as u64),
        };
        let think = self.think;
        let m = measure(trial, &log, |log, w| {
            let len = MIN_RECORD_WORDS + w.rand() % (MAX_RECORD_WORDS - MIN_RECORD_WORDS + 1);
            think.run(len);
            let s = w.sample();
            let start = log.lock.locked(|| {
                w.acquired(s);
                let start = log.lsn.load(Relaxed);
                log.lsn.store(start + len, Relaxed);
                start
            });
            let tag = start ^ (w.index as u64) << 48;
            for (i, word) in log.record[..len as usize].iter().enumerate() {
                let at = (start as usize + i) & (LOG_WORDS - 1);
                log.buf[at].store(word ^ tag, Relaxed);
            }
            w.tally += len;
            1
        });
        let lsn = log.lsn.load(Relaxed);
        if lsn != m.tally {
            return Err(format!(
                "lost reservations: threads reserved {} words but the LSN is {lsn}",
                m.tally
            ));
        }
        Ok(m)
    }
}

impl Workload for LogAppend {
    fn name(&self) -> &'static str {
        "log-append"
    }

    fn about(&self) -> &'static str {
        "Redo-log append: ~200 ns building a record, a short mutex-protected LSN reservation \
         (64-512 bytes), then a copy into a shared 1 MiB ring buffer outside the lock. It \
         reproduces MariaDB's mtr_t::do_write on log_sys.latch, where a user-space spinlock won on \
         one machine and lost a third of the throughput on another."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::MUTEXES.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let append = Append {
            think: Work::ns(THINK_NS),
        };
        super::mutex_points(
            sel,
            locks::MUTEXES,
            append,
            sample_every_for(THINK_NS + 100),
        )
        .into_iter()
        .map(|p| p.param("think_ns", THINK_NS))
        .collect()
    }
}
