//! `rwlock-hammer`: every thread reads one rwlock in a loop, nothing in between; a few write.
//!
//! The read path alone: a read locks, loads two words of one cache line (and checks they agree),
//! unlocks, and starts again. One operation in `write_one_in` is a write that increments both
//! words. Cases: 0.1% writes (a read-mostly table: the cost of a read, and whether readers scale
//! past one CPU), 10% writes (what a reader-biased lock pays when writes are frequent). It
//! reproduces a configuration or routing table read on every request.
//!
//! Checks: no read sees the two words differ, and both end equal to the number of writes.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use crate::bench::locks::{self, BenchRwLock, RwBench};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// See the module docs.
pub struct RwlockHammer;

#[derive(Clone, Copy)]
pub(super) struct HammerBench {
    /// One operation in this many is a write.
    pub(super) write_one_in: u64,
}

struct Shared<L> {
    lock: L,
    words: CachePadded<[AtomicU64; 2]>,
    torn: CachePadded<AtomicU64>,
}

impl RwBench for HammerBench {
    fn run<L: BenchRwLock>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = Shared {
            lock: L::new(),
            words: CachePadded::new(Default::default()),
            torn: CachePadded::default(),
        };
        let every = self.write_one_in;
        let m = measure(trial, &shared, |sh, w| {
            let s = w.sample();
            if w.one_in(every) {
                w.tally += 1;
                sh.lock.write(|| {
                    w.acquired(s);
                    for x in sh.words.iter() {
                        x.store(x.load(Relaxed) + 1, Relaxed);
                    }
                });
            } else {
                let agree = sh.lock.read(|| {
                    w.acquired(s);
                    sh.words[0].load(Relaxed) == sh.words[1].load(Relaxed)
                });
                if !agree {
                    sh.torn.fetch_add(1, Relaxed);
                }
            }
            1
        });
        let torn = shared.torn.load(Relaxed);
        if torn != 0 {
            return Err(format!("{torn} reads saw a half-done write"));
        }
        for (i, x) in shared.words.iter().enumerate() {
            let v = x.load(Relaxed);
            if v != m.tally {
                return Err(format!(
                    "lost updates: {} writes but word {i} counts {v}",
                    m.tally
                ));
            }
        }
        Ok(m)
    }
}

impl Workload for RwlockHammer {
    fn name(&self) -> &'static str {
        "rwlock-hammer"
    }

    fn about(&self) -> &'static str {
        "Every thread reads one rwlock in a loop (two words of one cache line), nothing between \
         operations; one operation in 1000 (case `0.1% writes`) or in 10 (`10% writes`) \
         increments both words under the write lock. A table read on every request: the cost \
         of a read, whether readers scale, and what frequent writes cost a reader-biased lock."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::RWLOCKS.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mut points = Vec::new();
        for (case, write_one_in, pct) in [("0.1% writes", 1000, 0.1), ("10% writes", 10, 10.0)] {
            points.extend(
                super::rwlock_points(
                    sel,
                    locks::RWLOCKS,
                    HammerBench { write_one_in },
                    sample_every_for(20),
                )
                .into_iter()
                .map(|p| p.case(case).param("write_pct", pct)),
            );
        }
        points
    }
}
