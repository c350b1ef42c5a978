//! Whether the read bias pays for its revocations: the verdict a revoking writer reaches (see
//! "When the bias comes back" in the protocol's docs), and the moving averages it weighs.
//!
//! The bias saves each read a coherence miss on the lock word, if readers on several CPUs
//! share the lock (revocations find one inside, on average at least once in
//! [`MIN_FOUND_ONE_IN`]), or a few nanoseconds for a lone reader; each revocation costs the
//! writer a scan, and readers that share the lock wait while the bias is paused. Writers that
//! also read (their reads between two writes estimate the read:write ratio, on average) compare
//! the two directly: the bias pays if the reads between two writes save more than a revocation
//! costs. For writers that do not read, that ratio is unknown: the bias pays if readers share
//! the lock and revocations take at most a third of the time, on average (the bias lives at
//! least [`PAYOFF_FACTOR`] times as long as a revocation takes). Averages, not one revocation:
//! with several writers, the gaps between revocations alternate short and long with their
//! relative phase, and a verdict per revocation would flip the bias on and off with it.

use crate::sync::{AtomicU32, Ordering};

/// For writers that do not read: the bias pays while it lives, on average, at least this many
/// revocation costs (and readers share the lock).
pub(super) const PAYOFF_FACTOR: u64 = 2;
/// Shares and yes/no averages are fractions in units of `2^-SHARE_SHIFT`.
pub(super) const SHARE_SHIFT: u32 = 16;
/// One, in units of `2^-SHARE_SHIFT`.
pub(super) const ONE: u64 = 1 << SHARE_SHIFT;
/// The averages move by `2^-SHARE_EWMA_SHIFT` of the distance to each sample: about
/// `2^SHARE_EWMA_SHIFT` revocations.
const SHARE_EWMA_SHIFT: u32 = 3;
/// The largest time share one timed revocation counts for (one half).
pub(super) const MAX_SHARE_SAMPLE: u64 = ONE / 2;
/// Revocations find a reader inside less than once in this many: readers do not share the lock.
pub(super) const MIN_FOUND_ONE_IN: u64 = 16;
/// What a read saves with the bias on, in ns, while readers on several CPUs share the lock: the
/// underlying lock's line would move between their caches on every read (a cache-line transfer
/// between cores; taken low, so that the verdict errs towards the plain lock).
pub(super) const SAVED_NS_SHARED: u64 = 32;
/// What a read saves with the bias on, in ns, for a lone reader: an uncontended atomic
/// read-modify-write of the lock word against one of the reader's own row.
pub(super) const SAVED_NS_LONE: u64 = 2;
/// `reads_per_write` is a count in units of `2^-READS_SHIFT`.
pub(super) const READS_SHIFT: u32 = 4;
/// The largest count of reads one write counts for.
pub(super) const MAX_READS_SAMPLE: u32 = 1 << 16;

/// What the verdict weighs: moving averages over recent revocations.
#[derive(Clone, Copy, Debug)]
pub(super) struct Averages {
    /// Revocations found a deferred reader inside, in units of `2^-SHARE_SHIFT`.
    pub(super) reader_found: u64,
    /// Revoking writers that read too, in units of `2^-SHARE_SHIFT`.
    pub(super) reading_writers: u64,
    /// Reads between two writes of writers that read, in units of `2^-READS_SHIFT`.
    pub(super) reads_per_write: u64,
    /// What a revocation costs its writer, in ns.
    pub(super) cost_ns: u64,
    /// How long readers that found the bias paused waited for it, in ns.
    pub(super) pause_ns: u64,
    /// The share of the time revocations take, in units of `2^-SHARE_SHIFT`.
    pub(super) revoke_share: u64,
}

/// The verdict: whether the bias pays for its revocations, given the averages.
pub(super) fn pays(a: &Averages) -> bool {
    let shared = a.reader_found >= ONE / MIN_FOUND_ONE_IN;
    if a.reading_writers >= ONE / 2 {
        // Readers that share the lock and find the bias paused wait until the writer unlocks:
        // that wait is part of what a revocation costs them.
        let (cost, saved) = if shared {
            (a.cost_ns + a.pause_ns, SAVED_NS_SHARED)
        } else {
            (a.cost_ns, SAVED_NS_LONE)
        };
        (a.reads_per_write * saved) >> READS_SHIFT >= cost
    } else {
        shared && a.revoke_share * (PAYOFF_FACTOR + 1) <= ONE
    }
}

