//! [`Counters`]: what lockstat counts for one lock or one `(lock, call site)` pair.
//!
//! The scalar counters are declared once, in the list given to `declare_counters!` below: that
//! list makes the struct's fields and the name + value table ([`Counters::scalars`],
//! [`Counters::scalars_mut`]) that the text dump, the JSON and `scalelock profile`'s parser
//! all walk, and says how two values combine ([`Counters::merge`]). A new counter is one line
//! there (and its recording in `table::Entry`).

use super::table::{Entry, HIST_BUCKETS};
use core::sync::atomic::{AtomicU64, Ordering};

/// How a summed counter combines with another interval's or site's.
fn sum(a: u64, b: u64) -> u64 {
    a + b
}

/// How a maximum combines.
fn max(a: u64, b: u64) -> u64 {
    a.max(b)
}

/// Adds `v` into the summed counter `a` of a live entry.
#[cfg_attr(not(all(feature = "lockstat", not(loom))), allow(dead_code))]
fn sum_into(a: &AtomicU64, v: u64) {
    if v != 0 {
        a.fetch_add(v, Ordering::Relaxed);
    }
}

/// Raises the maximum `a` of a live entry to `v`.
#[cfg_attr(not(all(feature = "lockstat", not(loom))), allow(dead_code))]
fn max_into(a: &AtomicU64, v: u64) {
    a.fetch_max(v, Ordering::Relaxed);
}

/// `sum` into an atomic is [`sum_into`], `max` is [`max_into`].
macro_rules! combine_into {
    (sum, $a:expr, $v:expr) => {
        sum_into($a, $v)
    };
    (max, $a:expr, $v:expr) => {
        max_into($a, $v)
    };
}

