//! Timed looks: a load of a lock word that also tells whether its cache line had to come from
//! another CPU.
//!
//! A waiter spinning on a held lock reads the lock's word again and again. A read of a line that
//! nobody writes costs nobody anything: the waiter's copy stays valid and the holder's stays
//! shared. A read costs the holder only when the holder writes the line: its next write must
//! fetch the line back from the waiter's CPU (a cross-CPU round trip). A lock whose word is
//! written while a waiter spins on it is a lock that is being released and re-taken (or whose
//! flags are being set) under the waiter's eyes, faster than the waiter catches it; each of its
//! looks then takes the line away from the threads that use it.
//!
//! [`look`] tells the two apart by timing the load: a hit in the waiter's own cache costs a few
//! nanoseconds, a line fetched from another CPU's cache costs tens to hundreds. A look that took
//! more than [`MOVED_NS`] longer than a hit found a line that another CPU had written since the
//! waiter's previous look. The time comes from the CPU's time-stamp counter, fenced so that it
//! brackets the load and nothing else; the threshold is calibrated once per process, the first
//! time a look is timed. Some counters (a VM's, often) advance in steps of many ticks, so
//! that a look's time is a whole number of steps: the threshold is [`MOVED_NS`] rounded to the
//! nearest step, so that which looks read as moved is the same in every process (rounded to a
//! tick, a look that took a whole number of steps near `MOVED_NS` over a hit read as moved in
//! some processes and not in others, by how the counter's measured rate had rounded).
//!
//! A look also tells whether a moved line came from *far*: from a CPU that shares no cache level
//! with this one, so that the transfer took longer than a load from memory (timed once, at
//! calibration, on a line flushed out of every cache). Such a transfer crosses the boundary that
//! a NUMA-aware lock keeps its lock from crossing (lock cohorting, CNA): a lock taken there
//! drags its line and its data across it, and back when the next thread takes it.
//!
//! Only x86-64 has a counter fine enough for this and cheap enough to read on every look.
//! Elsewhere (and under loom and Miri) a look is a plain load and never reports a moved line,
//! so a waiter there spins its learned budget without this signal (the probe yield still cuts
//! the spin short when threads outnumber CPUs).

use crate::sync::{AtomicU32, Ordering};
use core::sync::atomic::AtomicU64 as GlobalU64;

/// A look that took this much longer than a cache hit fetched its line from another CPU: more
/// than any hit (in the cache levels a spinning thread's own line can sit in), less than a
/// transfer between two cores' caches.
pub(crate) const MOVED_NS: u64 = 20;

/// Time-stamp-counter ticks above which a look fetched a moved line; 0 until calibrated,
/// `u64::MAX` where looks are not timed.
static MOVED_TICKS: GlobalU64 = GlobalU64::new(0);

/// Time-stamp-counter ticks per microsecond; 0 until calibrated (and where looks are not timed).
static TICKS_PER_US: GlobalU64 = GlobalU64::new(0);

/// Time-stamp-counter ticks above which a moved line came from far: the fastest of a few timed
/// loads from memory. `u64::MAX` where looks are not timed, or where memory was not measurably
/// slower than a moved line's threshold. Stored before [`MOVED_TICKS`]; a look that reads the
/// one and not yet the other reads no line as far.
static FAR_TICKS: GlobalU64 = GlobalU64::new(u64::MAX);

/// A look at a word: its value, and whether its line came from another CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Look {
    /// The word's value.
    pub(crate) value: u32,
    /// The load fetched a line another CPU had written since this CPU last read it.
    pub(crate) moved: bool,
    /// The moved line came from far: the load took longer than one from memory.
    pub(crate) far: bool,
    /// How long the load took, in time-stamp-counter ticks (0 where looks are not timed; see
    /// [`ticks_ns`]).
    pub(crate) took: u64,
    /// The time-stamp counter when the look began (0 where looks are not timed): a clock
    /// reading that the waiter may use as a coin, since when a look happens is not tied to
    /// the counter's low bits.
    pub(crate) at: u64,
}

/// Nanoseconds in `ticks` of the time-stamp counter (0 where looks are not timed).
#[inline]
pub(crate) fn ticks_ns(ticks: u64) -> u64 {
    match TICKS_PER_US.load(Ordering::Relaxed) {
        0 => 0,
        per_us => ticks.saturating_mul(1_000) / per_us,
    }
}

/// Loads `word` (relaxed) and times the load; see the module docs.
#[inline]
pub(crate) fn look(word: &AtomicU32) -> Look {
    let threshold = moved_ticks();
    if threshold == u64::MAX {
        return Look {
            value: word.load(Ordering::Relaxed),
            moved: false,
            far: false,
            took: 0,
            at: 0,
        };
    }
    let t0 = ticks();
    let value = word.load(Ordering::Relaxed);
    let took = ticks().wrapping_sub(t0);
    Look {
        value,
        moved: took > threshold,
        far: took > threshold && (took > FAR_TICKS.load(Ordering::Relaxed) || all_far_now()),
        took,
        at: t0,
    }
}

