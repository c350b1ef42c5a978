//! parking_lot parity: the owned (`arc_lock`) guards, `FairMutex`, the `const_*` constructors,
//! `serde`, and which guards may be sent to another thread. One test per promise.
#![cfg(not(loom))]

mod common;

use common::bounded;
use scalelock::{
    const_biased_rwlock, const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock,
    FairMutex, Mutex, MutexGuard,
};
use std::sync::Arc;
use std::time::Duration;

fn assert_send<T: Send>() {}

#[test]
fn mutex_guards_may_be_unlocked_on_another_thread() {
    // parking_lot needs `send_guard` for this; scalelock's RawMutex has no owner, so its guards
    // (and FairMutex's) are always Send.
    assert_send::<MutexGuard<'static, u32>>();
    assert_send::<scalelock::FairMutexGuard<'static, u32>>();
    static M: Mutex<u32> = Mutex::new(0);
    let g = M.lock();
    std::thread::spawn(move || drop(g)).join().unwrap();
    assert!(M.try_lock().is_some());
}

#[test]
fn const_constructors_build_statics() {
    static M: Mutex<u32> = const_mutex(1);
    static L: scalelock::RwLock<u32> = const_rwlock(2);
    static B: scalelock::BiasedRwLock<u32> = const_biased_rwlock(3);
    static R: scalelock::ReentrantMutex<u32> = const_reentrant_mutex(4);
    static F: FairMutex<u32> = const_fair_mutex(5);
    assert_eq!(
        *M.lock() + *L.read() + *B.read() + *R.lock() + *F.lock(),
        15
    );
}

#[test]
fn fair_mutex_hands_the_lock_to_a_sleeping_waiter() {
    // A sleeper wakes by itself now and then to see how long it has waited (the mutex's
    // starvation bound), and an unlock that falls in those few microseconds finds nobody
    // asleep and releases instead; so ask for three hand-offs in at most twenty tries, not
    // one in every try.
    bounded("fair mutex", Duration::from_secs(20), || {
        let mut handed_off = 0;
        for _ in 0..20 {
            if handed_off == 3 {
                break;
            }
            let m = Arc::new(FairMutex::new(0u32));
            let g = m.lock();
            let m2 = Arc::clone(&m);
            let (tx, rx) = std::sync::mpsc::channel();
            let t = std::thread::spawn(move || {
                tx.send(thread_id()).unwrap();
                *m2.lock() += 1;
            });
            // SAFETY: only the lock's address is taken; it is not locked or unlocked here.
            let raw = unsafe { m.raw() } as *const scalelock::RawFairMutex as usize;
            wait_until_asleep(rx.recv().unwrap(), raw);
            drop(g);
            // Handed over: this thread, which would otherwise retake the free lock first, gets
            // it only after the sleeper has had its turn (which can be over already).
            match m.try_lock() {
                None => handed_off += 1,
                Some(again) if *again == 1 => handed_off += 1,
                Some(_) => {} // retaken before the sleeper ran: no hand-off this time
            }
            t.join().unwrap();
            assert_eq!(*m.lock(), 1);
        }
        assert_eq!(handed_off, 3, "hand-offs to a sleeper, in twenty tries");
    });
}

#[cfg(not(miri))]
fn thread_id() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Returns once thread `tid` sleeps in a futex wait on the lock at `lock` (its
/// `/proc/.../syscall` names the futex call and the lock's word), not while it spins or yields,
/// nor while it blocks on anything else (a lock inside the allocator, say): a hand-off needs a
/// sleeper.
#[cfg(not(miri))]
fn wait_until_asleep(tid: libc::pid_t, lock: usize) {
    let size = std::mem::size_of::<scalelock::RawFairMutex>();
    let asleep = || {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).unwrap();
        let mut f = text.split_whitespace();
        let nr = f.next().and_then(|n| n.parse::<libc::c_long>().ok());
        let addr = f
            .next()
            .and_then(|a| usize::from_str_radix(a.trim_start_matches("0x"), 16).ok());
        nr == Some(libc::SYS_futex) && addr.is_some_and(|a| a >= lock && a < lock + size)
    };
    while !asleep() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(miri)]
fn thread_id() -> libc::pid_t {
    0
}

/// Miri has no /proc: there the test waits a fixed time for the waiter to block, as it did
/// everywhere before. Miri interprets one thread at a time, so no other program's load can hold
/// the waiter up.
#[cfg(miri)]
fn wait_until_asleep(_tid: libc::pid_t, _lock: usize) {
    std::thread::sleep(Duration::from_millis(30));
}

