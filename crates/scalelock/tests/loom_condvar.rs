//! Loom models of the condvar protocol: no lost notification, `notify_all`'s requeue onto the
//! mutex, and the exact counts `notify_one` / `notify_all` return.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test loom_condvar`.
#![cfg(loom)]

mod common;

use common::model::{join_all, model_with_preemptions, spawn_each, spawn_on};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use scalelock::wait::Deadline;
use scalelock::{Condvar, RawMutex};
use std::time::Duration;

struct Shared {
    lock: RawMutex,
    cv: Condvar,
    ready: UnsafeCell<bool>,
    woke: UnsafeCell<u32>,
    /// Threads between entering `wait_raw` and returning from it (changed under `lock`).
    inside: UnsafeCell<usize>,
}

// SAFETY: the cells are only touched while `lock` is held.
unsafe impl Sync for Shared {}

fn waiter(s: &Shared) {
    s.lock.lock();
    // SAFETY: the lock is held whenever the cells are read or written.
    while !s.ready.with(|r| unsafe { *r }) {
        // SAFETY: this thread holds `lock`.
        unsafe { s.cv.wait_raw(&s.lock, None) };
    }
    // SAFETY: the lock is held.
    s.woke.with_mut(|w| unsafe { *w += 1 });
    // SAFETY: held since the loop.
    unsafe { s.lock.unlock() };
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: RawMutex::new(),
        cv: Condvar::new(),
        ready: UnsafeCell::new(false),
        woke: UnsafeCell::new(0),
        inside: UnsafeCell::new(0),
    })
}

fn set_ready(s: &Shared) {
    s.lock.lock();
    // SAFETY: the lock is held.
    s.ready.with_mut(|r| unsafe { *r = true });
    // SAFETY: locked above.
    unsafe { s.lock.unlock() };
}

#[test]
fn notify_one_is_never_lost() {
    loom::model(|| {
        let s = shared();
        let t = spawn_on(&s, waiter);
        set_ready(&s);
        s.cv.notify_one();
        t.join().unwrap();
    });
}

/// `waiters` threads wait; `notify_all` while holding the mutex, the usual pattern: the waiters
/// it requeues onto the mutex must each get it after.
fn notify_all_under_the_mutex_wakes_every_waiter(waiters: usize, preemptions: usize) {
    model_with_preemptions(preemptions, move || {
        let s = shared();
        let ts = spawn_each(waiters, &s, waiter);
        s.lock.lock();
        // SAFETY: the lock is held.
        s.ready.with_mut(|r| unsafe { *r = true });
        s.cv.notify_all();
        // SAFETY: locked above.
        unsafe { s.lock.unlock() };
        join_all(ts);
        // SAFETY: all threads joined.
        assert_eq!(s.woke.with(|w| unsafe { *w }), waiters as u32);
    });
}

#[test]
fn notify_all_wakes_both_waiters_through_the_requeue() {
    notify_all_under_the_mutex_wakes_every_waiter(2, 2);
}

#[test]
fn notify_all_without_holding_the_mutex_still_wakes_everyone() {
    model_with_preemptions(2, || {
        let s = shared();
        let ts = spawn_each(2, &s, waiter);
        set_ready(&s);
        s.cv.notify_all();
        join_all(ts);
    });
}

#[test]
fn notify_all_passes_the_mutex_along_a_chain_of_three_requeued_waiters() {
    notify_all_under_the_mutex_wakes_every_waiter(3, 1);
}

/// Waits like `waiter`, counting itself in `inside` while inside `wait_raw`.
fn counted_waiter(s: &Shared) {
    s.lock.lock();
    // SAFETY (cells): the lock is held whenever they are read or written.
    while !s.ready.with(|r| unsafe { *r }) {
        s.inside.with_mut(|n| unsafe { *n += 1 });
        // SAFETY: this thread holds `lock`.
        unsafe { s.cv.wait_raw(&s.lock, None) };
        s.inside.with_mut(|n| unsafe { *n -= 1 });
    }
    // SAFETY: held since the loop.
    unsafe { s.lock.unlock() };
}

#[test]
fn notify_all_returns_exactly_the_number_of_threads_inside_wait() {
    model_with_preemptions(2, || {
        let s = shared();
        let ts = spawn_each(2, &s, counted_waiter);
        s.lock.lock();
        // SAFETY: the lock is held.
        s.ready.with_mut(|r| unsafe { *r = true });
        let inside = s.inside.with(|n| unsafe { *n });
        assert_eq!(s.cv.notify_all(), inside);
        // SAFETY: locked above.
        unsafe { s.lock.unlock() };
        join_all(ts);
    });
}

#[test]
fn notify_one_claims_a_timed_waiter_exactly_when_it_reports_a_notification() {
    loom::model(|| {
        let s = shared();
        let t = spawn_on(&s, |s2| {
            s2.lock.lock();
            // SAFETY (cells): the lock is held.
            s2.inside.with_mut(|n| unsafe { *n = 1 });
            let deadline = Deadline::after(Duration::from_secs(1));
            // SAFETY: this thread holds `lock`.
            let notified = unsafe { s2.cv.wait_raw(&s2.lock, Some(&deadline)) };
            s2.inside.with_mut(|n| unsafe { *n = 0 });
            // SAFETY: held again after the wait.
            unsafe { s2.lock.unlock() };
            notified
        });
        s.lock.lock();
        // SAFETY: the lock is held.
        let inside = s.inside.with(|n| unsafe { *n }) == 1;
        let claimed = inside && s.cv.notify_one();
        // SAFETY: locked above.
        unsafe { s.lock.unlock() };
        // A waiter inside `wait` is claimed unless its deadline made it leave first; either
        // way the notifier's answer and the waiter's agree.
        assert_eq!(t.join().unwrap(), claimed);
    });
}
