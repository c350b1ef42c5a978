//! loom models of the `RawRwLock` protocol: every interleaving (within the preemption bound) of
//! small scenarios must keep the exclusion invariant and leave no thread asleep forever (loom
//! reports a deadlock if one is).
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p scalelock --release \
//!  --target-dir target/loom --test loom_rwlock`
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use scalelock::wait::Deadline;
use scalelock::RawRwLock;
use std::time::Duration;

/// A lock and the data it protects; loom's `UnsafeCell` reports any access that the lock failed
/// to order (a writer alongside a reader or another writer).
struct Shared {
    lock: RawRwLock,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only accessed under `lock`, which is what these models check.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

fn shared() -> Arc<Shared> {
    Arc::new(Shared {
        lock: RawRwLock::new(),
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

fn far() -> Deadline {
    Deadline::after(Duration::from_secs(3600))
}

#[test]
fn writers_exclude_readers_and_writers() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let w1 = thread::spawn(move || write(&s1));
        let r = thread::spawn(move || read(&s2));
        write(&s);
        w1.join().unwrap();
        let seen = r.join().unwrap();
        assert!(seen <= 2);
        assert_eq!(read(&s), 2);
    });
}

#[test]
fn readers_share_and_a_writer_waits_for_them() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let r1 = thread::spawn(move || read(&s1));
        let r2 = thread::spawn(move || read(&s2));
        write(&s);
        r1.join().unwrap();
        r2.join().unwrap();
        assert!(!s.lock.is_locked());
    });
}

#[test]
fn write_unlock_gives_readers_their_turn_and_writers_still_wake() {
    loom::model(|| {
        let s = shared();
        s.lock.lock_exclusive();
        let s1 = s.clone();
        let s2 = s.clone();
        let r = thread::spawn(move || read(&s1));
        let w = thread::spawn(move || write(&s2));
        // SAFETY: the data is accessed under the lock (what the model checks).
        s.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        let seen = r.join().unwrap();
        w.join().unwrap();
        assert!(seen == 1 || seen == 2);
        assert_eq!(read(&s), 2);
    });
}

#[test]
fn upgrade_waits_for_readers_and_excludes_writers() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let u = thread::spawn(move || {
            s1.lock.lock_upgradable();
            // SAFETY: the data is accessed under the lock (what the model checks).
            let before = s1.data.with(|p| unsafe { *p });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.upgrade() };
            // SAFETY: the data is accessed under the lock (what the model checks).
            s1.data.with_mut(|p| unsafe { *p = before + 10 });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_exclusive() };
        });
        let r = thread::spawn(move || read(&s2));
        write(&s);
        u.join().unwrap();
        r.join().unwrap();
        let v = read(&s);
        assert_eq!(v, 11, "lost update");
    });
}

#[test]
fn downgrade_keeps_writers_out_and_lets_readers_in() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let d = thread::spawn(move || {
            s1.lock.lock_exclusive();
            // SAFETY: the data is accessed under the lock (what the model checks).
            s1.data.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.downgrade() };
            // SAFETY: the data is accessed under the lock (what the model checks).
            let v = s1.data.with(|p| unsafe { *p });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_shared() };
            v
        });
        let r = thread::spawn(move || read(&s2));
        write(&s);
        let v = d.join().unwrap();
        r.join().unwrap();
        assert!(v == 1 || v == 2);
        assert_eq!(read(&s), 2);
    });
}

#[test]
fn upgradable_downgrades_and_second_upgradable_waits() {
    loom::model(|| {
        let s = shared();
        let s1 = s.clone();
        let t = thread::spawn(move || {
            s1.lock.lock_upgradable();
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.downgrade_upgradable() };
            // SAFETY: the data is accessed under the lock (what the model checks).
            let v = s1.data.with(|p| unsafe { *p });
            // SAFETY: this thread holds the lock it releases or converts here.
            unsafe { s1.lock.unlock_shared() };
            v
        });
        s.lock.lock_exclusive();
        // SAFETY: the data is accessed under the lock (what the model checks).
        s.data.with_mut(|p| unsafe { *p += 1 });
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
        let s = shared();
        s.lock.lock_shared();
        let s1 = s.clone();
        let w = thread::spawn(move || write(&s1));
        // Whether or not the writer waits already, a recursive read must not wait for it.
        s.lock.lock_shared_recursive();
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe {
            s.lock.unlock_shared();
            s.lock.unlock_shared();
        }
        w.join().unwrap();
        assert_eq!(read(&s), 1);
    });
}

#[test]
fn timed_writer_that_gives_up_strands_nobody() {
    loom::model(|| {
        let s = shared();
        s.lock.lock_shared();
        let s1 = s.clone();
        let s2 = s.clone();
        let tw = thread::spawn(move || {
            if s1.lock.try_lock_exclusive_until(&far()) {
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_exclusive() };
            }
        });
        let w = thread::spawn(move || write(&s2));
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_shared() };
        tw.join().unwrap();
        w.join().unwrap();
        assert!(read(&s) >= 1);
    });
}

#[test]
fn timed_reader_that_gives_up_strands_nobody() {
    loom::model(|| {
        let s = shared();
        s.lock.lock_exclusive();
        let s1 = s.clone();
        let s2 = s.clone();
        let tr = thread::spawn(move || {
            if s1.lock.try_lock_shared_until(&far()) {
                // SAFETY: this thread holds the lock it releases or converts here.
                unsafe { s1.lock.unlock_shared() };
            }
        });
        let r = thread::spawn(move || read(&s2));
        // SAFETY: this thread holds the lock it releases or converts here.
        unsafe { s.lock.unlock_exclusive() };
        tr.join().unwrap();
        r.join().unwrap();
        write(&s);
    });
}

#[test]
fn two_writers_and_a_reader_all_complete() {
    loom::model(|| {
        let s = shared();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || write(&s1));
        let w2 = thread::spawn(move || write(&s2));
        let r = thread::spawn(move || read(&s3));
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(read(&s), 2);
    });
}

#[test]
fn three_writers_and_a_reader_all_complete() {
    // Four threads: one preemption already explores every hand-over order between them; two
    // take hours.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(1);
    model.check(|| {
        let s = shared();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || write(&s1));
        let w2 = thread::spawn(move || write(&s2));
        let r = thread::spawn(move || read(&s3));
        write(&s);
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(read(&s), 3);
    });
}

#[test]
fn two_writers_twice_and_a_reader_all_complete() {
    loom::model(|| {
        let s = shared();
        let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
        let w1 = thread::spawn(move || {
            write(&s1);
            write(&s1);
        });
        let w2 = thread::spawn(move || {
            write(&s2);
            write(&s2);
        });
        let r = thread::spawn(move || read(&s3));
        w1.join().unwrap();
        w2.join().unwrap();
        r.join().unwrap();
        assert_eq!(read(&s), 4);
    });
}
