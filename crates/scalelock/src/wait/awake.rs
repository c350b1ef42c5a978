//! Waiting awake: for a condition no thread can sleep on.
//!
//! Some waits cannot use a futex. A `pthread_spinlock_t` is four bytes that may be shared with
//! a process that does not run scalelock, with no room to announce a sleeper; a comparison mode
//! (`SCALELOCK_LOCK=spin` in the preload library) spins by definition. [`spin_until`] is that
//! wait, kept in the wait layer so that no caller writes its own spin loop: calibrated backoff
//! between looks (a [`Spinner`]), optionally a yield of the CPU after each
//! [`MAX_ADAPTIVE_SPIN_NS`] of spinning (when threads outnumber CPUs, a holder that was
//! preempted then gets to run instead of waiting behind spinners), and the deadline looked at
//! every few steps.

use super::spin::{yield_cpu, DEADLINE_CHECK_EVERY};
use super::{Deadline, SpinBudget, Spinner, MAX_ADAPTIVE_SPIN_NS};

/// Whether a [`spin_until`] wait gives its CPU away now and then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Awake {
    /// Spin only, never yield (a pure spinlock: for comparison modes).
    Spin,
    /// Yield the CPU after each [`MAX_ADAPTIVE_SPIN_NS`] of spinning, then spin again.
    SpinThenYield,
}

/// Waits without sleeping until `ready()` returns true (true) or `deadline` passes (false).
///
/// `ready` is called first, before any spinning, and again after every backoff step; it may
/// take what it waits for (a compare-exchange on a lock word, say). A deadline that has passed
/// is noticed within a few steps; without one the wait lasts until `ready` says so.
///
/// ```
/// use scalelock::wait::{spin_until, Awake, Deadline};
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
///
/// let flag = AtomicBool::new(false);
/// std::thread::scope(|s| {
///     s.spawn(|| flag.store(true, Ordering::Release));
///     assert!(spin_until(|| flag.load(Ordering::Acquire), Awake::SpinThenYield, None));
/// });
///
/// let soon = Deadline::after(Duration::from_millis(1));
/// assert!(!spin_until(|| false, Awake::Spin, Some(&soon)));
/// ```
pub fn spin_until(
    mut ready: impl FnMut() -> bool,
    awake: Awake,
    deadline: Option<&Deadline>,
) -> bool {
    let budget = match awake {
        Awake::Spin => SpinBudget::Unbounded,
        Awake::SpinThenYield => SpinBudget::Nanos(MAX_ADAPTIVE_SPIN_NS),
    };
    let mut unchecked = 0u32;
    loop {
        let mut spinner = Spinner::new(budget);
        loop {
            if ready() {
                return true;
            }
            if let Some(d) = deadline {
                unchecked += 1;
                if unchecked >= DEADLINE_CHECK_EVERY {
                    unchecked = 0;
                    if d.has_passed() {
                        return false;
                    }
                }
            }
            if !spinner.spin() {
                break;
            }
        }
        yield_cpu();
    }
}
