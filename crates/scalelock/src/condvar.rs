//! A condition variable for scalelock's [`Mutex`](crate::Mutex).
//!
//! # Design
//!
//! A queue of the threads inside `wait`, guarded by a small internal [`RawMutex`], and a count of
//! the queued threads that notifiers read without locking (so a notification with nobody waiting
//! costs one load). Each waiter's queue entry lives on its own stack and carries its own futex
//! word, so a notification picks *which* waiters it wakes and counts them exactly:
//!
//! - `wait` queues its entry while still holding the user's mutex, unlocks it, and sleeps on the
//!   entry's word until a notifier claims the entry (or the deadline passes). It then re-takes
//!   the mutex as a thread that has slept (see [`RawMutex`]), which leaves the mutex marked so
//!   that its unlock wakes the next sleeper: it may have been requeued there behind others. Its
//!   wait for the mutex spins and sleeps but never yields (see the mutex's docs).
//! - `notify_one` dequeues the oldest entry, claims it and wakes its thread. It returns whether
//!   there was one.
//! - `notify_all` dequeues every entry and claims them all. It moves the threads whose mutex is
//!   the first waiter's onto that mutex's futex word (`FUTEX_CMP_REQUEUE`, waking none), wakes
//!   those that use another mutex, and wakes the first waiter **last**: it re-takes the mutex
//!   with the wake-up flag set, so its unlock wakes one moved thread, whose unlock wakes the
//!   next, and so on, instead of all of them stampeding for the mutex. It returns how many
//!   entries it dequeued: exactly the threads that were inside `wait`, unclaimed, at the call.
//! - A timed wait whose deadline passes takes the internal lock and, if its entry is still
//!   queued (unclaimed), removes it and reports a timeout; if a notifier claimed it first, the
//!   wait reports a notification, as that notifier counted it.
//! - A notifier holds the internal lock from dequeuing until its last futex call, and a claimed
//!   waiter takes and releases that lock before it leaves `wait`: so no notifier touches an
//!   entry after its thread has returned (the entry lives on that thread's stack).
//!
//! ```text
//!  entry.state (futex word, one per waiting thread):
//!
//!    WAITING ──notify_one/notify_all (dequeues it, under the internal lock)──▶ NOTIFIED
//!       │                                                                   (wait returns true)
//!       └──deadline passed, still queued (wait removes it, under the lock)──▶ gone
//!                                                                           (wait returns false)
//!
//!  queue (under the internal lock):  wait pushes at the back; notify_one pops the front;
//!                                    notify_all takes all; a timed-out wait unlinks itself
//!  queued (atomic):                  the queue's length, written under the lock, read by
//!                                    notifiers without it (0: nothing to do)
//! ```
//!
//! No spurious wake-ups: `wait` returns only when claimed or timed out (a signal or an early
//! futex return makes it sleep again).

use crate::mutex::RawMutex;
use crate::sync::{AtomicU32, Ordering};
use crate::wait::{futex, Deadline};
use core::cell::{Cell, UnsafeCell};
use core::ptr;

/// `Waiter::state` while the entry is queued.
const WAITING: u32 = 0;
/// `Waiter::state` once a notifier has dequeued (claimed) the entry.
const NOTIFIED: u32 = 1;

/// One thread inside `wait`: a queue entry on that thread's stack.
struct Waiter {
    /// The futex word the thread sleeps on: [`WAITING`], then [`NOTIFIED`].
    state: AtomicU32,
    /// The mutex the thread re-takes (alive while the thread waits: it borrows it).
    mutex: *const RawMutex,
    /// Queue links, read and written only under `Condvar::lock`.
    prev: Cell<*const Waiter>,
    next: Cell<*const Waiter>,
}

/// The waiting threads, oldest first.
struct Queue {
    head: *const Waiter,
    tail: *const Waiter,
}

