//! loom models of the `RawBiasedRwLock` protocol: deferred (biased) readers against revoking
//! writers, re-biasing, timed revocation, downgrade and upgrade. Under loom the clock stands
//! still, so slow-path readers re-enable the bias at once and every model exercises both modes.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p scalelock --release \
//!  --target-dir target/loom --test loom_biased`
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use scalelock::wait::Deadline;
use scalelock::RawBiasedRwLock;
use std::time::Duration;

struct Shared {
    lock: RawBiasedRwLock,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what these models check.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: RawBiasedRwLock::new(),
        data: UnsafeCell::new(0),
    })
}

fn read(s: &Shared) -> u32 {
    s.lock.lock_shared();
    // SAFETY: the data is accessed under the lock (what the model checks).
    let v = s.data.with(|p| unsafe { *p });
    // SAFETY: this thread holds the lock it releases or converts here.
    unsafe { s.lock.unlock_shared() };
    v
}

fn write(s: &Shared) {
    s.lock.lock_exclusive();
    // SAFETY: the data is accessed under the lock (what the model checks).
    s.data.with_mut(|p| unsafe { *p += 1 });
    // SAFETY: this thread holds the lock it releases or converts here.
    unsafe { s.lock.unlock_exclusive() };
}

#[test]
fn revocation_waits_for_deferred_readers() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let r = thread::spawn(move || read(&s1));
        write(&s);
        let seen = r.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(read(&s), 1);
    });
}

#[test]
fn two_deferred_readers_and_a_writer() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let r1 = thread::spawn(move || read(&s1));
        let r2 = thread::spawn(move || read(&s2));
        write(&s);
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
        let s = shared();
        write(&s); // revokes
        let s1 = s.clone();
        let r = thread::spawn(move || {
            let a = read(&s1); // slow path, re-enables the bias
            let b = read(&s1); // deferred again (unless a writer revoked meanwhile)
            assert!(b >= a);
        });
        write(&s);
        r.join().unwrap();
        assert_eq!(read(&s), 2);
    });
}

#[test]
fn two_writers_and_a_reader() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let w = thread::spawn(move || write(&s1));
        let r = thread::spawn(move || read(&s2));
        write(&s);
        w.join().unwrap();
        assert!(r.join().unwrap() <= 2);
        assert_eq!(read(&s), 2);
        // Whether the first writer turned the bias back on, left it paused for the second (who
        // then revoked nothing) or switched it off, a read with no writer around brings it back.
        assert!(s.lock.is_biased(), "the bias stays off with no writer left");
    });
}

#[test]
fn timed_revocation_gives_up_and_restores_the_bias() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let r = thread::spawn(move || read(&s1));
        if s.lock
            .try_lock_exclusive_until(&Deadline::after(Duration::from_secs(3600)))
        {
            // SAFETY: the data is accessed under the lock (what the model checks).
            s.data.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_exclusive() };
        }
        if s.lock.try_lock_exclusive() {
            // SAFETY: the data is accessed under the lock (what the model checks).
            s.data.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s.lock.unlock_exclusive() };
        }
        r.join().unwrap();
        write(&s);
        assert!(read(&s) >= 1);
    });
}

#[test]
fn downgrade_and_nested_deferred_reads() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let r = thread::spawn(move || {
            s1.lock.lock_shared();
            s1.lock.lock_shared(); // nests in the deferred slot (or the underlying lock)
                                   // SAFETY: the data is accessed under the lock (what the model checks).
            let v = s1.data.with(|p| unsafe { *p });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe {
                s1.lock.unlock_shared();
                s1.lock.unlock_shared();
            }
            v
        });
        s.lock.lock_exclusive();
        // SAFETY: the data is accessed under the lock (what the model checks).
        s.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.downgrade() };
        // SAFETY: the data is accessed under the lock (what the model checks).
        assert_eq!(s.data.with(|p| unsafe { *p }), 1);
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_shared() };
        assert!(r.join().unwrap() <= 1);
        write(&s);
    });
}

#[test]
fn upgrade_revokes_the_bias() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let r = thread::spawn(move || read(&s1));
        s.lock.lock_upgradable();
        // SAFETY: the data is accessed under the lock (what the model checks).
        let before = s.data.with(|p| unsafe { *p });
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.upgrade() };
        // SAFETY: the data is accessed under the lock (what the model checks).
        s.data.with_mut(|p| unsafe { *p = before + 1 });
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        assert!(r.join().unwrap() <= 1);
    });
}

#[test]
fn timed_writer_behind_an_upgradable_reader_gives_the_bias_back() {
    loom::model(|| {
        let s = shared();
        s.lock.lock_upgradable(); // held on the underlying lock: the writer must wait
        let s1 = s.clone();
        let s2 = s.clone();
        let tw = thread::spawn(move || {
            if s1
                .lock
                .try_lock_exclusive_until(&Deadline::after(Duration::from_secs(3600)))
            {
                // SAFETY: the data is accessed under the lock (what the model checks).
                s1.data.with_mut(|p| unsafe { *p += 1 });
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_exclusive() };
            }
        });
        let r = thread::spawn(move || read(&s2));
        // SAFETY: the data is accessed under the lock (what the model checks).
        let v = s.data.with(|p| unsafe { *p });
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_upgradable() };
        tw.join().unwrap();
        assert!(r.join().unwrap() <= 1);
        assert_eq!(v, 0);
        write(&s);
    });
}
