//! `recursive-read`: nested read locks on one shared rwlock while a writer occasionally arrives.
//!
//! Seed 003 (ZFS `rrw_lock`): the teardown lock is taken for read, recursively, on every
//! getattr; ZFS built it on a mutex so that a waiting writer could not deadlock a nested reader,
//! and readers serialised on that mutex. Here each read takes the lock, reads half a table,
//! takes a nested read (getattr) and reads the other half; one operation in 200 is a write, so
//! writers do wait while readers hold the lock.
//!
//! Locks without a safe recursive read use what they offer, recorded in the `nesting` param:
//! `nested read` (spin, glibc pthread: waiting writers never block readers), `read_recursive`
//! (scalelock, scalelock-biased, parking_lot), `flattened (no recursive read)` (std, crossbeam
//! ShardedLock: the nested section
//! runs under the outer read lock without a second acquisition; a real nested read could
//! deadlock behind a waiting writer).

use super::rw_common::RwMix;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks;
use crate::bench::work::Work;

/// See the module docs.
pub struct RecursiveRead;

const THINK_NS: u64 = 200;

impl Workload for RecursiveRead {
    fn name(&self) -> &'static str {
        "recursive-read"
    }

    fn about(&self) -> &'static str {
        "Each read takes one shared rwlock, then a nested read inside it (getattr-like); one \
         operation in 200 is a write. It reproduces ZFS's rrw_lock, a mutex so that nested readers \
         could not deadlock behind a waiting writer, which serialised readers. Locks without a \
         safe recursive read use what they offer (param `nesting`): std and crossbeam-sharded run \
         the nested section under the outer lock (flattened); scalelock, scalelock-biased and \
         parking_lot use read_recursive; spin and glibc pthread never block readers behind \
         writers, so a plain nested read is safe there."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::RWLOCKS.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mix = RwMix {
            write_one_in: 200,
            nested: true,
            think: Work::ns(THINK_NS),
        };
        super::rwlock_points(sel, locks::RWLOCKS, mix, sample_every_for(THINK_NS + 50))
            .into_iter()
            .map(|p| {
                let nesting = locks::rwlock_nesting(&p.lock).map_or("", |n| n.label());
                p.param("nesting", nesting)
                    .param("write_pct", 0.5)
                    .param("think_ns", THINK_NS)
            })
            .collect()
    }
}
