//! The wait layer: one place where every scalelock lock spins and sleeps.
//!
//! - `futex`: sleep on and wake a 32-bit word (the only OS-specific file; a loom model stands in
//!   for it under `--cfg loom`). Not public API: reachable, hidden, for scalelock's own preload
//!   library, whose condition variable sleeps on words of its own.
//! - [`Deadline`]: absolute deadlines on the monotonic or the real-time clock (and, under loom,
//!   the model's virtual clock).
//! - [`Spinner`], [`SpinEstimate`], [`SpinPolicy`]: calibrated spinning with backoff, a learned
//!   per-lock budget, and the process-wide policy (`SCALELOCK_SPIN`).
//! - [`spin_until`]: a wait that never sleeps, for a condition nobody can sleep on (a
//!   process-shared spinlock word) or a mode that spins by definition.
//! - `look` (crate-internal): a load of a lock word, timed to tell whether its cache line came
//!   from another CPU ([`looks_are_timed`] says whether this build and CPU can).
//! - `cadence` (crate-internal): how often this thread waits; a thread that waits seldom does
//!   not yield.
//! - `Waiter` (crate-internal): one wait of one thread for one lock. Every lock's contended path
//!   asks it whether to spin once more and sleeps through it; it owns the spinner, the learning,
//!   the deadline and the lockstat record of the wait.
//!
//! Locks compose these; none has its own spin loop, futex call or deadline check.

mod awake;
mod cadence;
mod deadline;
mod look;
mod spin;
mod waiter;

#[cfg(loom)]
#[path = "futex_loom.rs"]
#[doc(hidden)]
pub mod futex;
#[cfg(not(loom))]
#[doc(hidden)]
pub mod futex;

pub use awake::{spin_until, Awake};
pub use deadline::{now_ns, Clock, Deadline};
#[cfg(all(test, not(loom)))]
pub(crate) use look::all_far;
pub use look::looks_are_timed;
pub use spin::{
    note_wake, note_woken, pause_ps, set_spin_policy, spin_policy, wake_latency_ns, SpinBudget,
    SpinEstimate, SpinPolicy, SpinPolicyParseError, Spinner, MAX_ADAPTIVE_SPIN_NS,
};
#[cfg(all(test, not(loom)))]
pub(crate) use waiter::DECLINES;
pub(crate) use waiter::{rotate_outside_wait, Subject, Waiter};

#[cfg(test)]
mod tests;
