//! Atomics used by every lock protocol: `core`'s in normal builds, loom's under `--cfg loom`, so the
//! same protocol code is model-checked.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize};

pub(crate) use core::sync::atomic::Ordering;
