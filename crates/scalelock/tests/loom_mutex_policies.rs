//! Loom model of a timed mutex wait under every spin policy. The policy is process-wide, so
//! this model lives in a test binary of its own: the other mutex models (`loom_mutex.rs`) run in
//! parallel threads of their process and must not see it change under them.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test loom_mutex_policies`.
#![cfg(loom)]

mod common;

use common::mutex_model::{add_one, increment, shared, total};
use loom::sync::Arc;
use scalelock::wait::{set_spin_policy, Deadline, SpinPolicy};
use std::time::Duration;

#[test]
fn a_timed_waiter_ends_with_the_lock_or_its_wakeup_passed_on_under_every_policy() {
    // The waiter's deadline handling differs by policy: `Always` spins whether or not others
    // sleep, `Never` sleeps at once, `Fixed` spins then sleeps, `Adaptive` may also yield where
    // spinning is forbidden. The model's deadline passes after the first timed wait returns, so
    // the timed waiter goes through the give-up path, possibly holding a consumed wake-up, while
    // two other threads hand the lock around: every one of them must finish (no lost wake-up)
    // and the count must add up (exclusion).
    for policy in [
        SpinPolicy::Never,
        SpinPolicy::Fixed(500),
        SpinPolicy::Always,
        SpinPolicy::Adaptive,
    ] {
        set_spin_policy(policy);
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b.check(move || {
            let s = shared();
            let (s2, s3) = (Arc::clone(&s), Arc::clone(&s));
            let timed = loom::thread::spawn(move || {
                let d = Deadline::after(Duration::from_secs(1));
                if s3.lock.try_lock_until(&d) {
                    // SAFETY: acquired just above.
                    unsafe { add_one(&s3) };
                    // SAFETY: acquired above.
                    unsafe { s3.lock.unlock() };
                    1
                } else {
                    0
                }
            });
            let plain = loom::thread::spawn(move || increment(&s2));
            increment(&s);
            increment(&s);
            plain.join().unwrap();
            let got = timed.join().unwrap();
            assert_eq!(total(&s), 3 + got, "under {policy:?}");
        });
    }
    set_spin_policy(SpinPolicy::Adaptive);
}
