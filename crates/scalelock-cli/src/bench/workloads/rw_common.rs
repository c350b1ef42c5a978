//! The body shared by the rwlock workloads: look up a small shared table under a read lock,
//! sometimes update it under the write lock.

use crate::bench::harness::{measure, Measurement, Trial};
use crate::bench::locks::{BenchRwLock, Nesting, RwBench};
use crate::bench::work::Work;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Cache lines in the shared table.
pub const LINES: usize = 8;

/// One operation = with probability 1/`write_one_in` a write (increment every line of the table),
/// otherwise a read (read every line and check they agree); then `think` of private work.
///
/// With `nested`, a read takes the read lock, reads half the table, takes a *nested* read lock
/// (the lock's [`Nesting`] strategy) and reads the other half: seed 003's getattr path.
///
/// Checks afterwards: no reader ever saw a half-done write, and every line equals the number of
/// writes performed.
#[derive(Clone, Copy, Debug)]
pub struct RwMix {
    /// One operation in this many is a write.
    pub write_one_in: u64,
    /// Take a nested read inside each read.
    pub nested: bool,
    /// Private work between operations.
    pub think: Work,
}

struct Shared<L> {
    lock: L,
    table: [CachePadded<AtomicU64>; LINES],
    torn: AtomicU64,
}

impl<L> Shared<L> {
    /// Reads `lines`; returns their value if they all agree.
    #[inline]
    fn read_lines(&self, lines: std::ops::Range<usize>) -> Option<u64> {
        let first = self.table[lines.start].load(Relaxed);
        let mut agree = true;
        for l in &self.table[lines] {
            agree &= l.load(Relaxed) == first;
        }
        agree.then_some(first)
    }
}

impl RwBench for RwMix {
    fn run<L: BenchRwLock>(&self, trial: &Trial) -> Result<Measurement, String> {
        let shared = Shared {
            lock: L::new(),
            table: Default::default(),
            torn: AtomicU64::new(0),
        };
        let mix = *self;
        let m = measure(trial, &shared, |sh, w| {
            let s = w.sample();
            let x = if w.one_in(mix.write_one_in) {
                w.tally += 1;
                sh.lock.write(|| {
                    w.acquired(s);
                    let mut x = 0;
                    for l in &sh.table {
                        x = l.load(Relaxed) + 1;
                        l.store(x, Relaxed);
                    }
                    x
                })
            } else {
                sh.lock.read(|| {
                    w.acquired(s);
                    let read = if !mix.nested {
                        sh.read_lines(0..LINES)
                    } else {
                        let outer = sh.read_lines(0..LINES / 2);
                        let inner = || sh.read_lines(LINES / 2..LINES);
                        let inner = if L::NESTING == Nesting::Flattened {
                            inner()
                        } else {
                            sh.lock.read_nested(inner)
                        };
                        outer.filter(|&o| inner == Some(o))
                    };
                    read.unwrap_or_else(|| {
                        sh.torn.fetch_add(1, Relaxed);
                        0
                    })
                })
            };
            mix.think.run(x);
            1
        });
        let torn = shared.torn.load(Relaxed);
        if torn != 0 {
            return Err(format!("{torn} reads saw a half-done write"));
        }
        for (i, l) in shared.table.iter().enumerate() {
            let v = l.load(Relaxed);
            if v != m.tally {
                return Err(format!(
                    "lost updates: {} writes but table line {i} counts {v}",
                    m.tally
                ));
            }
        }
        Ok(m)
    }
}
