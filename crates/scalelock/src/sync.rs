//! Atomics used by every lock protocol: `core`'s in normal builds, loom's under `--cfg loom`, so the
//! same protocol code is model-checked.

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

#[allow(unused_imports)]
pub(crate) use core::sync::atomic::{fence, Ordering};
