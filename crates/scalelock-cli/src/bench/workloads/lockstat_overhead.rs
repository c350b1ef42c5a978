//! `lockstat-overhead`: what lockstat costs on the uncontended lock + unlock path.
//!
//! One thread locks and unlocks a `scalelock::Mutex` with recording off (the default: one relaxed
//! load of the global switch is all lockstat adds) and on (`stats::enable()`: the acquisition is
//! counted and, once per sample period, a hold time is measured), next to `lock_api::Mutex` over
//! the same `RawMutex` with no wrapper at all (no switch to load). The targets: off is
//! indistinguishable from the bare lock, on costs at most 5% (the `ratio` of `lockstat-on` to the
//! best other column). Always one thread, whatever `--threads` says.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Lock/unlock pairs per call of the measured closure (keeps the loop overhead out).
const BATCH: u64 = 64;

const OFF: &str = "lockstat-off";
const ON: &str = "lockstat-on";
const BARE: &str = "lock_api-bare";

/// See the module docs.
pub struct LockstatOverhead;

/// Runs the pairs on `lock` (through `lock_one`) and checks the count they guard.
fn pairs<L: Sync>(
    trial: &Trial,
    lock: &L,
    lock_one: impl Fn(&L, &AtomicU64) + Sync,
) -> Result<Measurement, String> {
    let shared = (lock, AtomicU64::new(0));
    let m = measure(trial, &shared, |(lock, n), w| {
        for _ in 0..BATCH {
            let s = w.sample();
            lock_one(lock, n);
            w.acquired(s);
        }
        BATCH
    });
    let counted = shared.1.load(Relaxed);
    if counted == m.ops_all {
        Ok(m)
    } else {
        Err(format!(
            "{} lock/unlock pairs but the counter they guard reads {counted}",
            m.ops_all
        ))
    }
}

fn run(which: &'static str, trial: &Trial) -> Result<Measurement, String> {
    use scalelock::stats;
    let was_on = stats::enabled();
    match which {
        BARE => {
            let m = scalelock::lock_api::Mutex::<scalelock::RawMutex, ()>::new(());
            pairs(trial, &m, |m, n| {
                let _g = m.lock();
                n.store(n.load(Relaxed) + 1, Relaxed);
            })
        }
        _ => {
            if which == ON {
                stats::enable();
            } else {
                stats::disable();
            }
            let m = scalelock::Mutex::with_name("lockstat-overhead", ());
            let r = pairs(trial, &m, |m, n| {
                let _g = m.lock();
                n.store(n.load(Relaxed) + 1, Relaxed);
            });
            if was_on {
                stats::enable();
            } else {
                stats::disable();
            }
            r
        }
    }
}

impl Workload for LockstatOverhead {
    fn name(&self) -> &'static str {
        "lockstat-overhead"
    }

    fn about(&self) -> &'static str {
        "Uncontended lock + unlock of scalelock::Mutex with lockstat recording off and on, and of \
         lock_api::Mutex over the same RawMutex with no lockstat switch at all (off must match the \
         bare lock, on must cost at most 5%). Always one thread."
    }

    fn columns(&self) -> Vec<&'static str> {
        vec![OFF, ON, BARE]
    }

    fn ours(&self) -> &'static str {
        ON
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let every = sample_every_for(10);
        [OFF, ON, BARE]
            .into_iter()
            .filter(|l| sel.wants(l))
            .map(|lock| {
                Point::new(lock, 1, move |t| run(lock, t))
                    .sample_every(every)
                    .param("sample_period", scalelock::stats::sample_period())
            })
            .collect()
    }
}
