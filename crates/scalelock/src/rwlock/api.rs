//! lock_api's rwlock traits for both raw rwlocks ([`RawRwLock`] and
//! [`RawBiasedRwLock`](crate::RawBiasedRwLock)): one macro writes the forwarding from each trait
//! method to the lock's inherent method of the same name, so the two locks cannot drift apart.
//! What each lock must guarantee for the traits to be sound is stated where it invokes the
//! macro.

use super::RawRwLock;

/// Implements `RawRwLock`, `RawRwLockDowngrade`, `RawRwLockTimed`, `RawRwLockRecursive`,
/// `RawRwLockRecursiveTimed`, `RawRwLockUpgrade`, `RawRwLockUpgradeDowngrade` and
/// `RawRwLockUpgradeTimed` for `$lock` by forwarding to its inherent methods (`lock_shared`,
/// `try_lock_shared_until(&Deadline)`, ...), which take the same locks under the same contract.
/// `guard`: the lock's `GuardMarker` (`GuardNoSend` where the lock keeps per-thread records of
/// the read locks a thread holds, which a guard released on another thread would corrupt).
///
/// `quick_try`: whether a timed acquisition first tries without a deadline, which saves the
/// clock read when the lock is free (for a lock whose `try_*` costs no more than the first step
/// of its `try_*_until`).
///
/// The caller states, in a `SAFETY` comment at the invocation, why `$lock`'s inherent methods
/// keep lock_api's promises: a write lock excludes every other lock, read locks exclude only
/// writers, at most one upgradable lock exists and it excludes writers.
macro_rules! impl_raw_rwlock {
    ($lock:ident, guard = $guard:ty, quick_try = $quick:literal) => {
        // SAFETY: forwarding only: each method is the inherent method of the same name, whose
        // soundness the invocation of this macro states; `unsafe` methods pass lock_api's
        // contract (the caller holds the lock it releases, upgrades or downgrades) on unchanged.
        unsafe impl lock_api::RawRwLock for $lock {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: $lock = $lock::new();
            type GuardMarker = $guard;

            #[inline]
            fn lock_shared(&self) {
                $lock::lock_shared(self)
            }

            #[inline]
            fn try_lock_shared(&self) -> bool {
                $lock::try_lock_shared(self)
            }

            #[inline]
            unsafe fn unlock_shared(&self) {
                // SAFETY: lock_api's contract: the caller holds a read lock (taken on this
                // thread: guards are not Send).
                unsafe { $lock::unlock_shared(self) }
            }

            #[inline]
            fn lock_exclusive(&self) {
                $lock::lock_exclusive(self)
            }

            #[inline]
            fn try_lock_exclusive(&self) -> bool {
                $lock::try_lock_exclusive(self)
            }

            #[inline]
            unsafe fn unlock_exclusive(&self) {
                // SAFETY: lock_api's contract: the caller holds the write lock.
                unsafe { $lock::unlock_exclusive(self) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                $lock::is_locked(self)
            }

            #[inline]
            fn is_locked_exclusive(&self) -> bool {
                $lock::is_locked_exclusive(self)
            }
        }

        // SAFETY: as above; the lock's `downgrade` turns the write lock into a read lock in one
        // atomic step, so no writer enters in between.
        unsafe impl lock_api::RawRwLockDowngrade for $lock {
            #[inline]
            unsafe fn downgrade(&self) {
                // SAFETY: lock_api's contract: the caller holds the write lock.
                unsafe { $lock::downgrade(self) }
            }
        }

        // SAFETY: as above; the timed paths take the lock with the same transitions as the
        // untimed ones, and a timed-out attempt leaves nothing held.
        unsafe impl lock_api::RawRwLockTimed for $lock {
            type Duration = std::time::Duration;
            type Instant = std::time::Instant;

            #[inline]
            fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
                ($quick && $lock::try_lock_shared(self))
                    || $lock::try_lock_shared_until(self, &$crate::wait::Deadline::after(timeout))
            }

            #[inline]
            fn try_lock_shared_until(&self, timeout: Self::Instant) -> bool {
                ($quick && $lock::try_lock_shared(self))
                    || $lock::try_lock_shared_until(self, &$crate::wait::Deadline::at(timeout))
            }

            #[inline]
            fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
                ($quick && $lock::try_lock_exclusive(self))
                    || $lock::try_lock_exclusive_until(
                        self,
                        &$crate::wait::Deadline::after(timeout),
                    )
            }

            #[inline]
            fn try_lock_exclusive_until(&self, timeout: Self::Instant) -> bool {
                ($quick && $lock::try_lock_exclusive(self))
                    || $lock::try_lock_exclusive_until(self, &$crate::wait::Deadline::at(timeout))
            }
        }

        // SAFETY: as above; a recursive read lock is an ordinary read lock admitted under a
        // weaker condition (no writer *holds* the lock): it never coexists with a writer.
        unsafe impl lock_api::RawRwLockRecursive for $lock {
            #[inline]
            fn lock_shared_recursive(&self) {
                $lock::lock_shared_recursive(self)
            }

            #[inline]
            fn try_lock_shared_recursive(&self) -> bool {
                $lock::try_lock_shared_recursive(self)
            }
        }

        // SAFETY: as RawRwLockRecursive, with a deadline.
        unsafe impl lock_api::RawRwLockRecursiveTimed for $lock {
            #[inline]
            fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> bool {
                ($quick && $lock::try_lock_shared_recursive(self))
                    || $lock::try_lock_shared_recursive_until(
                        self,
                        &$crate::wait::Deadline::after(timeout),
                    )
            }

            #[inline]
            fn try_lock_shared_recursive_until(&self, timeout: Self::Instant) -> bool {
                ($quick && $lock::try_lock_shared_recursive(self))
                    || $lock::try_lock_shared_recursive_until(
                        self,
                        &$crate::wait::Deadline::at(timeout),
                    )
            }
        }

        // SAFETY: as above; at most one upgradable lock exists and it excludes writers; an
        // upgrade becomes the write lock only once no other reader remains.
        unsafe impl lock_api::RawRwLockUpgrade for $lock {
            #[inline]
            fn lock_upgradable(&self) {
                $lock::lock_upgradable(self)
            }

            #[inline]
            fn try_lock_upgradable(&self) -> bool {
                $lock::try_lock_upgradable(self)
            }

            #[inline]
            unsafe fn unlock_upgradable(&self) {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::unlock_upgradable(self) }
            }

            #[inline]
            unsafe fn upgrade(&self) {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::upgrade(self) }
            }

            #[inline]
            unsafe fn try_upgrade(&self) -> bool {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::try_upgrade(self) }
            }
        }

        // SAFETY: both downgrades are single atomic steps that keep the caller's lock shared.
        unsafe impl lock_api::RawRwLockUpgradeDowngrade for $lock {
            #[inline]
            unsafe fn downgrade_upgradable(&self) {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::downgrade_upgradable(self) }
            }

            #[inline]
            unsafe fn downgrade_to_upgradable(&self) {
                // SAFETY: lock_api's contract: the caller holds the write lock.
                unsafe { $lock::downgrade_to_upgradable(self) }
            }
        }

        // SAFETY: as RawRwLockUpgrade, with a deadline; a timed-out upgrade keeps the
        // upgradable lock.
        unsafe impl lock_api::RawRwLockUpgradeTimed for $lock {
            #[inline]
            fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> bool {
                ($quick && $lock::try_lock_upgradable(self))
                    || $lock::try_lock_upgradable_until(
                        self,
                        &$crate::wait::Deadline::after(timeout),
                    )
            }

            #[inline]
            fn try_lock_upgradable_until(&self, timeout: Self::Instant) -> bool {
                ($quick && $lock::try_lock_upgradable(self))
                    || $lock::try_lock_upgradable_until(self, &$crate::wait::Deadline::at(timeout))
            }

            #[inline]
            unsafe fn try_upgrade_for(&self, timeout: Self::Duration) -> bool {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::try_upgrade_until(self, &$crate::wait::Deadline::after(timeout)) }
            }

            #[inline]
            unsafe fn try_upgrade_until(&self, timeout: Self::Instant) -> bool {
                // SAFETY: lock_api's contract: the caller holds an upgradable lock.
                unsafe { $lock::try_upgrade_until(self, &$crate::wait::Deadline::at(timeout)) }
            }
        }
    };
}

