//! The mutex models' lock and the counter it protects (tests/loom_mutex*.rs).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use scalelock::RawMutex;

/// A raw mutex and the counter it protects.
pub struct Shared {
    pub lock: RawMutex,
    pub value: UnsafeCell<u32>,
}

// SAFETY: `value` is only touched while `lock` is held.
unsafe impl Sync for Shared {}

/// Adds one to the counter.
///
/// # Safety
/// The caller holds the lock.
pub unsafe fn add_one(s: &Shared) {
    // SAFETY: the caller holds the lock; loom's UnsafeCell checks the accesses don't race.
    s.value.with_mut(|v| unsafe { *v += 1 });
}

/// Takes the lock, adds one, releases it.
pub fn increment(s: &Shared) {
    s.lock.lock();
    // SAFETY: locked just above.
    unsafe { add_one(s) };
    // SAFETY: locked above.
    unsafe { s.lock.unlock() };
}

/// A fresh lock and counter.
pub fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: RawMutex::new(),
        value: UnsafeCell::new(0),
    })
}

/// The counter, once every other thread is joined.
pub fn total(s: &Shared) -> u32 {
    // SAFETY: all other threads are joined.
    s.value.with(|v| unsafe { *v })
}