/// Moves the moving average in `avg` (written only under the write lock) one step towards
/// `sample`; returns the new average.
pub(super) fn ewma(avg: &AtomicU32, sample: u64) -> u64 {
    let a = avg.load(Ordering::Relaxed) as u64;
    let a = a - (a >> SHARE_EWMA_SHIFT) + (sample >> SHARE_EWMA_SHIFT);
    avg.store(a as u32, Ordering::Relaxed);
    a
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const HALF: u64 = ONE / 2;
    /// Reads between two writes, in the averages' units.
    const fn reads(n: u64) -> u64 {
        n << READS_SHIFT
    }

    #[test]
    fn the_verdict_weighs_what_reads_save_against_what_revocations_cost() {
        let base = Averages {
            reader_found: 0,
            reading_writers: 0,
            reads_per_write: 0,
            cost_ns: 0,
            pause_ns: 0,
            revoke_share: 0,
        };
        // (what, averages, pays)
        let table: &[(&str, Averages, bool)] = &[
            (
                "writers read, readers share: 100 reads save 3200 ns > 1000 + 500 ns",
                Averages {
                    reader_found: HALF,
                    reading_writers: ONE,
                    reads_per_write: reads(100),
                    cost_ns: 1_000,
                    pause_ns: 500,
                    ..base
                },
                true,
            ),
            (
                "the same, but the readers' wait for the pause tips it",
                Averages {
                    reader_found: HALF,
                    reading_writers: ONE,
                    reads_per_write: reads(100),
                    cost_ns: 1_000,
                    pause_ns: 3_000,
                    ..base
                },
                false,
            ),
            (
                "exactly even pays",
                Averages {
                    reader_found: HALF,
                    reading_writers: ONE,
                    reads_per_write: reads(50),
                    cost_ns: 1_000,
                    pause_ns: 600,
                    ..base
                },
                true,
            ),
            (
                "a lone reader saves little: 100 reads save 200 ns < 1000 ns",
                Averages {
                    reader_found: 0,
                    reading_writers: ONE,
                    reads_per_write: reads(100),
                    cost_ns: 1_000,
                    pause_ns: 10_000,
                    ..base
                },
                false,
            ),
            (
                "a lone reader with many reads per write; its pause is not counted",
                Averages {
                    reader_found: 0,
                    reading_writers: ONE,
                    reads_per_write: reads(1_000),
                    cost_ns: 1_000,
                    pause_ns: 1_000_000,
                    ..base
                },
                true,
            ),
            (
                "readers found just often enough count as sharing",
                Averages {
                    reader_found: ONE / MIN_FOUND_ONE_IN,
                    reading_writers: ONE,
                    reads_per_write: reads(40),
                    cost_ns: 1_280,
                    ..base
                },
                true,
            ),
            (
                "just below that, they do not",
                Averages {
                    reader_found: ONE / MIN_FOUND_ONE_IN - 1,
                    reading_writers: ONE,
                    reads_per_write: reads(40),
                    cost_ns: 1_280,
                    ..base
                },
                false,
            ),
            (
                "writers that do not read, readers share, revocations take a quarter",
                Averages {
                    reader_found: HALF,
                    reading_writers: 0,
                    revoke_share: ONE / 4,
                    ..base
                },
                true,
            ),
            (
                "the same, revocations take a third and more",
                Averages {
                    reader_found: HALF,
                    reading_writers: 0,
                    revoke_share: ONE / 3 + 1,
                    ..base
                },
                false,
            ),
            (
                "writers that do not read, and no reader shares the lock",
                Averages {
                    reader_found: 0,
                    reading_writers: 0,
                    revoke_share: 0,
                    ..base
                },
                false,
            ),
            (
                "half the writers read: judged as reading writers",
                Averages {
                    reader_found: HALF,
                    reading_writers: HALF,
                    reads_per_write: 0,
                    cost_ns: 1,
                    ..base
                },
                false,
            ),
        ];
        for (what, averages, expected) in table {
            assert_eq!(pays(averages), *expected, "{what}: {averages:?}");
        }
    }

    #[test]
    fn the_averages_move_an_eighth_of_the_way_to_each_sample() {
        // (start, sample, after one step)
        let table: &[(u32, u64, u64)] = &[
            (0, 800, 100),
            (800, 0, 700),
            (800, 800, 800),
            (0, ONE, ONE / 8),
            (ONE as u32, 0, ONE - ONE / 8),
        ];
        for &(start, sample, after) in table {
            let avg = AtomicU32::new(start);
            assert_eq!(ewma(&avg, sample), after, "from {start} towards {sample}");
            assert_eq!(u64::from(avg.load(Ordering::Relaxed)), after);
        }
        // Repeated samples converge on the sample.
        let avg = AtomicU32::new(0);
        for _ in 0..200 {
            ewma(&avg, 10_000);
        }
        assert!((9_900..=10_000).contains(&avg.load(Ordering::Relaxed)));
    }
}
