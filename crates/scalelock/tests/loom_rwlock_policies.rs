//! Loom models of `RawRwLock` writers under the spin policies: a timed writer that readers keep
//! out, under every policy, and two writers under `Always`. The policy is process-wide, so
//! these models live in a test binary of their own: the other rwlock models (`loom_rwlock.rs`)
//! run in parallel threads of their process and must not see it change under them, and the
//! models here take turns (see [`POLICY`]).
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test
//! loom_rwlock_policies`.
#![cfg(loom)]

mod common;

use common::model::{model_with_preemptions, spawn_on, timed_writer};
use scalelock::wait::{set_spin_policy, SpinPolicy};
use scalelock::RawRwLock;

/// Seconds to a deadline that no model reaches (see `common::model::far`).
const FAR: u64 = 3600;
/// Seconds to a deadline that under loom has passed from the start (loom's virtual clock
/// counts the timed waits that returned).
const PASSED: u64 = 0;

type Shared = common::model::Shared<RawRwLock>;

/// Held by each model of this file while it sets the process-wide policy and runs: the test
/// harness runs tests in parallel threads, which must not change the policy under each other.
static POLICY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`POLICY`] for a model's turn (also after another model panicked while holding it:
/// its assertion has failed that test already, and each model sets the policy it runs under).
fn turn() -> std::sync::MutexGuard<'static, ()> {
    POLICY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
    let _turn = turn();
    for (policy, patience) in policies.into_iter().flat_map(|p| [(p, FAR), (p, PASSED)]) {
        set_spin_policy(policy);
        model_with_preemptions(2, move || {
            let s = Shared::new();
            s.lock.lock_shared();
            let tw = timed_writer(&s, patience);
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

#[test]
fn two_writers_under_always_exclude_each_other_and_strand_nobody() {
    // Under `Always` a writer announces itself (`WRITERS_WAITING | DRAIN`) before it spins, and
    // counts itself as having waited even where the other writer's announcement had already
    // set the bits. Two writers queue behind a reader: a timed one, which may give up (and
    // then clears the bits and wakes every writer, the other one's announcement included),
    // and a plain one, which must get the lock whatever the timed one did. The counter checks
    // exclusion and that every write that returned happened; the reader's final write checks
    // that nobody is left holding or announcing. As in the model above, a second run gives
    // the timed writer a deadline passed from the start.
    let _turn = turn();
    set_spin_policy(SpinPolicy::Always);
    for patience in [FAR, PASSED] {
        model_with_preemptions(2, move || {
            let s = Shared::new();
            s.lock.lock_shared();
            let tw = timed_writer(&s, patience);
            let w = spawn_on(&s, |s: &Shared| s.write());
            // SAFETY: this thread holds the read lock it releases here.
            unsafe { s.lock.unlock_shared() };
            let wrote = tw.join().unwrap();
            w.join().unwrap();
            s.write();
            assert_eq!(s.read(), wrote + 2, "{patience} s");
        });
    }
    set_spin_policy(SpinPolicy::Adaptive);
}
