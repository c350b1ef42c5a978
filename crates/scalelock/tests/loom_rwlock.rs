//! loom models of the `RawRwLock` protocol: every interleaving (within the preemption bound) of
//! small scenarios must keep the exclusion invariant and leave no thread asleep forever (loom
//! reports a deadlock if one is).
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p scalelock --release \
//!  --target-dir target/loom --test loom_rwlock`
#![cfg(loom)]

mod common;

use common::model::{far, model_with_preemptions, spawn_on, timed_writer};
use loom::thread;
use scalelock::RawRwLock;

type Shared = common::model::Shared<RawRwLock>;

#[test]
fn writers_exclude_readers_and_writers() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let w1 = thread::spawn(move || s1.write());
        let r = thread::spawn(move || s2.read());
        s.write();
        w1.join().unwrap();
        let seen = r.join().unwrap();
        assert!(seen <= 2);
        assert_eq!(s.read(), 2);
    });
}

#[test]
fn readers_share_and_a_writer_waits_for_them() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let r1 = thread::spawn(move || s1.read());
        let r2 = thread::spawn(move || s2.read());
        s.write();
        r1.join().unwrap();
        r2.join().unwrap();
        assert!(!s.lock.is_locked());
    });
}

#[test]
fn write_unlock_gives_readers_their_turn_and_writers_still_wake() {
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_exclusive();
        let s1 = s.clone();
        let s2 = s.clone();
        let r = thread::spawn(move || s1.read());
        let w = thread::spawn(move || s2.write());
        s.add(1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        let seen = r.join().unwrap();
        w.join().unwrap();
        assert!(seen == 1 || seen == 2);
        assert_eq!(s.read(), 2);
    });
}

#[test]
fn upgrade_waits_for_readers_and_excludes_writers() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let u = thread::spawn(move || {
            s1.lock.lock_upgradable();
            let before = s1.value();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.upgrade() };
            s1.set(before + 10);
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_exclusive() };
        });
        let r = thread::spawn(move || s2.read());
        s.write();
        u.join().unwrap();
        r.join().unwrap();
        let v = s.read();
        assert_eq!(v, 11, "lost update");
    });
}

#[test]
fn downgrade_keeps_writers_out_and_lets_readers_in() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let d = thread::spawn(move || {
            s1.lock.lock_exclusive();
            s1.add(1);
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.downgrade() };
            let v = s1.value();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_shared() };
            v
        });
        let r = thread::spawn(move || s2.read());
        s.write();
        let v = d.join().unwrap();
        r.join().unwrap();
        assert!(v == 1 || v == 2);
        assert_eq!(s.read(), 2);
    });
}

#[test]
fn upgradable_downgrades_and_second_upgradable_waits() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let t = thread::spawn(move || {
            s1.lock.lock_upgradable();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.downgrade_upgradable() };
            let v = s1.value();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_shared() };
            v
        });
        s.lock.lock_exclusive();
        s.add(1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.downgrade_to_upgradable() };
        // The other thread may hold an upgradable or a read lock: the upgrade may fail.
        // SAFETY: this thread holds the lock it releases or converts here.
        if unsafe { s.lock.try_upgrade() } {
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_exclusive() };
        } else {
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_upgradable() };
        }
        let _ = t.join().unwrap();
        assert!(!s.lock.is_locked());
    });
}

#[test]
fn read_recursive_enters_while_a_writer_waits() {
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_shared();
        let s1 = s.clone();
        let w = thread::spawn(move || s1.write());
        // Whether or not the writer waits already, a recursive read must not wait for it.
        s.lock.lock_shared_recursive();
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe {
            s.lock.unlock_shared();
            s.lock.unlock_shared();
        }
        w.join().unwrap();
        assert_eq!(s.read(), 1);
    });
}

#[test]
fn timed_writer_that_gives_up_strands_nobody() {
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let tw = thread::spawn(move || {
            if s1.lock.try_lock_exclusive_until(&far()) {
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_exclusive() };
            }
        });
        let w = thread::spawn(move || s2.write());
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_shared() };
        tw.join().unwrap();
        w.join().unwrap();
        assert!(s.read() >= 1);
    });
}

#[test]
fn timed_reader_that_gives_up_strands_nobody() {
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_exclusive();
        let s1 = s.clone();
        let s2 = s.clone();
        let tr = thread::spawn(move || {
            if s1.lock.try_lock_shared_until(&far()) {
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_shared() };
            }
        });
        let r = thread::spawn(move || s2.read());
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        tr.join().unwrap();
        r.join().unwrap();
        s.write();
    });
}

#[test]
fn two_writers_and_a_reader_all_complete() {
    loom::model(|| {
        let s = Shared::new();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || s1.write());
        let w2 = thread::spawn(move || s2.write());
        let r = thread::spawn(move || s3.read());
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(s.read(), 2);
    });
}

#[test]
fn three_writers_and_a_reader_all_complete() {
    // Four threads: one preemption already explores every hand-over order between them; two
    // take hours.
    model_with_preemptions(1, || {
        let s = Shared::new();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || s1.write());
        let w2 = thread::spawn(move || s2.write());
        let r = thread::spawn(move || s3.read());
        s.write();
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(s.read(), 3);
    });
}

#[test]
fn two_writers_twice_and_a_reader_all_complete() {
    loom::model(|| {
        let s = Shared::new();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || {
            s1.write();
            s1.write();
        });
        let w2 = thread::spawn(move || {
            s2.write();
            s2.write();
        });
        let r = thread::spawn(move || s3.read());
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(s.read(), 4);
    });
}

#[test]
fn a_timed_writer_woken_past_its_deadline_passes_the_wake_up_on() {
    // A release that wakes a writer marks the lock `WRITER_WOKEN`, and later releases wake
    // nobody until that writer takes the lock or sleeps again. Here the writer woken may be a
    // timed one whose deadline passes as its sleep ends (one timed wait returning is one tick
    // of loom's clock) and which finds the lock taken again by its releaser: it gives up, and
    // must drop the mark and pass the wake-up on, or the plain writer asleep beside it sleeps
    // for ever (loom reports the deadlock). The counter checks exclusion and every write.
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_exclusive();
        let tw = timed_writer(&s, 1);
        let w = spawn_on(&s, |s: &Shared| s.write());
        // SAFETY: this thread holds the write lock it releases here.
        unsafe { s.lock.unlock_exclusive() };
        s.write();
        let wrote = tw.join().unwrap();
        w.join().unwrap();
        assert_eq!(s.read(), wrote + 2);
    });
}
