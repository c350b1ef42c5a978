//! The body shared by the mutex workloads: hold the lock for a while, then work outside it.

use crate::bench::harness::{measure, Measurement, Trial};
use crate::bench::locks::{BenchMutex, MutexBench};
use crate::bench::work::Work;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Cache lines written inside every critical section.
pub const LINES: usize = 4;

/// One operation = lock, increment [`LINES`] shared cache lines, do `hold` of work, unlock, then
/// do `think` of work outside the lock.
///
/// Afterwards every line must equal the number of operations run: a lock that failed to exclude
/// would lose increments.
#[derive(Clone, Copy, Debug)]
pub struct HoldBench {
    /// Work inside the critical section.
    pub hold: Work,
    /// Work between critical sections.
    pub think: Work,
}

struct Shared<M> {
    lock: M,
    lines: [CachePadded<AtomicU64>; LINES],
}

impl MutexBench for HoldBench {
    fn run<M: BenchMutex>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = Shared {
            lock: M::new(),
            lines: Default::default(),
        };
        let (hold, think) = (self.hold, self.think);
        let m = measure(trial, &shared, |sh, w| {
            let s = w.sample();
            let x = sh.lock.locked(|| {
                w.acquired(s);
                let mut x = 0;
                for l in &sh.lines {
                    x = l.load(Relaxed) + 1;
                    l.store(x, Relaxed);
                }
                hold.run(x)
            });
            think.run(x);
            1
        });
        for (i, l) in shared.lines.iter().enumerate() {
            let v = l.load(Relaxed);
            if v != m.ops_all {
                return Err(format!(
                    "lost updates: {} operations but shared line {i} counts {v}",
                    m.ops_all
                ));
            }
        }
        Ok(m)
    }
}