/// A condition variable that works with [`Mutex`](crate::Mutex).
///
/// Like `parking_lot::Condvar` it has no spurious wake-ups, can be built in a `static`, needs no
/// drop glue, and `notify_all` wakes one thread and moves the others onto the mutex. Where it
/// differs from parking_lot:
///
/// - One condvar may serve several mutexes, even at the same time (parking_lot panics when a
///   thread waits with a second mutex while others wait with the first). `notify_all` then wakes
///   the threads that use another mutex than the first waiter's instead of moving them.
/// - `notify_one` wakes the thread even when the mutex is locked (parking_lot moves it onto the
///   mutex in that case).
/// - It is four words, not one (a queue head and tail, a count, and the internal lock's word and
///   spin estimate).
/// - It works with scalelock's [`Mutex`](crate::Mutex) and, through
///   [`wait_raw`](Condvar::wait_raw), with any [`RawMutex`].
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
    /// Guards `queue` and the links of every queued entry.
    lock: RawMutex,
    /// The queue's length; written under `lock`, read by notifiers without it.
    queued: AtomicU32,
    queue: UnsafeCell<Queue>,
}

// SAFETY: the queue's raw pointers are only followed under `lock`, and point at entries whose
// threads are blocked inside `wait_raw` until a notifier (holding `lock`) has finished with them.
unsafe impl Sync for Condvar {}
// SAFETY: a condvar that can be moved is borrowed by nobody, so its queue is empty.
unsafe impl Send for Condvar {}

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
    /// True if the wait ended because the timeout elapsed (no notification claimed it first).
    ///
    /// ```
    /// use std::time::Duration;
    /// let (m, cv) = (scalelock::Mutex::new(()), scalelock::Condvar::new());
    /// assert!(cv.wait_for(&mut m.lock(), Duration::ZERO).timed_out());
    /// ```
    pub fn timed_out(self) -> bool {
        self.0
    }
}

impl Condvar {
    /// A condition variable with no waiters.
    ///
    /// ```
    /// static CV: scalelock::Condvar = scalelock::Condvar::new();
    /// assert!(!CV.notify_one());
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> Condvar {
        Condvar {
            lock: RawMutex::new(),
            queued: AtomicU32::new(0),
            queue: UnsafeCell::new(Queue {
                head: ptr::null(),
                tail: ptr::null(),
            }),
        }
    }

    /// A condition variable with no waiters.
    #[cfg(loom)]
    pub fn new() -> Condvar {
        Condvar {
            lock: RawMutex::new(),
            queued: AtomicU32::new(0),
            queue: UnsafeCell::new(Queue {
                head: ptr::null(),
                tail: ptr::null(),
            }),
        }
    }

    /// Atomically releases `mutex`, sleeps until notified (or `deadline`), and re-acquires
    /// `mutex`. Returns `false` if the deadline passed before a notification claimed this thread.
    ///
    /// This is the guard-free interface for code that holds a [`RawMutex`] directly; Rust code
    /// uses [`wait`](Condvar::wait) and friends.
    ///
    /// # Safety
    /// The calling thread must hold `mutex`. It holds it again when this returns.
    ///
    /// ```
    /// use scalelock::{wait::Deadline, Condvar, RawMutex};
    /// use std::time::Duration;
    /// let (m, cv) = (RawMutex::new(), Condvar::new());
    /// m.lock();
    /// // SAFETY: this thread holds `m`.
    /// let notified = unsafe { cv.wait_raw(&m, Some(&Deadline::after(Duration::from_millis(1)))) };
    /// assert!(!notified);
    /// // SAFETY: held again after the wait.
    /// unsafe { m.unlock() };
    /// ```
    pub unsafe fn wait_raw(&self, mutex: &RawMutex, deadline: Option<&Deadline>) -> bool {
        let me = Waiter {
            state: AtomicU32::new(WAITING),
            mutex,
            prev: Cell::new(ptr::null()),
            next: Cell::new(ptr::null()),
        };
        self.lock.lock();
        // SAFETY: `lock` is held; `me` stays queued only while this thread is blocked below
        // (it leaves only once dequeued by a notifier or after unlinking itself).
        unsafe { self.push_back(&me) };
        self.unlock_internal();
        // Queued before the mutex is released: a notifier that takes the mutex after us finds us.
        // SAFETY: the caller holds `mutex` (this function's contract).
        unsafe { mutex.unlock() };
        let mut notified = true;
        loop {
            if me.state.load(Ordering::Acquire) == NOTIFIED {
                // The notifier may still be in its futex call on `me.state`: wait for it to
                // release the internal lock before `me` goes out of scope.
                self.lock.lock();
                self.unlock_internal();
                break;
            }
            if !futex::wait(&me.state, WAITING, deadline) {
                self.lock.lock();
                if me.state.load(Ordering::Relaxed) == WAITING {
                    // SAFETY: `lock` is held and `me` is still queued (not claimed).
                    unsafe { self.unlink(&me) };
                    notified = false;
                }
                self.unlock_internal();
                break;
            }
        }
        mutex.lock_after_wake();
        notified
    }