pub(crate) use impl_raw_rwlock;

// SAFETY (of the forwarded methods): WRITER is set only by a successful Acquire CAS from a state
// with no WRITER, UPGRADABLE, readers or READ_TURN (or by an upgrade when the upgrader is the
// only reader), and readers only enter by CAS from a state without WRITER; so a write lock
// excludes every other lock, and read locks exclude only writers. UPGRADABLE is taken by CAS
// from a state without WRITER or UPGRADABLE. Releases use Release ordering.
// `send_guard`: a read guard may be released by another thread; the debug-build record of held
// read locks (`held`), which needs the acquiring thread, is compiled out then.
#[cfg(feature = "send_guard")]
impl_raw_rwlock!(RawRwLock, guard = lock_api::GuardSend, quick_try = true);
#[cfg(not(feature = "send_guard"))]
impl_raw_rwlock!(RawRwLock, guard = lock_api::GuardNoSend, quick_try = true);

// SAFETY: the fair variants release exactly like the plain ones. scalelock's unlock is already
// phase-fair (a write unlock gives waiting readers the next turn, the last reader wakes a
// writer, writers wake in the kernel's FIFO order), so there is no separate hand-off protocol;
// `bump_*` yields only when someone waits.
unsafe impl lock_api::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: lock_api's contract: the caller holds a read lock.
        unsafe { RawRwLock::unlock_shared(self) }
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: lock_api's contract: the caller holds the write lock.
        unsafe { RawRwLock::unlock_exclusive(self) }
    }

    #[inline]
    unsafe fn bump_shared(&self) {
        if self.has_waiters() {
            // SAFETY: the caller holds a read lock (lock_api's contract); it is re-taken at
            // once, behind any waiting writer.
            unsafe { RawRwLock::unlock_shared(self) };
            RawRwLock::lock_shared(self);
        }
    }

    #[inline]
    unsafe fn bump_exclusive(&self) {
        if self.has_waiters() {
            // SAFETY: the caller holds the write lock (lock_api's contract); re-taken at once.
            unsafe { RawRwLock::unlock_exclusive(self) };
            RawRwLock::lock_exclusive(self);
        }
    }
}

// SAFETY: as RawRwLockFair.
unsafe impl lock_api::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: lock_api's contract: the caller holds an upgradable lock.
        unsafe { RawRwLock::unlock_upgradable(self) }
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        if self.has_waiters() {
            // SAFETY: the caller holds an upgradable lock; re-taken at once.
            unsafe { RawRwLock::unlock_upgradable(self) };
            RawRwLock::lock_upgradable(self);
        }
    }
}
