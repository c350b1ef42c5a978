//! lock_api's rwlock traits for [`RawBiasedRwLock`], forwarded by the macro both raw rwlocks
//! share.

use super::RawBiasedRwLock;
use crate::rwlock::api::impl_raw_rwlock;

// SAFETY (of the forwarded methods): a writer holds the underlying write lock (excluding
// slow-path readers, upgradable readers and writers) and has revoked the bias and seen every
// slot naming this lock empty after the revocation, so no deferred reader is inside (the Dekker
// pair in the protocol's docs); deferred readers enter only while the bias is on, which only the
// underlying read lock's holders turn on. Upgradable locks are the underlying lock's; an upgrade
// revokes the bias and waits for deferred readers exactly like a writer; a timed-out revocation
// restores the bias and releases the underlying write lock without entering. Guards are not
// Send: the per-thread record of deferred read locks must be released by the thread that took
// them. A timed acquisition does not try first without its deadline: a failed `try_*` here may
// already have revoked the bias.
impl_raw_rwlock!(
    RawBiasedRwLock,
    guard = lock_api::GuardNoSend,
    quick_try = false
);
