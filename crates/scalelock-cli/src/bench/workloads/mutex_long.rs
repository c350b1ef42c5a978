//! `mutex-long`: a ~10 µs critical section, where sleeping must win.
//!
//! Seeds 001 / 002 (MariaDB): spinning pays only when the holder releases soon. With a 10 µs
//! hold and more threads than cores, a spinning waiter burns the CPU the holder (or a thread with
//! useful work) needs; a good lock sleeps here. Each operation holds the mutex for ~10 µs of work
//! on shared cache lines, then does ~10 µs of private work.

use super::mutex_common::HoldBench;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks;
use crate::bench::work::Work;

/// See the module docs.
pub struct MutexLong;

/// Work inside the critical section.
const HOLD_NS: u64 = 10_000;
/// Private work between acquisitions.
const THINK_NS: u64 = 10_000;

impl Workload for MutexLong {
    fn name(&self) -> &'static str {
        "mutex-long"
    }

    fn about(&self) -> &'static str {
        "One mutex held ~10 µs per acquisition, ~10 µs of private work between acquisitions. \
         It reproduces a database spinlock patch that lost a third of its throughput: past the \
         core count, spinning on a long hold burns the CPU the holder needs; sleeping must win."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::MUTEXES.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let bench = HoldBench {
            hold: Work::ns(HOLD_NS),
            think: Work::ns(THINK_NS),
        };
        super::mutex_points(
            sel,
            locks::MUTEXES,
            bench,
            sample_every_for(HOLD_NS + THINK_NS),
        )
        .into_iter()
        .map(|p| p.param("hold_ns", HOLD_NS).param("think_ns", THINK_NS))
        .collect()
    }
}