    /// Wakes the thread that has waited longest; returns whether there was one (a thread inside
    /// `wait`, not yet claimed by another notification, whose deadline had not made it leave).
    ///
    /// ```
    /// let cv = scalelock::Condvar::new();
    /// assert!(!cv.notify_one()); // nobody waits
    /// ```
    pub fn notify_one(&self) -> bool {
        if self.queued.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.lock.lock();
        // SAFETY: `lock` is held.
        let w = unsafe { self.pop_front() };
        if !w.is_null() {
            // SAFETY: a dequeued entry's thread stays inside `wait_raw` until it has taken
            // `lock`, which this thread holds until it is done with the entry.
            let w = unsafe { &*w };
            w.state.store(NOTIFIED, Ordering::Release);
            futex::wake(&w.state, 1);
        }
        self.unlock_internal();
        !w.is_null()
    }

    /// Wakes every waiting thread, letting those that share the first waiter's mutex take it one
    /// at a time; returns how many threads it woke (or moved onto the mutex): exactly those
    /// inside `wait` at the call and not claimed by an earlier notification.
    ///
    /// ```
    /// let cv = scalelock::Condvar::new();
    /// assert_eq!(cv.notify_all(), 0); // nobody waits
    /// ```
    pub fn notify_all(&self) -> usize {
        if self.queued.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.lock.lock();
        // SAFETY: `lock` is held.
        let first = unsafe { self.take_all() };
        let mut count = 0usize;
        if !first.is_null() {
            // SAFETY (all dereferences below): every dequeued entry's thread stays inside
            // `wait_raw`, with its entry and its mutex alive, until it has taken `lock`, which
            // this thread holds until the end.
            let head = unsafe { &*first };
            let target = head.mutex;
            let mut w = head.next.get();
            while !w.is_null() {
                let entry = unsafe { &*w };
                let next = entry.next.get();
                entry.state.store(NOTIFIED, Ordering::Release);
                if entry.mutex == target {
                    // Moved, not woken: `head` re-takes `target` after this loop has run and
                    // its unlock starts the chain of wake-ups along the mutex.
                    let mutex = unsafe { &*target };
                    futex::requeue_all(&entry.state, NOTIFIED, mutex.futex_word());
                } else {
                    futex::wake(&entry.state, 1);
                }
                count += 1;
                w = next;
            }
            head.state.store(NOTIFIED, Ordering::Release);
            futex::wake(&head.state, 1);
            count += 1;
        }
        self.unlock_internal();
        count
    }

    /// Releases the internal lock; called only by the thread that took it just before.
    #[inline]
    fn unlock_internal(&self) {
        // SAFETY: every call follows a `self.lock.lock()` by this thread in the same function.
        unsafe { self.lock.unlock() };
    }