#[cfg(feature = "arc_lock")]
mod arc_lock {
    use super::*;
    use scalelock::{
        ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
        BiasedRwLock, RawMutex, ReentrantMutex, RwLock,
    };
    use std::time::Instant;

    #[test]
    fn lock_arc_guard_outlives_the_borrow_and_unlocks_on_drop() {
        let m = Arc::new(Mutex::new(1));
        let mut g: ArcMutexGuard<RawMutex, i32> = m.lock_arc();
        let weak = Arc::downgrade(&m);
        drop(m); // the guard keeps the mutex alive
        *g += 1;
        let m = ArcMutexGuard::into_arc(g);
        assert_eq!(*m.lock(), 2);
        assert_eq!(weak.strong_count(), 1);
    }

    #[test]
    fn arc_mutex_guard_can_move_to_another_thread() {
        let m = Arc::new(Mutex::new(0));
        let mut g = m.lock_arc();
        std::thread::spawn(move || *g = 5).join().unwrap();
        assert_eq!(*m.lock(), 5);
    }

    #[test]
    fn try_and_timed_lock_arc_fail_while_held_and_succeed_when_free() {
        let m = Arc::new(Mutex::new(()));
        let g = m.lock_arc();
        assert!(m.try_lock_arc().is_none());
        let t0 = Instant::now();
        assert!(m.try_lock_arc_for(Duration::from_millis(5)).is_none());
        assert!(t0.elapsed() >= Duration::from_millis(5));
        assert!(m
            .try_lock_arc_until(Instant::now() + Duration::from_millis(1))
            .is_none());
        drop(g);
        assert!(m.try_lock_arc().is_some());
        assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_some());
        assert!(m
            .try_lock_arc_until(Instant::now() + Duration::from_millis(1))
            .is_some());
    }

    #[test]
    fn arc_mutex_guard_unlocked_releases_for_the_closure() {
        let m = Arc::new(Mutex::new(0));
        let mut g = m.lock_arc();
        ArcMutexGuard::unlocked(&mut g, || *m.lock() = 3);
        assert_eq!(*g, 3);
        assert!(m.try_lock().is_none());
        ArcMutexGuard::unlock_fair(g);
        assert!(m.try_lock().is_some());
    }

    /// The same checks for both rwlock wrappers.
    macro_rules! rwlock_arc_tests {
        ($modname:ident, $lock:ident) => {
            mod $modname {
                use super::*;

                #[test]
                fn read_arc_is_shared_and_excludes_writers() {
                    let l = Arc::new($lock::new(1));
                    let a = l.read_arc();
                    let b = l.read_arc();
                    let c = l.read_arc_recursive();
                    assert_eq!(*a + *b + *c, 3);
                    assert!(l.try_write_arc().is_none());
                    assert!(l.try_write_arc_for(Duration::from_millis(1)).is_none());
                    assert!(l.try_read_arc().is_some());
                    assert!(l.try_read_recursive_arc().is_some());
                    assert!(l
                        .try_read_arc_recursive_for(Duration::from_millis(1))
                        .is_some());
                    assert!(l.try_read_arc_recursive_until(Instant::now()).is_some());
                    drop((a, b, c));
                    assert!(l.try_write_arc().is_some());
                }

                #[test]
                fn write_arc_is_exclusive() {
                    let l = Arc::new($lock::new(1));
                    let mut w = l.write_arc();
                    *w = 2;
                    assert!(l.try_read_arc().is_none());
                    assert!(l.try_read_arc_for(Duration::from_millis(1)).is_none());
                    assert!(l
                        .try_read_arc_until(Instant::now() + Duration::from_millis(1))
                        .is_none());
                    assert!(l.try_upgradable_read_arc().is_none());
                    assert!(l
                        .try_read_arc_recursive_for(Duration::from_millis(1))
                        .is_none());
                    assert!(l
                        .try_upgradable_read_arc_for(Duration::from_millis(1))
                        .is_none());
                    assert!(l
                        .try_write_arc_until(Instant::now() + Duration::from_millis(1))
                        .is_none());
                    let l2 = ArcRwLockWriteGuard::into_arc(w);
                    assert_eq!(*l2.read(), 2);
                }

                #[test]
                fn upgradable_read_arc_upgrades_and_downgrades() {
                    let l = Arc::new($lock::new(1));
                    let u = l.upgradable_read_arc();
                    assert!(l.try_upgradable_read_arc().is_none());
                    let r = l.read_arc();
                    let u = ArcRwLockUpgradableReadGuard::try_upgrade(u).unwrap_err();
                    let u =
                        ArcRwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(1))
                            .unwrap_err();
                    drop(r);
                    let mut w = ArcRwLockUpgradableReadGuard::try_upgrade_until(
                        u,
                        Instant::now() + Duration::from_secs(5),
                    )
                    .unwrap_or_else(|_| panic!("no reader left"));
                    *w = 2;
                    let u = ArcRwLockWriteGuard::downgrade_to_upgradable(w);
                    assert!(l.try_read_arc().is_some());
                    let r = ArcRwLockUpgradableReadGuard::downgrade(u);
                    assert!(l.try_upgradable_read_arc_until(Instant::now()).is_some());
                    drop(r);
                    let w = ArcRwLockUpgradableReadGuard::upgrade(l.upgradable_read_arc());
                    let r: ArcRwLockReadGuard<_, i32> = ArcRwLockWriteGuard::downgrade(w);
                    assert_eq!(*r, 2);
                    assert!(l.try_write().is_none());
                    drop(r);
                    assert!(!l.is_locked());
                }
            }
        };
    }

    rwlock_arc_tests!(rwlock, RwLock);
    rwlock_arc_tests!(biased, BiasedRwLock);

    #[test]
    fn owned_guards_unlock_for_a_closure_and_unlock_fairly() {
        let m = Arc::new(Mutex::new(0));
        let mut g = m.lock_arc();
        ArcMutexGuard::unlocked_fair(&mut g, || *m.lock() = 1);
        ArcMutexGuard::bump(&mut g);
        assert_eq!(*g, 1);
        assert!(m.try_lock().is_none());
        assert!(!ArcMutexGuard::into_arc_fair(g).is_locked());

        let l = Arc::new(RwLock::new(0));
        let mut r = l.read_arc();
        ArcRwLockReadGuard::unlocked(&mut r, || *l.write() = 1);
        assert_eq!(*r, 1);
        assert!(l.try_write().is_none());
        ArcRwLockReadGuard::unlock_fair(r);
        let mut w = l.write_arc();
        ArcRwLockWriteGuard::unlocked(&mut w, || assert_eq!(*l.read(), 1));
        assert!(l.try_read().is_none());
        ArcRwLockWriteGuard::unlock_fair(w);
        assert!(!l.is_locked());
    }

    #[test]
    fn reentrant_mutex_lock_arc_is_reentrant() {
        let m = Arc::new(ReentrantMutex::new(1));
        let a = m.lock_arc();
        let b = m.try_lock_arc().expect("the owner may lock again");
        assert_eq!(*a + *b, 2);
        let m2 = Arc::clone(&m);
        let other =
            std::thread::spawn(move || m2.try_lock_arc_for(Duration::from_millis(1)).is_none());
        assert!(other.join().unwrap());
    }

    #[test]
    fn arc_guards_for_rwlocks_hold_the_lock_alive() {
        let l = Arc::new(RwLock::new(String::from("x")));
        let r = l.read_arc();
        drop(l);
        assert_eq!(format!("{r} {r:?}"), "x \"x\"");
    }
}

