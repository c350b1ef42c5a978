//! `uncontended`: the cost of one lock + unlock pair on a single thread.
//!
//! Seed 000 (MySQL on OSv): a read lock that costs a sleeping mutex's round trip even when nobody
//! contends is already a loss. This measures the fast paths alone: mutex lock/unlock, rwlock
//! read lock/unlock and rwlock write lock/unlock, with a bare test-and-set spinlock as the
//! physical floor (one atomic swap + one store).

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use crate::bench::locks::{self, BenchMutex, BenchRwLock, MutexBench, RwBench};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Lock/unlock pairs per call of the measured closure (keeps the loop overhead out).
const BATCH: u64 = 64;

/// See the module docs.
pub struct Uncontended;

struct MutexPairs;

impl MutexBench for MutexPairs {
    fn run<M: BenchMutex>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = (M::new(), AtomicU64::new(0));
        let m = measure(trial, &shared, |(lock, n), w| {
            for _ in 0..BATCH {
                let s = w.sample();
                lock.locked(|| {
                    w.acquired(s);
                    n.store(n.load(Relaxed) + 1, Relaxed);
                });
            }
            BATCH
        });
        check(shared.1.load(Relaxed), m.ops_all)?;
        Ok(m)
    }
}

#[derive(Clone, Copy)]
struct RwPairs {
    write: bool,
}

impl RwBench for RwPairs {
    fn run<L: BenchRwLock>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = (L::new(), AtomicU64::new(0));
        let write = self.write;
        let m = measure(trial, &shared, |(lock, n), w| {
            for _ in 0..BATCH {
                let s = w.sample();
                if write {
                    lock.write(|| {
                        w.acquired(s);
                        n.store(n.load(Relaxed) + 1, Relaxed);
                    });
                } else {
                    lock.read(|| {
                        w.acquired(s);
                        std::hint::black_box(n.load(Relaxed));
                    });
                }
            }
            BATCH
        });
        if write {
            check(shared.1.load(Relaxed), m.ops_all)?;
        }
        Ok(m)
    }
}

fn check(counted: u64, ops: u64) -> Result<(), String> {
    if counted == ops {
        Ok(())
    } else {
        Err(format!(
            "{ops} lock/unlock pairs but the counter they guard reads {counted}"
        ))
    }
}

impl Workload for Uncontended {
    fn name(&self) -> &'static str {
        "uncontended"
    }

    fn about(&self) -> &'static str {
        "Lock + unlock on one thread, nanoseconds per pair: the fast paths alone (a read lock that \
         costs a sleeping mutex's round trip even uncontended is already a loss). Cases: mutex, \
         rwlock read, rwlock write; a bare test-and-set spinlock (`tas`) is the physical floor. \
         Always one thread, whatever --threads says. Plotted and compared as CPU ns per pair \
         (process CPU time / pairs), which preemption by other programs does not inflate; the \
         JSON's ops_per_sec and ns_per_op are wall-clock."
    }

    fn columns(&self) -> Vec<&'static str> {
        let mut c = locks::MUTEXES.to_vec();
        c.push(locks::FLOOR);
        for l in locks::RWLOCKS {
            if !c.contains(l) {
                c.push(l);
            }
        }
        c
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let every = sample_every_for(10);
        let mut points = Vec::new();
        let mut mutexes = vec![locks::FLOOR];
        mutexes.extend_from_slice(locks::MUTEXES);
        let one_thread = Selection {
            threads: vec![1],
            ..sel.clone()
        };
        points.extend(
            super::mutex_points(&one_thread, &mutexes, MutexPairs, every)
                .into_iter()
                .map(|p| p.case("mutex")),
        );
        for (case, write) in [("rwlock read", false), ("rwlock write", true)] {
            points.extend(
                super::rwlock_points(&one_thread, locks::RWLOCKS, RwPairs { write }, every)
                    .into_iter()
                    .map(|p| p.case(case)),
            );
        }
        points
    }
}