/// Declares [`Counters`] from its list of scalar counters: `doc, name: combine,` in the order
/// the dump and the JSON write them. `combine` is [`sum`] or [`max`]; `name` is also the field
/// of `table::Entry` the counter is read from.
macro_rules! declare_counters {
    ($($(#[doc = $doc:literal])* $name:ident: $combine:ident,)*) => {
        /// Counters of one lock or one `(lock, call site)` pair over the current interval.
        ///
        /// ```
        /// let c = scalelock::stats::Counters { contended: 4, wait_ns: 400, ..Default::default() };
        /// assert_eq!(c.avg_wait_ns(), 100);
        /// assert_eq!(c.avg_hold_ns(), 0);
        /// ```
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[doc = $doc])* pub $name: u64,)*
            /// Wait-time histogram: bucket `b` counts waits of `[2^(b-1), 2^b)` ns (bucket 0:
            /// 0 ns; the last bucket: everything longer).
            pub wait_histogram: [u64; HIST_BUCKETS],
        }

        impl Counters {
            /// How many scalar counters there are (every field but the histogram).
            ///
            /// ```
            /// use scalelock::stats::Counters;
            /// assert_eq!(Counters::default().scalars().len(), Counters::SCALARS);
            /// ```
            pub const SCALARS: usize = [$(stringify!($name)),*].len();

            /// Every scalar counter as `(field name, value)`, in declaration order: the order
            /// and the names of the lockstat dump and of the JSON report.
            ///
            /// ```
            /// let c = scalelock::stats::Counters { contended: 3, ..Default::default() };
            /// assert_eq!(c.scalars()[0], ("acquisitions", 0));
            /// assert!(c.scalars().contains(&("contended", 3)));
            /// ```
            pub fn scalars(&self) -> [(&'static str, u64); Self::SCALARS] {
                [$((stringify!($name), self.$name)),*]
            }

            /// [`scalars`](Counters::scalars), writable: how a reader of the dump fills
            /// counters in.
            ///
            /// ```
            /// let mut c = scalelock::stats::Counters::default();
            /// for (i, (_, v)) in c.scalars_mut().into_iter().enumerate() {
            ///     *v = i as u64;
            /// }
            /// assert_eq!((c.acquisitions, c.contended), (0, 1));
            /// ```
            pub fn scalars_mut(&mut self) -> [(&'static str, &mut u64); Self::SCALARS] {
                [$((stringify!($name), &mut self.$name)),*]
            }

            /// Adds `o` in: sums add up, maxima stay maxima, histogram buckets add up.
            ///
            /// ```
            /// use scalelock::stats::Counters;
            /// let mut a = Counters { contended: 1, max_wait_ns: 50, ..Default::default() };
            /// a.merge(&Counters { contended: 2, max_wait_ns: 20, ..Default::default() });
            /// assert_eq!((a.contended, a.max_wait_ns), (3, 50));
            /// ```
            pub fn merge(&mut self, o: &Counters) {
                $(self.$name = $combine(self.$name, o.$name);)*
                for (a, b) in self.wait_histogram.iter_mut().zip(&o.wait_histogram) {
                    *a += b;
                }
            }

            /// A snapshot of one table entry. Acquisitions count from the entry's base (see
            /// `Entry::reset`).
            pub(crate) fn from_entry(e: &Entry) -> Counters {
                let mut c = Counters {
                    $($name: e.$name.load(Ordering::Relaxed),)*
                    wait_histogram: [0; HIST_BUCKETS],
                };
                c.acquisitions = c
                    .acquisitions
                    .wrapping_sub(e.acquisitions_base.load(Ordering::Relaxed));
                for (h, a) in c.wait_histogram.iter_mut().zip(&e.wait_hist) {
                    *h = a.load(Ordering::Relaxed);
                }
                c
            }

            /// Adds these counters into the live entry `e` with atomic read-modify-writes
            /// (sums with `fetch_add`, maxima with `fetch_max`), as [`merge`](Counters::merge)
            /// does: other threads may be adding to `e` meanwhile.
            #[cfg_attr(not(all(feature = "lockstat", not(loom))), allow(dead_code))]
            pub(crate) fn add_to_entry(&self, e: &Entry) {
                $(combine_into!($combine, &e.$name, self.$name);)*
                for (a, h) in e.wait_hist.iter().zip(&self.wait_histogram) {
                    sum_into(a, *h);
                }
            }
        }
    };
}

declare_counters! {
    /// Acquisitions. Per lock: exact for acquisitions through [`Mutex`](crate::Mutex) (and the C
    /// API), not counted for the raw lock_api path. Per call site: estimated, one sample per
    /// [`sample_period`](super::sample_period) acquisitions of the lock, weighted by the period
    /// (exact when the period is 1).
    acquisitions: sum,
    /// Acquisitions that had to wait (spin, sleep or take a hand-off), plus timed-out attempts.
    contended: sum,
    /// Timed acquisitions (`try_lock_for`, `try_lock_until`) that gave up.
    timeouts: sum,
    /// Nanoseconds spent spinning (calibrated spin time, not wall time).
    spin_ns: sum,
    /// Times a waiter went to sleep on the futex.
    sleeps: sum,
    /// Acquisitions that received the lock by hand-off (starvation mode or a fair unlock).
    handoffs: sum,
    /// Total wait time of the contended acquisitions, in nanoseconds.
    wait_ns: sum,
    /// Longest single wait, in nanoseconds.
    max_wait_ns: max,
    /// Number of hold times measured (holds are sampled, see [`sample_period`](super::sample_period)).
    hold_samples: sum,
    /// Sum of the sampled hold times, in nanoseconds.
    hold_ns: sum,
    /// Longest sampled hold, in nanoseconds.
    max_hold_ns: max,
    /// Times a waiter gave its CPU away with a yield (`sched_yield`) during its wait. Last in
    /// the list (as `yield_ns`), so that a version-1 dump, written before they were counted,
    /// still reads (see [`DUMP_MAGIC`](super::DUMP_MAGIC)).
    yields: sum,
    /// Wall time those yields took, in nanoseconds: while a yield lasts, the CPU runs the
    /// other threads runnable on it, so this is the part of the wait spent waiting for a turn
    /// on the CPU (see `wait_ns`).
    yield_ns: sum,
}

impl Counters {
    /// Average wait of a contended acquisition, in nanoseconds (0 if none).
    pub fn avg_wait_ns(&self) -> u64 {
        self.wait_ns.checked_div(self.contended).unwrap_or(0)
    }

    /// Average sampled hold time, in nanoseconds (0 if none was sampled).
    pub fn avg_hold_ns(&self) -> u64 {
        self.hold_ns.checked_div(self.hold_samples).unwrap_or(0)
    }

    /// Whether nothing was recorded: no acquisition, no contention, no sampled hold.
    pub(crate) fn is_zero(&self) -> bool {
        self.acquisitions == 0 && self.contended == 0 && self.hold_samples == 0
    }
}

/// One contended acquisition (or timed-out attempt) of a lock: what lockstat adds to the
/// lock's counters (and its call site's) for it. scalelock's own locks fill it in as they
/// wait; a lock of your own reports one through [`raw::waited`](super::raw::waited).
///
/// ```
/// use scalelock::stats::Wait;
///
/// let w = Wait { wait_ns: 3_000, yields: 2, yield_ns: 2_500, ..Default::default() };
/// assert!(w.ok, "a wait ends with the lock unless it says otherwise");
/// assert_eq!(w.sleeps, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// How long the wait took, in nanoseconds.
    pub wait_ns: u64,
    /// How much of it was spent spinning, in nanoseconds (calibrated spin time).
    pub spun_ns: u64,
    /// Times the waiter went to sleep.
    pub sleeps: u64,
    /// Times the waiter gave its CPU away with a yield.
    pub yields: u64,
    /// Wall time those yields took, in nanoseconds.
    pub yield_ns: u64,
    /// The lock was handed over to the waiter.
    pub handoff: bool,
    /// The wait ended with the lock (false: it timed out).
    pub ok: bool,
}

