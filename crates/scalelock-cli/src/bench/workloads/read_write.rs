//! `read-write`: 80% reads, 20% writes on one rwlock.
//!
//! Seed 000 (MySQL on OSv, read-write workload 5x slower) and seed 002 (MariaDB: at high
//! concurrency, read-write results flip which mutex type wins). Same table and private work as
//! `read-mostly`, but one operation in five is a write, so writers contend with each other and
//! with readers.

use super::rw_common::RwMix;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks;
use crate::bench::work::Work;

/// See the module docs.
pub struct ReadWrite;

const THINK_NS: u64 = 200;

impl Workload for ReadWrite {
    fn name(&self) -> &'static str {
        "read-write"
    }

    fn about(&self) -> &'static str {
        "One rwlock, 80% reads / 20% writes on an 8-cache-line table, ~200 ns of private work \
         between operations. It reproduces a database's \
         read-write workload, slowed 5x by a mutex-based rwlock, where the best lock changes at \
         high concurrency."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::RWLOCKS.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mix = RwMix {
            write_one_in: 5,
            nested: false,
            think: Work::ns(THINK_NS),
        };
        super::rwlock_points(sel, locks::RWLOCKS, mix, sample_every_for(THINK_NS + 50))
            .into_iter()
            .map(|p| p.param("write_pct", 20.0).param("think_ns", THINK_NS))
            .collect()
    }
}