#[cfg(feature = "serde")]
mod serde_feature {
    use super::*;

    #[test]
    fn locks_serialize_as_their_value_and_deserialize_unlocked() {
        let m = Mutex::new(vec![1, 2]);
        assert_eq!(serde_json::to_string(&m).unwrap(), "[1,2]");
        let m: Mutex<Vec<u8>> = serde_json::from_str("[3]").unwrap();
        assert_eq!(*m.try_lock().unwrap(), [3]);
        let l: scalelock::RwLock<u8> = serde_json::from_str("4").unwrap();
        assert_eq!(serde_json::to_string(&l).unwrap(), "4");
        let b: scalelock::BiasedRwLock<u8> = serde_json::from_str("5").unwrap();
        assert_eq!(serde_json::to_string(&b).unwrap(), "5");
        let r: scalelock::ReentrantMutex<u8> = serde_json::from_str("6").unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), "6");
        let f: FairMutex<u8> = serde_json::from_str("7").unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), "7");
    }
}

#[cfg(feature = "send_guard")]
#[test]
fn send_guard_makes_rwlock_guards_sendable() {
    assert_send::<scalelock::RwLockReadGuard<'static, u32>>();
    assert_send::<scalelock::RwLockWriteGuard<'static, u32>>();
    static L: scalelock::RwLock<u32> = scalelock::RwLock::new(0);
    let r = L.read();
    std::thread::spawn(move || drop(r)).join().unwrap();
    let mut w = L.write();
    *w = 1;
    std::thread::spawn(move || drop(w)).join().unwrap();
    // Nested plain reads on this thread stay allowed (no stale per-thread record).
    let _a = L.read();
    let _b = L.read();
    assert_eq!(*_a, 1);
}