impl Default for Wait {
    /// A wait of no time that ended with the lock.
    fn default() -> Wait {
        Wait {
            wait_ns: 0,
            spun_ns: 0,
            sleeps: 0,
            yields: 0,
            yield_ns: 0,
            handoff: false,
            ok: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scalars_are_the_fields_in_order() {
        let mut c = Counters::default();
        for (i, (_, v)) in c.scalars_mut().into_iter().enumerate() {
            *v = i as u64 + 1;
        }
        let expected = Counters {
            acquisitions: 1,
            contended: 2,
            timeouts: 3,
            spin_ns: 4,
            sleeps: 5,
            handoffs: 6,
            wait_ns: 7,
            max_wait_ns: 8,
            hold_samples: 9,
            hold_ns: 10,
            max_hold_ns: 11,
            yields: 12,
            yield_ns: 13,
            wait_histogram: [0; HIST_BUCKETS],
        };
        assert_eq!(c, expected);
        let names: Vec<&str> = c.scalars().iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            [
                "acquisitions",
                "contended",
                "timeouts",
                "spin_ns",
                "sleeps",
                "handoffs",
                "wait_ns",
                "max_wait_ns",
                "hold_samples",
                "hold_ns",
                "max_hold_ns",
                "yields",
                "yield_ns"
            ]
        );
    }

    #[test]
    fn merge_sums_and_keeps_maxima() {
        let mut a = Counters::default();
        let mut b = Counters::default();
        for (i, ((_, x), (_, y))) in a.scalars_mut().into_iter().zip(b.scalars_mut()).enumerate() {
            *x = 10 * i as u64;
            *y = 100 - i as u64;
        }
        a.wait_histogram[3] = 2;
        b.wait_histogram[3] = 5;
        let (before, other) = (a, b);
        a.merge(&b);
        for (((name, m), (_, x)), (_, y)) in a
            .scalars()
            .into_iter()
            .zip(before.scalars())
            .zip(other.scalars())
        {
            let want = if name.starts_with("max_") {
                x.max(y)
            } else {
                x + y
            };
            assert_eq!(m, want, "{name}");
        }
        assert_eq!(a.wait_histogram[3], 7);
    }
}
