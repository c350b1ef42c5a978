//! `mutex-hammer`: every thread takes one mutex in a loop, nothing in between.
//!
//! The worst case for a mutex: the critical section is short (eight words, one cache line,
//! incremented) and no thread ever does anything else, so every acquisition is contended once
//! there are two threads, and with more threads than CPUs a lock holder preempted inside the
//! critical section stalls everyone (spinlocks collapse there). It reproduces a hot lock in a
//! server whose threads all funnel through one counter or free list.
//!
//! Check: every word ends equal to the number of operations.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use crate::bench::locks::{self, BenchMutex, MutexBench};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// See the module docs.
pub struct MutexHammer;

/// Words of the protected data (one cache line).
pub(super) const WORDS: usize = 8;

/// A thread count the default sweep adds (not `--quick`, not an explicit `--threads`): 64
/// threads hammering one mutex is the case the oversubscription work is judged on.
const EXTRA_THREADS: usize = 64;

pub(super) struct HammerBench;

struct Shared<M> {
    lock: M,
    words: CachePadded<[AtomicU64; WORDS]>,
}

impl MutexBench for HammerBench {
    fn run<M: BenchMutex>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = Shared {
            lock: M::new(),
            words: CachePadded::new(Default::default()),
        };
        let m = measure(trial, &shared, |sh, w| {
            let s = w.sample();
            sh.lock.locked(|| {
                w.acquired(s);
                for x in sh.words.iter() {
                    x.store(x.load(Relaxed) + 1, Relaxed);
                }
            });
            1
        });
        for (i, x) in shared.words.iter().enumerate() {
            let v = x.load(Relaxed);
            if v != m.ops_all {
                return Err(format!(
                    "lost updates: {} operations but word {i} counts {v}",
                    m.ops_all
                ));
            }
        }
        Ok(m)
    }
}

impl Workload for MutexHammer {
    fn name(&self) -> &'static str {
        "mutex-hammer"
    }

    fn about(&self) -> &'static str {
        "Every thread locks one mutex in a loop, increments eight words (one cache line) and \
         unlocks, with nothing between acquisitions: a hot lock every thread funnels through \
         (a global counter, a free list). The worst case for hand-off and for spinning once \
         threads outnumber CPUs. The default sweep adds 64 threads."
    }

    fn columns(&self) -> Vec<&'static str> {
        locks::MUTEXES.to_vec()
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let mut sel = sel.clone();
        if sel.default_sweep && !sel.quick && !sel.threads.contains(&EXTRA_THREADS) {
            sel.threads.push(EXTRA_THREADS);
            sel.threads.sort_unstable();
        }
        super::mutex_points(&sel, locks::MUTEXES, HammerBench, sample_every_for(40))
            .into_iter()
            .map(|p| p.param("words", WORDS as u64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads_planned(default_sweep: bool, quick: bool) -> Vec<usize> {
        let sel = Selection {
            locks: Some(vec!["std".into()]),
            threads: vec![1, 128],
            quick,
            default_sweep,
            duration: std::time::Duration::from_millis(100),
        };
        MutexHammer.plan(&sel).iter().map(|p| p.threads).collect()
    }

    #[test]
    fn default_sweep_adds_64_threads_in_order() {
        assert_eq!(threads_planned(true, false), vec![1, EXTRA_THREADS, 128]);
    }

    #[test]
    fn explicit_threads_and_quick_runs_get_what_they_asked() {
        assert_eq!(threads_planned(false, false), vec![1, 128]);
        assert_eq!(threads_planned(true, true), vec![1, 128]);
    }
}
