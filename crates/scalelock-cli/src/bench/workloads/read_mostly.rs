//! `read-mostly`: 99.9% reads, 0.1% writes on one rwlock.
//!
//! Seed 000 (MySQL on OSv): MySQL's read-only workload ran 7x slower because every
//! `pthread_rwlock_rdlock` serialised on a mutex. Readers here look up an 8-cache-line table
//! under the read lock (and check it is consistent), then do ~200 ns of private work; one
//! operation in 1000 updates the table under the write lock.

use super::rw_common::RwMix;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks;
use crate::bench::work::Work;

/// See the module docs.
pub struct ReadMostly;

const THINK_NS: u64 = 200;

impl Workload for ReadMostly {
    fn name(&self) -> &'static str {
        "read-mostly"
    }

    fn about(&self) -> &'static str {
        "One rwlock, 99.9% reads (look up an 8-cache-line table) / 0.1% writes, ~200 ns of \
         private work between operations. It reproduces a read-only database workload \
         slowed 7x because pthread_rwlock_rdlock serialised readers on a mutex; readers must \
         scale (scalelock-biased keeps readers off the lock's cache line)."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::RWLOCKS.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mix = RwMix {
            write_one_in: 1000,
            nested: false,
            think: Work::ns(THINK_NS),
        };
        super::rwlock_points(sel, locks::RWLOCKS, mix, sample_every_for(THINK_NS + 50))
            .into_iter()
            .map(|p| p.param("write_pct", 0.1).param("think_ns", THINK_NS))
            .collect()
    }
}