/// Whether looks are timed in this build and on this CPU (see the module docs).
///
/// ```
/// // On x86-64 the time-stamp counter times every look; elsewhere looks are plain loads.
/// let timed = scalelock::wait::looks_are_timed();
/// assert_eq!(timed, cfg!(target_arch = "x86_64"));
/// ```
pub fn looks_are_timed() -> bool {
    moved_ticks() != u64::MAX
}

#[inline]
fn moved_ticks() -> u64 {
    let t = MOVED_TICKS.load(Ordering::Relaxed);
    if t != 0 {
        t
    } else {
        calibrate()
    }
}

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
#[inline(always)]
fn ticks() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: LFENCE and RDTSC exist on every x86-64 CPU and touch no memory. The fences keep
    // the counter read from moving across the load being timed: the one before waits for
    // earlier instructions (the previous load among them) to complete, the one after keeps
    // later instructions from starting before the counter is read.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
#[inline(always)]
fn ticks() -> u64 {
    0
}

/// Measures what a hit costs (the fastest of a few timed loads of a word only this thread
/// uses) and how many ticks make a nanosecond, and stores the threshold.
#[cold]
fn calibrate() -> u64 {
    let threshold = if cfg!(all(target_arch = "x86_64", not(loom), not(miri))) {
        // A plain atomic: only timed builds get here, and loom's would be a model object.
        let local = core::sync::atomic::AtomicU32::new(0);
        let mut hit = u64::MAX;
        let mut step = 0;
        for _ in 0..32 {
            let t0 = ticks();
            let _ = local.load(core::sync::atomic::Ordering::Relaxed);
            let took = ticks().wrapping_sub(t0);
            hit = hit.min(took);
            step = gcd(step, took);
        }
        // Ticks per nanosecond, over a window long enough for the clock's own cost (tens of
        // nanoseconds a read) not to matter.
        const WINDOW_NS: u64 = 4_000;
        let n0 = super::now_ns();
        let t0 = ticks();
        let mut n1 = n0;
        while n1.saturating_sub(n0) < WINDOW_NS {
            n1 = super::now_ns();
        }
        let ticks_elapsed = ticks().wrapping_sub(t0);
        let ns_elapsed = n1.saturating_sub(n0).max(1);
        let step = gcd(step, ticks_elapsed).max(1);
        // A counter slower than 100 MHz or faster than 100 GHz is not one to time a load with
        // (a preemption inside the window stretches both clocks alike, so it is not the cause):
        // leave looks untimed.
        if ticks_elapsed < ns_elapsed / 10 || ticks_elapsed > ns_elapsed * 100 {
            u64::MAX
        } else {
            let moved = moved_threshold(hit, ticks_elapsed, ns_elapsed, step);
            TICKS_PER_US.store(
                (ticks_elapsed.saturating_mul(1_000) / ns_elapsed).max(1),
                Ordering::Relaxed,
            );
            let memory = memory_ticks();
            if memory > moved {
                FAR_TICKS.store(memory, Ordering::Relaxed);
            }
            moved
        }
    } else {
        u64::MAX
    };
    MOVED_TICKS.store(threshold, Ordering::Relaxed);
    threshold
}

/// The threshold a look's ticks must exceed to read as moved, for a hit of `hit` ticks on a
/// counter that advanced `ticks` in `ns` nanoseconds in steps of `step` ticks: a look's time is
/// a whole number of steps, so `MOVED_NS` is too, rounded to the nearest step, and a look
/// reads as moved where it took at least that much longer than a hit (at least one step).
/// Rounded down to a tick instead, the threshold fell just below or just at a step by how the
/// measured rate rounded in a process.
fn moved_threshold(hit: u64, ticks: u64, ns: u64, step: u64) -> u64 {
    let per_step_ns = ns.saturating_mul(step).max(1);
    let steps = (MOVED_NS.saturating_mul(ticks) + per_step_ns / 2) / per_step_ns;
    hit.saturating_add(steps.max(1).saturating_mul(step))
        .saturating_sub(1)
}

/// The greatest common divisor of `a` and `b` (`b` where `a` is 0): the step a counter's
/// readings advance in is the greatest common divisor of the differences between them.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// For tests: every moved line reads as far while this is set (see [`all_far`]).
#[cfg(test)]
static ALL_FAR: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether every moved line reads as far now (never outside tests).
#[inline(always)]
fn all_far_now() -> bool {
    #[cfg(test)]
    return ALL_FAR.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    return false;
}

/// For tests: every moved line reads as far until the guard is dropped, so that a lock's far
/// path runs wherever its line moves (whatever this machine's caches are like).
#[cfg(all(test, not(loom)))]
pub(crate) struct AllFar;

/// See [`AllFar`].
#[cfg(all(test, not(loom)))]
pub(crate) fn all_far() -> AllFar {
    ALL_FAR.store(true, core::sync::atomic::Ordering::Relaxed);
    AllFar
}

#[cfg(all(test, not(loom)))]
impl Drop for AllFar {
    fn drop(&mut self) {
        ALL_FAR.store(false, core::sync::atomic::Ordering::Relaxed);
    }
}

