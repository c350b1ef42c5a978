//! `mutex-short`: a tiny critical section on a hot mutex.
//!
//! Seed 000 (MySQL on OSv): the pthread rwlock was built on a sleeping mutex whose critical
//! section is a few instructions on a few cache lines; putting threads to sleep for that wrecked
//! concurrency, and spinning would have been right. Each operation takes the mutex, updates
//! four shared cache lines, releases it, then does ~200 ns of private work.

use super::mutex_common::HoldBench;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks;
use crate::bench::work::Work;

/// See the module docs.
pub struct MutexShort;

/// Private work between acquisitions.
const THINK_NS: u64 = 200;

impl Workload for MutexShort {
    fn name(&self) -> &'static str {
        "mutex-short"
    }

    fn about(&self) -> &'static str {
        "One hot mutex, tiny critical section (4 shared cache lines updated), ~200 ns of private \
         work between acquisitions. It reproduces a sleeping mutex around a few \
         instructions, where sleeping instead of spinning killed a database's concurrency."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::MUTEXES.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let bench = HoldBench {
            hold: Work::NONE,
            think: Work::ns(THINK_NS),
        };
        super::mutex_points(sel, locks::MUTEXES, bench, sample_every_for(THINK_NS + 50))
            .into_iter()
            .map(|p| p.param("think_ns", THINK_NS))
            .collect()
    }
}
