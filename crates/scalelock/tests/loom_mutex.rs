//! Loom models of the mutex protocol: mutual exclusion, no lost wake-up, no stranded hand-off.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test loom_mutex`.
#![cfg(loom)]

mod common;

use common::mutex_model::{increment, shared, total};

use loom::sync::Arc;
use loom::thread;
use scalelock::wait::Deadline;
use std::time::Duration;

#[test]
fn two_threads_exclude_each_other_and_both_finish() {
    loom::model(|| {
        let s = shared();
        let s2 = Arc::clone(&s);
        let t = thread::spawn(move || increment(&s2));
        increment(&s);
        t.join().unwrap();
        assert_eq!(total(&s), 2);
    });
}

#[test]
fn three_threads_no_lost_wakeup() {
    // Under loom a waiter that has slept starves at once (see `Waiter::away_ns`), so a woken
    // waiter that finds the lock held again keeps its vigil (raises STARVING alone, no
    // sleeper announced) before it sleeps as a starving waiter: the model takes the unlock
    // that must clear that flag and wake the sleeper behind it.
    two_threads_increment_while_this_one_increments(1);
}

/// Two spawned threads increment once each while this thread increments `times` times, under
/// a preemption bound of 2; everyone finishes and the count is exact.
fn two_threads_increment_while_this_one_increments(times: u32) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(move || {
        let s = shared();
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = Arc::clone(&s);
                thread::spawn(move || increment(&s))
            })
            .collect();
        for _ in 0..times {
            increment(&s);
        }
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(total(&s), 2 + times);
    });
}

#[test]
fn fair_unlock_hand_off_is_always_taken_or_taken_back() {
    loom::model(|| {
        let s = shared();
        let s2 = Arc::clone(&s);
        let t = thread::spawn(move || increment(&s2));
        s.lock.lock();
        // SAFETY: the lock is held.
        s.value.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: locked above.
        unsafe { s.lock.unlock_fair() };
        increment(&s);
        t.join().unwrap();
        assert_eq!(total(&s), 3);
    });
}

#[test]
fn timed_waiter_giving_up_passes_its_wakeup_on() {
    // The model's deadline passes after the first timed wait returns (woken or not), so the
    // timed waiter goes through the give-up path, possibly holding a consumed wake-up, while the
    // other two hand the lock around.
    timed_waiter_among_two_others(1, 2);
}

#[test]
fn a_starving_waiter_that_gives_up_strands_no_hand_off() {
    // Under loom a waiter that has slept once starves (its clock stands still: see
    // `Waiter::away_ns`), and the model's deadline of two seconds passes after the second
    // timed wait returns: the timed waiter sleeps once, starves (sets STARVING, sleeps in the
    // starving class) and may give up there, or be on its way into the kernel when the lock is
    // released. An unlock that then hands off finds no starving sleeper to wake and must take
    // the hand-off back and release, waking the plain sleeper. (That path needs three
    // preemptions: at two, the model never reaches it.)
    timed_waiter_among_two_others(2, 3);
}

/// A waiter with a deadline of `secs` model seconds (timed waits that return), one that
/// increments without one, and this thread incrementing twice (the second acquisition can barge
/// in between a wake-up and a give-up), under a preemption bound of `preemptions`: everyone
/// finishes, and the count is exact.
fn timed_waiter_among_two_others(secs: u64, preemptions: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(move || {
        let s = shared();
        let s2 = Arc::clone(&s);
        let s3 = Arc::clone(&s);
        let timed = thread::spawn(move || {
            let d = Deadline::after(Duration::from_secs(secs));
            if s3.lock.try_lock_until(&d) {
                // SAFETY: the lock is held.
                s3.value.with_mut(|v| unsafe { *v += 1 });
                // SAFETY: acquired above.
                unsafe { s3.lock.unlock() };
                1
            } else {
                0
            }
        });
        let plain = thread::spawn(move || increment(&s2));
        increment(&s);
        increment(&s);
        plain.join().unwrap();
        let got = timed.join().unwrap();
        assert_eq!(total(&s), 3 + got);
    });
}

#[test]
fn a_waiter_refused_by_a_lock_taken_again_dozes_and_still_gets_it() {
    // One thread takes the lock twice in a row: a waiter that announced its sleep in between
    // can find the word changed (released and re-taken) when the futex compares it, and dozes.
    // A third thread sleeps on the word meanwhile: the release that cleared the dozer's
    // announcement must still wake it, and everyone finishes.
    two_threads_increment_while_this_one_increments(2);
}
