//! `adaptive-grid`: which spin policy wins where, and is `Adaptive` always close to the winner?
//!
//! Seeds 001 and 002 (MariaDB): years of argument over spinning versus sleeping
//! (`innodb_log_spin_wait_delay`, adaptive versus normal pthread mutexes) because the right
//! answer changes with the hold time, the thread count and the CPU. This grid runs scalelock's
//! mutex with each process-wide [`SpinPolicy`] over hold times {0, 100 ns, 1 µs, 10 µs, 100 µs}
//! and the thread sweep. The table's ratio row is `auto` over the best other policy: `Adaptive`
//! is doing its job where that ratio is ≥ 0.95.

use super::mutex_common::HoldBench;
use super::{Point, Selection, Workload};
use crate::bench::harness::sample_every_for;
use crate::bench::locks::run_mutex;
use crate::bench::stats::duration_ns;
use crate::bench::work::Work;
use scalelock::wait::{set_spin_policy, spin_policy, SpinPolicy};
use std::sync::Arc;

/// See the module docs.
pub struct AdaptiveGrid;

/// Critical-section lengths swept.
pub const HOLDS_NS: [u64; 5] = [0, 100, 1_000, 10_000, 100_000];

/// Private work between acquisitions: as long as the hold, at least this much.
const MIN_THINK_NS: u64 = 200;

/// The policies compared, with their series labels.
pub fn policies() -> Vec<(SpinPolicy, &'static str)> {
    vec![
        (SpinPolicy::Adaptive, "auto"),
        (SpinPolicy::Fixed(1_000), "fixed 1µs"),
        (SpinPolicy::Fixed(10_000), "fixed 10µs"),
        (SpinPolicy::Never, "never"),
        (SpinPolicy::Always, "always"),
    ]
}

impl Workload for AdaptiveGrid {
    fn name(&self) -> &'static str {
        "adaptive-grid"
    }

    fn about(&self) -> &'static str {
        "scalelock's mutex under each spin policy (auto = Adaptive, fixed 1µs / 10µs, never, \
         always) for hold times {0, 100 ns, 1 µs, 10 µs, 100 µs} (private work between \
         acquisitions as long as the hold, at least 200 ns) across the thread sweep. It \
         reproduces MariaDB's spin-versus-sleep knobs, which win in one regime and lose in \
         another; Adaptive should be within 5% of the best policy everywhere (ratio row ≥ 0.95)."
    }

    fn columns(&self) -> Vec<&'static str> {
        vec!["scalelock"]
    }

    fn ours(&self) -> &'static str {
        "auto"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        if !sel.wants("scalelock") {
            return Vec::new();
        }
        let mut points = Vec::new();
        // --quick keeps the ends and the middle of the hold range.
        let holds: Vec<u64> = if sel.quick {
            vec![HOLDS_NS[0], HOLDS_NS[2], HOLDS_NS[4]]
        } else {
            HOLDS_NS.to_vec()
        };
        for hold_ns in holds {
            let think_ns = hold_ns.max(MIN_THINK_NS);
            let bench = Arc::new(HoldBench {
                hold: Work::ns(hold_ns),
                think: Work::ns(think_ns),
            });
            let case = format!("hold {}", duration_ns(hold_ns as f64));
            for (policy, label) in policies() {
                for &threads in &sel.threads {
                    let b = Arc::clone(&bench);
                    let run = move |trial: &_| {
                        let before = spin_policy();
                        set_spin_policy(policy);
                        let r = run_mutex("scalelock", &*b, trial);
                        set_spin_policy(before);
                        r
                    };
                    points.push(
                        Point::new("scalelock", threads, run)
                            .case(case.clone())
                            .series(label)
                            .sample_every(sample_every_for(hold_ns + think_ns))
                            .param("hold_ns", hold_ns)
                            .param("think_ns", think_ns)
                            .param("spin_policy", policy.to_string()),
                    );
                }
            }
        }
        points
    }
}
