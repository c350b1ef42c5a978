//! Loom model of a timed `RawRwLock` writer that readers keep out, under every spin policy.
//! The policy is process-wide, so this model lives in a test binary of its own: the other
//! rwlock models (`loom_rwlock.rs`) run in parallel threads of their process and must not see
//! it change under them.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test
//! loom_rwlock_policies`.
#![cfg(loom)]

mod common;

use common::model::spawn_on;
use scalelock::wait::{set_spin_policy, Deadline, SpinPolicy};
use scalelock::RawRwLock;
use std::time::Duration;

/// Seconds to a deadline that no model reaches (see `common::model::far`).
const FAR: u64 = 3600;
/// Seconds to a deadline that under loom has passed from the start (loom's virtual clock
/// counts the timed waits that returned).
const PASSED: u64 = 0;

type Shared = common::model::Shared<RawRwLock>;

#[test]
fn a_timed_writer_kept_out_by_readers_strands_nobody_under_every_policy() {
    // A writer kept out by a reader announces itself (`WRITERS_WAITING | DRAIN`) before it
    // sleeps, and under `Always` before it spins as well; a second reader then waits for it.
    // The timed writer may take the lock or give up, and giving up must leave neither the
    // second reader nor a later writer stranded; the counter checks exclusion. Under loom a
    // spin is one step (then every policy's writer sleeps), and a deadline passes when loom
    // ends a timed wait; a second run gives the writer a deadline passed from the start, so
    // that it gives up before it sleeps (under `Always`, right after it announced itself).
    let policies = [
        SpinPolicy::Never,
        SpinPolicy::Fixed(500),
        SpinPolicy::Always,
        SpinPolicy::Adaptive,
    ];
    for (policy, patience) in policies.into_iter().flat_map(|p| [(p, FAR), (p, PASSED)]) {
        set_spin_policy(policy);
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(move || {
            let s = Shared::new();
            s.lock.lock_shared();
            let tw = spawn_on(&s, move |s: &Shared| {
                let deadline = Deadline::after(Duration::from_secs(patience));
                if s.lock.try_lock_exclusive_until(&deadline) {
                    s.add(1);
                    // SAFETY: this thread holds the write lock it releases here.
                    unsafe { s.lock.unlock_exclusive() };
                    1
                } else {
                    0
                }
            });
            let r = spawn_on(&s, |s: &Shared| s.read());
            // SAFETY: this thread holds the read lock it releases here.
            unsafe { s.lock.unlock_shared() };
            let wrote = tw.join().unwrap();
            let seen = r.join().unwrap();
            assert!(seen <= wrote, "under {policy:?}, {patience} s");
            s.write();
            assert_eq!(s.read(), wrote + 1, "under {policy:?}, {patience} s");
        });
    }
    set_spin_policy(SpinPolicy::Adaptive);
}