/// The fastest of a few timed loads of a line flushed out of every cache first: what a load
/// from memory costs (timed builds on x86-64 only).
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
fn memory_ticks() -> u64 {
    use core::arch::x86_64::{_mm_clflush, _mm_mfence};
    // A line of its own, so that flushing it evicts nobody else's data.
    #[repr(align(64))]
    struct Line(core::sync::atomic::AtomicU32);
    static LINE: Line = Line(core::sync::atomic::AtomicU32::new(0));
    let mut fastest = u64::MAX;
    for _ in 0..8 {
        // SAFETY: CLFLUSH and MFENCE exist on every x86-64 CPU (SSE2). CLFLUSH takes any
        // address of a mapped byte, here the start of a live static, and only writes the line
        // back to memory and evicts it, which changes no value; the fence orders the flush
        // before the timed load.
        unsafe {
            _mm_clflush(LINE.0.as_ptr().cast::<u8>());
            _mm_mfence();
        }
        let t0 = ticks();
        let _ = LINE.0.load(core::sync::atomic::Ordering::Relaxed);
        fastest = fastest.min(ticks().wrapping_sub(t0));
    }
    fastest
}

#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
fn memory_ticks() -> u64 {
    u64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_returns_the_value_and_a_private_word_has_not_moved() {
        let w = AtomicU32::new(7);
        // Warm the line into this CPU's cache; an interrupt can make any one look slow, and
        // other tests running beside this one can slow a whole batch of looks on a VM's shared
        // core, so ask only that in one of a few batches most looks at a word nobody else
        // writes see it unmoved.
        let _ = look(&w);
        let mut batches = Vec::new();
        for _ in 0..5 {
            let unmoved = (0..64).filter(|_| !look(&w).moved).count();
            batches.push(unmoved);
            if unmoved > 32 {
                break;
            }
        }
        assert_eq!(look(&w).value, 7);
        assert!(
            batches.iter().any(|&u| u > 32),
            "looks at a private word unmoved, of 64 per batch: {batches:?}"
        );
    }

    #[test]
    fn a_far_look_is_a_moved_one_and_ticks_convert_to_nanoseconds() {
        let w = AtomicU32::new(1);
        let _ = look(&w);
        // A far line is a moved one: a hit, however slow an interrupt makes it, is far only if
        // it also read as moved.
        for _ in 0..64 {
            let l = look(&w);
            assert!(!l.far || l.moved, "{l:?}");
        }
        if looks_are_timed() {
            let per_us = TICKS_PER_US.load(Ordering::Relaxed);
            assert!(per_us > 0, "calibrated");
            assert_eq!(ticks_ns(per_us * 3), 3_000);
            let far_ticks = FAR_TICKS.load(Ordering::Relaxed);
            assert!(
                far_ticks == u64::MAX || far_ticks > MOVED_TICKS.load(Ordering::Relaxed),
                "a far line is one that took longer than a moved one's threshold"
            );
        } else {
            assert_eq!(ticks_ns(1_000), 0);
        }
    }

    #[test]
    fn a_counters_step_is_the_greatest_common_divisor_of_its_differences() {
        // (differences between readings, the step they show)
        let cases: [(&[u64], u64); 5] = [
            (&[52, 52, 78, 10_374], 26),
            (&[52, 52, 52], 52),
            (&[31, 33, 10_381], 1),
            (&[0, 0, 40], 40),
            (&[], 0),
        ];
        for (differences, step) in cases {
            assert_eq!(
                differences.iter().fold(0, |g, &d| gcd(g, d)),
                step,
                "{differences:?}"
            );
        }
    }

    #[test]
    fn the_moved_threshold_is_moved_ns_in_whole_steps_of_the_counter() {
        // (hit, ticks, ns, step: the threshold a moved look's ticks exceed)
        let cases = [
            // A 2.6 GHz counter in steps of 26: 20 ns is two steps, whether its rate measured
            // a little under or over 2.6 per ns.
            ((52, 10_364, 4_000, 26), 52 + 52 - 1),
            ((52, 10_400, 4_000, 26), 52 + 52 - 1),
            ((52, 10_416, 4_000, 26), 52 + 52 - 1),
            // A counter that advances every tick: 20 ns of ticks, rounded.
            ((30, 12_000, 4_000, 1), 30 + 60 - 1),
            ((30, 12_010, 4_000, 1), 30 + 60 - 1),
            // Steps longer than twice `MOVED_NS`: one step over a hit.
            ((100, 40_000, 4_000, 500), 100 + 500 - 1),
        ];
        for ((hit, ticks, ns, step), threshold) in cases {
            assert_eq!(
                moved_threshold(hit, ticks, ns, step),
                threshold,
                "{hit} {ticks} {ns} {step}"
            );
        }
    }

    #[test]
    fn looks_are_timed_on_x86_64_and_plain_loads_elsewhere() {
        // A machine whose counter fails calibration (slower than 100 MHz, or not advancing)
        // fails this test on x86-64: its waiters would go without the signal.
        assert_eq!(
            looks_are_timed(),
            cfg!(all(target_arch = "x86_64", not(miri)))
        );
    }
}
