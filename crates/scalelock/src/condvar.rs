//! A condition variable for scalelock's [`Mutex`](crate::Mutex).
//!
//! # Design
//!
//! Three words: a futex **sequence** that every notification bumps, a count of threads inside
//! `wait`, and the mutex those threads use.
//!
//! - `wait` reads the sequence while still holding the mutex, unlocks, and sleeps until the
//!   sequence moves (or the deadline passes). It then re-takes the mutex as a thread that has slept
//!   (see [`RawMutex`](crate::RawMutex)): it keeps the mutex marked contended, because it may have
//!   been requeued there behind others.
//! - `notify_one` bumps the sequence and wakes one sleeper, and is free (no system call, no write)
//!   when nobody waits.
//! - `notify_all` bumps the sequence, wakes **one** sleeper, and moves all the others onto the
//!   mutex's futex word (`FUTEX_CMP_REQUEUE`), so they are woken one at a time as the mutex is
//!   released instead of stampeding for it: the woken one re-takes the mutex with `CONTENDED`
//!   set, so its unlock wakes the next, and so on.
//!
//! ```text
//!  sequence word (futex):  n ──notify_one/notify_all──▶ n+1   (wrapping)
//!  waiters:                +1 on entering wait, −1 on leaving it
//!  mutex:                  null ──first wait──▶ &mutex ──wait with another mutex──▶ MIXED
//!                          (MIXED: never requeue again, notify_all wakes everybody)
//! ```
//!
//! Spurious wake-ups are allowed by the API, as with every condvar, but arise only from signals,
//! a timed-out requeued waiter, or a notification racing with a new waiter.

use crate::mutex::RawMutex;
use crate::sync::{AtomicPtr, AtomicU32, Ordering};
use crate::wait::{futex, Deadline};
use core::ptr;

/// Marker stored in `Condvar::mutex` once waiters have used more than one mutex.
const MIXED: *mut RawMutex = 1 as *mut RawMutex;

/// A condition variable that works with [`Mutex`](crate::Mutex).
///
/// ```
/// use scalelock::{Condvar, Mutex};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let pair2 = Arc::clone(&pair);
/// std::thread::spawn(move || {
///     let (lock, cvar) = &*pair2;
///     *lock.lock() = true;
///     cvar.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let mut ready = lock.lock();
/// cvar.wait_while(&mut ready, |ready| !*ready);
/// assert!(*ready);
/// ```
pub struct Condvar {
    seq: AtomicU32,
    waiters: AtomicU32,
    mutex: AtomicPtr<RawMutex>,
}

/// Whether a timed wait returned because its time ran out.
///
/// ```
/// use std::time::Duration;
/// let m = scalelock::Mutex::new(());
/// let cv = scalelock::Condvar::new();
/// let mut g = m.lock();
/// assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True if the wait ended because the timeout elapsed.
    pub fn timed_out(self) -> bool {
        self.0
    }
}

