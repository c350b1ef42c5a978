//! Calibrated busy work: "hold the lock for 10 µs" as CPU work, not as a clock check.
//!
//! Work is a dependent multiply-add chain the compiler cannot remove or vectorise. It is
//! calibrated once per process (best of several runs, so a preempted run does not inflate it).
//! Being real work, it stretches when its thread is preempted, like a real critical section does.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Instant;

/// An amount of busy work, precomputed from a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    iters: u64,
}

impl Work {
    /// No work at all.
    pub const NONE: Work = Work { iters: 0 };

    /// About `ns` nanoseconds of work on this machine (uncontended, not preempted).
    pub fn ns(ns: u64) -> Work {
        if ns == 0 {
            return Work::NONE;
        }
        let ps_per_iter = ps_per_iter();
        Work {
            iters: (ns * 1000).div_ceil(ps_per_iter).max(1),
        }
    }

    /// Does the work; returns a value the caller may fold into its own state.
    #[inline]
    pub fn run(self, seed: u64) -> u64 {
        let mut x = black_box(seed);
        for _ in 0..self.iters {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        black_box(x)
    }
}

/// Picoseconds per iteration of [`Work::run`], measured once.
fn ps_per_iter() -> u64 {
    static PS: OnceLock<u64> = OnceLock::new();
    *PS.get_or_init(|| {
        const ITERS: u64 = 200_000;
        let probe = Work { iters: ITERS };
        let mut best = u128::MAX;
        for _ in 0..7 {
            let t0 = Instant::now();
            probe.run(1);
            best = best.min(t0.elapsed().as_nanos());
        }
        ((best * 1000) / ITERS as u128).max(1) as u64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_scales_with_the_requested_time() {
        assert_eq!(Work::ns(0), Work::NONE);
        let short = Work::ns(1_000);
        let long = Work::ns(100_000);
        assert!(short.iters >= 1);
        let r = long.iters as f64 / short.iters as f64;
        assert!((95.0..=105.0).contains(&r), "{r}");
    }

    #[test]
    fn work_takes_about_the_requested_time() {
        let w = Work::ns(2_000_000);
        let mut best = u128::MAX;
        for _ in 0..5 {
            let t0 = Instant::now();
            w.run(3);
            best = best.min(t0.elapsed().as_nanos());
        }
        // Loose bounds: other processes share this machine.
        assert!((1_000_000..=8_000_000).contains(&best), "{best} ns");
    }
}
