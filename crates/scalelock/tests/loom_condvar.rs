//! Loom models of the condvar protocol, including `notify_all`'s requeue onto the mutex.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p scalelock --release --test loom_condvar`.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use scalelock::{Condvar, RawMutex};

struct Shared {
    lock: RawMutex,
    cv: Condvar,
    ready: UnsafeCell<bool>,
    woke: UnsafeCell<u32>,
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
        let s2 = Arc::clone(&s);
        let t = thread::spawn(move || waiter(&s2));
        set_ready(&s);
        s.cv.notify_one();
        t.join().unwrap();
    });
}

#[test]
fn notify_all_wakes_both_waiters_through_the_requeue() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        let s = shared();
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = Arc::clone(&s);
                thread::spawn(move || waiter(&s))
            })
            .collect();
        // Notify while holding the mutex, the usual pattern: requeued waiters must get it after.
        s.lock.lock();
        // SAFETY: the lock is held.
        s.ready.with_mut(|r| unsafe { *r = true });
        s.cv.notify_all();
        // SAFETY: locked above.
        unsafe { s.lock.unlock() };
        for t in ts {
            t.join().unwrap();
        }
        // SAFETY: all threads joined.
        assert_eq!(s.woke.with(|w| unsafe { *w }), 2);
    });
}

#[test]
fn notify_all_without_holding_the_mutex_still_wakes_everyone() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        let s = shared();
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = Arc::clone(&s);
                thread::spawn(move || waiter(&s))
            })
            .collect();
        set_ready(&s);
        s.cv.notify_all();
        for t in ts {
            t.join().unwrap();
        }
    });
}

#[test]
fn notify_all_passes_the_mutex_along_a_chain_of_three_requeued_waiters() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = shared();
        let ts: Vec<_> = (0..3)
            .map(|_| {
                let s = Arc::clone(&s);
                thread::spawn(move || waiter(&s))
            })
            .collect();
        s.lock.lock();
        // SAFETY: the lock is held.
        s.ready.with_mut(|r| unsafe { *r = true });
        s.cv.notify_all();
        // SAFETY: locked above.
        unsafe { s.lock.unlock() };
        for t in ts {
            t.join().unwrap();
        }
        // SAFETY: all threads joined.
        assert_eq!(s.woke.with(|w| unsafe { *w }), 3);
    });
}
