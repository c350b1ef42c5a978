//! The wait layer: one place where every scalelock lock spins and sleeps.
//!
//! - [`futex`]: sleep on and wake a 32-bit word (the only OS-specific file; a loom model stands in
//!   for it under `--cfg loom`).
//! - [`Deadline`]: absolute deadlines on the monotonic or the real-time clock.
//! - [`Spinner`], [`SpinEstimate`], [`SpinPolicy`]: calibrated spinning with backoff, a learned
//!   per-lock budget, and the process-wide policy (`SCALELOCK_SPIN`).
//!
//! Locks compose these; none has its own spin loop or futex call.

mod deadline;
mod spin;

#[cfg(loom)]
#[path = "futex_loom.rs"]
pub mod futex;
#[cfg(not(loom))]
pub mod futex;

pub use deadline::{now_ns, Clock, Deadline};
pub use spin::{
    note_wake, note_woken, pause_ps, set_spin_policy, spin_policy, wake_latency_ns, SpinBudget,
    SpinEstimate, SpinPolicy, SpinPolicyParseError, Spinner, EXPLORE_EVERY, MAX_ADAPTIVE_SPIN_NS,
    MIN_PROBE_NS,
};