impl Condvar {
    /// A condition variable with no waiters.
    #[cfg(not(loom))]
    pub const fn new() -> Condvar {
        Condvar {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            mutex: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// A condition variable with no waiters.
    #[cfg(loom)]
    pub fn new() -> Condvar {
        Condvar {
            seq: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            mutex: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Atomically releases `mutex`, sleeps until notified (or `deadline`), and re-acquires
    /// `mutex`. Returns `false` if the deadline passed.
    ///
    /// This is the guard-free interface used by the preload library; Rust code uses
    /// [`wait`](Condvar::wait) and friends.
    ///
    /// # Safety
    /// The calling thread must hold `mutex`. It holds it again when this returns.
    pub unsafe fn wait_raw(&self, mutex: &RawMutex, deadline: Option<&Deadline>) -> bool {
        let m = mutex as *const RawMutex as *mut RawMutex;
        let current = self.mutex.load(Ordering::Relaxed);
        if current != m && current != MIXED {
            if let Err(other) = self.mutex.compare_exchange(
                ptr::null_mut(),
                m,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                if other != m {
                    self.mutex.store(MIXED, Ordering::Relaxed);
                }
            }
        }
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // Read while still holding the mutex: a notifier that holds the mutex after us bumps it
        // later, so the futex below cannot miss that notification.
        let seq = self.seq.load(Ordering::Relaxed);
        // SAFETY: the caller holds `mutex` (this function's contract).
        unsafe { mutex.unlock() };
        let in_time = futex::wait(&self.seq, seq, deadline);
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        mutex.lock_after_wake();
        in_time
    }

    /// Wakes one waiting thread; returns whether one was woken.
    pub fn notify_one(&self) -> bool {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.seq.fetch_add(1, Ordering::Relaxed);
        futex::wake(&self.seq, 1) > 0
    }

    /// Wakes every waiting thread, letting them take the mutex one at a time; returns how many
    /// were woken or moved to the mutex.
    pub fn notify_all(&self) -> usize {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let m = self.mutex.load(Ordering::Relaxed);
        if m.is_null() || m == MIXED {
            return futex::wake(&self.seq, u32::MAX) as usize;
        }
        // SAFETY: `m` was stored by a thread inside `wait_raw` with this mutex; a waiter is still
        // inside (waiters > 0), and the condvar is used with this one mutex (else it is MIXED), so
        // the mutex is alive: the waiter borrows it until it returns.
        let mutex = unsafe { &*m };
        // The requeue wakes one waiter first. It re-takes the mutex as a thread that has slept,
        // which leaves CONTENDED set, so its unlock wakes the next requeued waiter, and so on:
        // the chain needs no extra wake-up here (the loom models check it).
        match futex::requeue(&self.seq, seq, mutex.futex_word()) {
            Some(n) => n as usize,
            // Another notification moved the sequence on: waking everybody is always correct.
            None => futex::wake(&self.seq, u32::MAX) as usize,
        }
    }
}

#[cfg(not(loom))]
mod guarded {
    use super::{Condvar, WaitTimeoutResult};
    use crate::mutex::MutexGuard;
    use crate::wait::Deadline;
    use std::time::{Duration, Instant};

    impl Condvar {
        fn wait_guard<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            deadline: Option<&Deadline>,
        ) -> bool {
            // SAFETY: the guard proves this thread holds the mutex; `wait_raw` returns with it
            // held again, so the guard stays valid.
            unsafe {
                let raw = MutexGuard::mutex(guard).raw();
                self.wait_raw(raw, deadline)
            }
        }

        /// Blocks until notified. Spurious wake-ups are possible; prefer
        /// [`wait_while`](Condvar::wait_while).
        ///
        /// ```
        /// use scalelock::{Condvar, Mutex};
        /// use std::sync::Arc;
        /// let p = Arc::new((Mutex::new(0), Condvar::new()));
        /// let q = Arc::clone(&p);
        /// std::thread::spawn(move || { *q.0.lock() = 1; q.1.notify_all(); });
        /// let mut g = p.0.lock();
        /// while *g == 0 { p.1.wait(&mut g); }
        /// ```
        pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
            self.wait_guard(guard, None);
        }

        /// Blocks while `condition` returns true.
        ///
        /// ```
        /// use scalelock::{Condvar, Mutex};
        /// use std::sync::Arc;
        /// let p = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        /// let q = Arc::clone(&p);
        /// std::thread::spawn(move || { q.0.lock().push(7); q.1.notify_one(); });
        /// let mut g = p.0.lock();
        /// p.1.wait_while(&mut g, |v| v.is_empty());
        /// assert_eq!(g[0], 7);
        /// ```
        pub fn wait_while<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            mut condition: F,
        ) {
            while condition(&mut **guard) {
                self.wait(guard);
            }
        }

        /// Blocks until notified or `timeout` has passed.
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let (m, cv) = (scalelock::Mutex::new(()), scalelock::Condvar::new());
        /// let mut g = m.lock();
        /// let r = cv.wait_until(&mut g, Instant::now() + Duration::from_millis(2));
        /// assert!(r.timed_out());
        /// ```
        pub fn wait_until<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            timeout: Instant,
        ) -> WaitTimeoutResult {
            let deadline = Deadline::at(timeout);
            WaitTimeoutResult(!self.wait_guard(guard, Some(&deadline)))
        }

        /// Blocks until notified or `timeout` has elapsed.
        ///
        /// ```
        /// use std::time::Duration;
        /// let (m, cv) = (scalelock::Mutex::new(()), scalelock::Condvar::new());
        /// let mut g = m.lock();
        /// assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
        /// ```
        pub fn wait_for<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            let deadline = Deadline::after(timeout);
            WaitTimeoutResult(!self.wait_guard(guard, Some(&deadline)))
        }

        /// Blocks while `condition` returns true, until `timeout` passes. Returns whether it
        /// timed out (with the condition still true).
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// let (m, cv) = (scalelock::Mutex::new(0), scalelock::Condvar::new());
        /// let mut g = m.lock();
        /// let r = cv.wait_while_until(&mut g, |v| *v == 0, Instant::now() + Duration::from_millis(1));
        /// assert!(r.timed_out());
        /// ```
        pub fn wait_while_until<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            mut condition: F,
            timeout: Instant,
        ) -> WaitTimeoutResult {
            let deadline = Deadline::at(timeout);
            while condition(&mut **guard) {
                if !self.wait_guard(guard, Some(&deadline)) {
                    return WaitTimeoutResult(condition(&mut **guard));
                }
            }
            WaitTimeoutResult(false)
        }

        /// Blocks while `condition` returns true, for at most `timeout`.
        ///
        /// ```
        /// use std::time::Duration;
        /// let (m, cv) = (scalelock::Mutex::new(1), scalelock::Condvar::new());
        /// let mut g = m.lock();
        /// let r = cv.wait_while_for(&mut g, |v| *v == 0, Duration::from_millis(1));
        /// assert!(!r.timed_out()); // condition already false
        /// ```
        pub fn wait_while_for<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            condition: F,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            let until = Instant::now().checked_add(timeout);
            match until {
                Some(t) => self.wait_while_until(guard, condition, t),
                None => {
                    self.wait_while(guard, condition);
                    WaitTimeoutResult(false)
                }
            }
        }
    }
}

impl Default for Condvar {
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl core::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Condvar")
            .field("waiters", &self.waiters.load(Ordering::Relaxed))
            .finish()
    }
}
