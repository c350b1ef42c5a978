//! loom models of the `RawBiasedRwLock` protocol: deferred (biased) readers against revoking
//! writers, re-biasing, timed revocation, downgrade and upgrade. Under loom the clock stands
//! still, so slow-path readers re-enable the bias at once and every model exercises both modes.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p scalelock --release \
//!  --target-dir target/loom --test loom_biased`
#![cfg(loom)]

mod common;

use common::model::far;
use loom::thread;
use scalelock::RawBiasedRwLock;

type Shared = common::model::Shared<RawBiasedRwLock>;

#[test]
fn revocation_waits_for_deferred_readers() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let r = thread::spawn(move || s1.read());
        s.write();
        let seen = r.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(s.read(), 1);
    });
}

#[test]
fn two_deferred_readers_and_a_writer() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let r1 = thread::spawn(move || s1.read());
        let r2 = thread::spawn(move || s2.read());
        s.write();
        r1.join().unwrap();
        r2.join().unwrap();
        assert!(s.lock.try_lock_exclusive(), "every reader left");
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
    });
}

#[test]
fn bias_comes_back_and_is_revoked_again() {
    loom::model(|| {
        let s = Shared::new();
        s.write(); // revokes
        let s1 = s.clone();
        let r = thread::spawn(move || {
            let a = s1.read(); // slow path, re-enables the bias
            let b = s1.read(); // deferred again (unless a writer revoked meanwhile)
            assert!(b >= a);
        });
        s.write();
        r.join().unwrap();
        assert_eq!(s.read(), 2);
    });
}

#[test]
fn two_writers_and_a_reader() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let s2 = s.clone();
        let w = thread::spawn(move || s1.write());
        let r = thread::spawn(move || s2.read());
        s.write();
        w.join().unwrap();
        assert!(r.join().unwrap() <= 2);
        assert_eq!(s.read(), 2);
        // Whether the first writer turned the bias back on, left it paused for the second (who
        // then revoked nothing) or switched it off, a read with no writer around brings it back.
        assert!(s.lock.is_biased(), "the bias stays off with no writer left");
    });
}

#[test]
fn timed_revocation_gives_up_and_restores_the_bias() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let r = thread::spawn(move || s1.read());
        if s.lock.try_lock_exclusive_until(&far()) {
            s.add(1);
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_exclusive() };
        }
        if s.lock.try_lock_exclusive() {
            s.add(1);
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_exclusive() };
        }
        r.join().unwrap();
        s.write();
        assert!(s.read() >= 1);
    });
}

#[test]
fn downgrade_and_nested_deferred_reads() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let r = thread::spawn(move || {
            s1.lock.lock_shared();
            s1.lock.lock_shared(); // nests in the deferred slot (or the underlying lock)
            let v = s1.value();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe {
                s1.lock.unlock_shared();
                s1.lock.unlock_shared();
            }
            v
        });
        s.lock.lock_exclusive();
        s.add(1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.downgrade() };
        assert_eq!(s.value(), 1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_shared() };
        assert!(r.join().unwrap() <= 1);
        s.write();
    });
}

#[test]
fn upgrade_revokes_the_bias() {
    loom::model(|| {
        let s = Shared::new();
        let s1 = s.clone();
        let r = thread::spawn(move || s1.read());
        s.lock.lock_upgradable();
        let before = s.value();
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.upgrade() };
        s.set(before + 1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        assert!(r.join().unwrap() <= 1);
    });
}

#[test]
fn timed_writer_behind_an_upgradable_reader_gives_the_bias_back() {
    loom::model(|| {
        let s = Shared::new();
        s.lock.lock_upgradable(); // held on the underlying lock: the writer must wait
        let s1 = s.clone();
        let s2 = s.clone();
        let tw = thread::spawn(move || {
            if s1.lock.try_lock_exclusive_until(&far()) {
                s1.add(1);
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_exclusive() };
            }
        });
        let r = thread::spawn(move || s2.read());
        let v = s.value();
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_upgradable() };
        tw.join().unwrap();
        assert!(r.join().unwrap() <= 1);
        assert_eq!(v, 0);
        s.write();
    });
}