    /// Appends `w` to the queue.
    ///
    /// # Safety
    /// `lock` is held; `w` stays alive and in place until it is dequeued or unlinked.
    unsafe fn push_back(&self, w: &Waiter) {
        // SAFETY: `lock` is held (the caller's contract), so this is the only access to `queue`.
        let q = unsafe { &mut *self.queue.get() };
        w.prev.set(q.tail);
        w.next.set(ptr::null());
        if q.tail.is_null() {
            q.head = w;
        } else {
            // SAFETY: queued entries are alive (see `push_back`'s contract).
            unsafe { (*q.tail).next.set(w) };
        }
        q.tail = w;
        self.queued
            .store(self.queued.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Removes and returns the oldest entry (null if none).
    ///
    /// # Safety
    /// `lock` is held.
    unsafe fn pop_front(&self) -> *const Waiter {
        // SAFETY: `lock` is held (the caller's contract).
        let q = unsafe { &mut *self.queue.get() };
        let w = q.head;
        if !w.is_null() {
            // SAFETY: queued entries are alive.
            unsafe { self.unlink(&*w) };
        }
        w
    }

    /// Empties the queue; returns its first entry (the others follow through `next`).
    ///
    /// # Safety
    /// `lock` is held.
    unsafe fn take_all(&self) -> *const Waiter {
        // SAFETY: `lock` is held (the caller's contract).
        let q = unsafe { &mut *self.queue.get() };
        let first = q.head;
        q.head = ptr::null();
        q.tail = ptr::null();
        self.queued.store(0, Ordering::Relaxed);
        first
    }

    /// Removes the queued entry `w`.
    ///
    /// # Safety
    /// `lock` is held and `w` is queued.
    unsafe fn unlink(&self, w: &Waiter) {
        // SAFETY: `lock` is held (the caller's contract).
        let q = unsafe { &mut *self.queue.get() };
        let (prev, next) = (w.prev.get(), w.next.get());
        if prev.is_null() {
            q.head = next;
        } else {
            // SAFETY: queued entries are alive.
            unsafe { (*prev).next.set(next) };
        }
        if next.is_null() {
            q.tail = prev;
        } else {
            // SAFETY: queued entries are alive.
            unsafe { (*next).prev.set(prev) };
        }
        self.queued
            .store(self.queued.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
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

        /// The loop of `wait_while_*`, as parking_lot runs it: `condition` is called before the
        /// first wait and after each wait that was notified, never after a timeout; the result
        /// says whether the last wait timed out.
        fn wait_while_deadline<T: ?Sized, F: FnMut(&mut T) -> bool>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            mut condition: F,
            deadline: Option<&Deadline>,
        ) -> WaitTimeoutResult {
            let mut timed_out = false;
            while !timed_out && condition(&mut **guard) {
                timed_out = !self.wait_guard(guard, deadline);
            }
            WaitTimeoutResult(timed_out)
        }

        /// Blocks until notified. There are no spurious wake-ups (it returns only once a
        /// notification has claimed this thread), but another thread may have taken the mutex and
        /// changed the state first, so a loop around the condition
        /// ([`wait_while`](Condvar::wait_while)) is still the usual pattern.
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

        /// Blocks while `condition` returns true, until `timeout` passes. As in parking_lot,
        /// `condition` is called before the first wait and after each notified wait, but not after
        /// the timeout: the result says whether the timeout elapsed (the condition was true at
        /// its last check).
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
            condition: F,
            timeout: Instant,
        ) -> WaitTimeoutResult {
            let deadline = Deadline::at(timeout);
            self.wait_while_deadline(guard, condition, Some(&deadline))
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
            // A timeout too far away to be an `Instant` waits without one, as in parking_lot.
            match Instant::now().checked_add(timeout) {
                Some(t) => self.wait_while_until(guard, condition, t),
                None => self.wait_while_deadline(guard, condition, None),
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
            .field("waiters", &self.queued.load(Ordering::Relaxed))
            .finish()
    }
}
