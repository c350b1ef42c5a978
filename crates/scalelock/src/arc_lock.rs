//! The `arc_lock` feature: guards that own an `Arc` of their lock instead of borrowing it, as in
//! parking_lot (`Mutex::lock_arc`, `RwLock::read_arc`, `write_arc`, `upgradable_read_arc` and
//! their `try_` and timed forms).
//!
//! [`Mutex`], [`RwLock`] and [`BiasedRwLock`] are scalelock's own wrappers around lock_api's
//! types (so that lockstat can name call sites), so their owned guards are defined here, with the
//! same names and type parameters as parking_lot's: `ArcMutexGuard<RawMutex, T>`,
//! `ArcRwLockReadGuard<RawRwLock, T>`, `ArcRwLockWriteGuard<RawBiasedRwLock, T>`, and so on.
//! [`ReentrantMutex`](crate::ReentrantMutex) and [`FairMutex`](crate::FairMutex) are lock_api's
//! own types: their `lock_arc` family comes from lock_api and returns lock_api's guards.
//!
//! Acquisitions go through the wrappers' ordinary methods, so lockstat attributes them to the
//! caller of `lock_arc` & co. exactly as it does for `lock`.

use crate::biased::RawBiasedRwLock;
use crate::mutex::RawMutex;
use crate::mutex_wrapper::Mutex;
use crate::rwlock::RawRwLock;
use crate::rwlock_wrapper::{BiasedRwLock, RwLock};
use core::fmt;
use core::marker::PhantomData;
use core::mem::{self, ManuallyDrop};
use core::ops::{Deref, DerefMut};
use core::ptr;
use lock_api::{
    RawMutexFair, RawRwLockDowngrade, RawRwLockFair, RawRwLockUpgradeDowngrade,
    RawRwLockUpgradeTimed,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::mutex::RawMutex {}
    impl Sealed for crate::rwlock::RawRwLock {}
    impl Sealed for crate::biased::RawBiasedRwLock {}
}

/// A raw mutex that scalelock wraps in a mutex type of its own: ties [`ArcMutexGuard`]'s raw
/// type parameter to that wrapper (sealed; implemented by [`RawMutex`] for [`Mutex`]).
///
/// ```
/// fn takes<R: scalelock::ArcLockRawMutex>() {}
/// takes::<scalelock::RawMutex>();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub trait ArcLockRawMutex: lock_api::RawMutex + sealed::Sealed + Sized {
    /// The wrapper (for [`RawMutex`]: [`Mutex<T>`]).
    type Lock<T: ?Sized>: ?Sized + Deref<Target = lock_api::Mutex<Self, T>>;
}

impl ArcLockRawMutex for RawMutex {
    type Lock<T: ?Sized> = Mutex<T>;
}

/// A raw rwlock that scalelock wraps in an rwlock type of its own: ties the owned rwlock guards'
/// raw type parameter to that wrapper (sealed; implemented by [`RawRwLock`] for [`RwLock`] and
/// by [`RawBiasedRwLock`] for [`BiasedRwLock`]).
///
/// ```
/// fn takes<R: scalelock::ArcLockRawRwLock>() {}
/// takes::<scalelock::RawRwLock>();
/// takes::<scalelock::RawBiasedRwLock>();
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub trait ArcLockRawRwLock:
    lock_api::RawRwLockUpgradeDowngrade
    + lock_api::RawRwLockUpgradeTimed
    + lock_api::RawRwLockTimed<Duration = Duration, Instant = Instant>
    + sealed::Sealed
    + Sized
{
    /// The wrapper (for [`RawRwLock`]: [`RwLock<T>`]; for [`RawBiasedRwLock`]:
    /// [`BiasedRwLock<T>`]).
    type Lock<T: ?Sized>: ?Sized + Deref<Target = lock_api::RwLock<Self, T>>;
}

impl ArcLockRawRwLock for RawRwLock {
    type Lock<T: ?Sized> = RwLock<T>;
}

impl ArcLockRawRwLock for RawBiasedRwLock {
    type Lock<T: ?Sized> = BiasedRwLock<T>;
}

/// Moves the `Arc` out of a guard without running the guard's `Drop` (which would unlock).
///
/// # Safety
/// `field` must point into `guard`, which is forgotten: the caller now owns what `field` held.
unsafe fn take_arc<G, L: ?Sized>(guard: G, field: impl FnOnce(&G) -> &Arc<L>) -> Arc<L> {
    let guard = ManuallyDrop::new(guard);
    // SAFETY: `guard` is never dropped, so the `Arc` is read out exactly once.
    unsafe { ptr::read(field(&guard)) }
}

// ---------------------------------------------------------------------------------------------
// Mutex

/// A guard of a [`Mutex`] that owns an `Arc` of it (from [`Mutex::lock_arc`]): it has no
/// lifetime, so it can be stored or returned freely. Unlocks on drop.
///
/// ```
/// use scalelock::{ArcMutexGuard, Mutex, RawMutex};
/// use std::sync::Arc;
///
/// let m = Arc::new(Mutex::new(1));
/// let mut g: ArcMutexGuard<RawMutex, i32> = m.lock_arc();
/// *g += 1;
/// drop(g);
/// assert_eq!(*m.lock(), 2);
/// ```
#[must_use = "if unused the Mutex will immediately unlock"]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub struct ArcMutexGuard<R: ArcLockRawMutex, T: ?Sized> {
    mutex: Arc<R::Lock<T>>,
    marker: PhantomData<*const ()>,
}

// SAFETY: as lock_api's ArcMutexGuard: moving the guard moves exclusive access to a `T: Send`
// and the obligation to unlock, which the raw mutex allows from another thread when its guard
// marker is Send.
unsafe impl<R: ArcLockRawMutex + Send + Sync, T: Send + ?Sized> Send for ArcMutexGuard<R, T> where
    R::GuardMarker: Send
{
}
// SAFETY: a shared guard only hands out `&T`.
unsafe impl<R: ArcLockRawMutex + Sync, T: Sync + ?Sized> Sync for ArcMutexGuard<R, T> {}

impl<R: ArcLockRawMutex, T: ?Sized> ArcMutexGuard<R, T> {
    /// The mutex this guard holds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(()));
    /// let g = m.lock_arc();
    /// assert!(Arc::ptr_eq(scalelock::ArcMutexGuard::mutex(&g), &m));
    /// ```
    pub fn mutex(s: &Self) -> &Arc<R::Lock<T>> {
        &s.mutex
    }

    /// Unlocks the mutex and returns the `Arc` the guard held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(()));
    /// let back = scalelock::ArcMutexGuard::into_arc(m.lock_arc());
    /// assert!(!back.is_locked());
    /// ```
    pub fn into_arc(s: Self) -> Arc<R::Lock<T>> {
        // SAFETY: the guard holds the lock, released here exactly once (Drop does not run).
        unsafe { s.mutex.force_unlock() };
        // SAFETY: `mutex` is the guard's field.
        unsafe { take_arc(s, |g| &g.mutex) }
    }

    /// Unlocks the mutex while `f` runs, then locks it again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let mut g = m.lock_arc();
    /// scalelock::ArcMutexGuard::unlocked(&mut g, || assert!(m.try_lock().is_some()));
    /// *g += 1;
    /// ```
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        // SAFETY: the guard holds the lock; it is taken again before the guard is usable.
        unsafe { s.mutex.force_unlock() };
        let r = f();
        mem::forget(s.mutex.lock());
        r
    }
}

impl<R: ArcLockRawMutex + RawMutexFair, T: ?Sized> ArcMutexGuard<R, T> {
    /// Unlocks the mutex fairly: a waiting thread, if any, gets it next.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(()));
    /// scalelock::ArcMutexGuard::unlock_fair(m.lock_arc());
    /// assert!(!m.is_locked());
    /// ```
    pub fn unlock_fair(s: Self) {
        // SAFETY: the guard holds the lock, released here exactly once (Drop does not run).
        unsafe { s.mutex.force_unlock_fair() };
        // SAFETY: `mutex` is the guard's field.
        drop(unsafe { take_arc(s, |g| &g.mutex) });
    }

    /// Unlocks the mutex fairly and returns the `Arc` the guard held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(()));
    /// let back = scalelock::ArcMutexGuard::into_arc_fair(m.lock_arc());
    /// assert!(!back.is_locked());
    /// ```
    pub fn into_arc_fair(s: Self) -> Arc<R::Lock<T>> {
        // SAFETY: the guard holds the lock, released here exactly once (Drop does not run).
        unsafe { s.mutex.force_unlock_fair() };
        // SAFETY: `mutex` is the guard's field.
        unsafe { take_arc(s, |g| &g.mutex) }
    }

    /// Unlocks the mutex fairly while `f` runs, then locks it again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let mut g = m.lock_arc();
    /// scalelock::ArcMutexGuard::unlocked_fair(&mut g, || *m.lock() = 1);
    /// assert_eq!(*g, 1);
    /// ```
    pub fn unlocked_fair<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        // SAFETY: the guard holds the lock; it is taken again before the guard is usable.
        unsafe { s.mutex.force_unlock_fair() };
        let r = f();
        mem::forget(s.mutex.lock());
        r
    }

    /// Lets a waiting thread have the mutex for a while, if one waits, and takes it back.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let mut g = m.lock_arc();
    /// scalelock::ArcMutexGuard::bump(&mut g); // nobody waits: keeps the lock
    /// *g += 1;
    /// ```
    pub fn bump(s: &mut Self) {
        // SAFETY: the guard holds the lock, which `bump` requires and leaves held on return.
        unsafe { RawMutexFair::bump(s.mutex.raw()) };
    }
}

impl<R: ArcLockRawMutex, T: ?Sized> Deref for ArcMutexGuard<R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.mutex.data_ptr() }
    }
}

impl<R: ArcLockRawMutex, T: ?Sized> DerefMut for ArcMutexGuard<R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, exclusively.
        unsafe { &mut *self.mutex.data_ptr() }
    }
}

impl<R: ArcLockRawMutex, T: ?Sized> Drop for ArcMutexGuard<R, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds the lock.
        unsafe { self.mutex.force_unlock() };
    }
}

impl<R: ArcLockRawMutex, T: fmt::Debug + ?Sized> fmt::Debug for ArcMutexGuard<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<R: ArcLockRawMutex, T: fmt::Display + ?Sized> fmt::Display for ArcMutexGuard<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
impl<T: ?Sized> Mutex<T> {
    /// Wraps a lock this thread just took in an owned guard.
    fn arc_guard(self: &Arc<Self>, guard: crate::MutexGuard<'_, T>) -> ArcMutexGuard<RawMutex, T> {
        mem::forget(guard);
        ArcMutexGuard {
            mutex: Arc::clone(self),
            marker: PhantomData,
        }
    }

    /// [`lock`](Mutex::lock), returning a guard that owns an `Arc` of the mutex.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let g = m.lock_arc();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// ```
    #[track_caller]
    pub fn lock_arc(self: &Arc<Self>) -> ArcMutexGuard<RawMutex, T> {
        self.arc_guard(self.lock())
    }

    /// [`try_lock`](Mutex::try_lock), returning a guard that owns an `Arc` of the mutex.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let g = m.try_lock_arc().unwrap();
    /// assert!(m.try_lock_arc().is_none());
    /// ```
    #[track_caller]
    pub fn try_lock_arc(self: &Arc<Self>) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(self.arc_guard(self.try_lock()?))
    }

    /// [`try_lock_for`](Mutex::try_lock_for), returning a guard that owns an `Arc` of the mutex.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// let g = m.lock_arc();
    /// assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
    /// ```
    #[track_caller]
    pub fn try_lock_arc_for(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(self.arc_guard(self.try_lock_for(timeout)?))
    }

    /// [`try_lock_until`](Mutex::try_lock_until), returning a guard that owns an `Arc` of the
    /// mutex.
    ///
    /// ```
    /// use std::{sync::Arc, time::{Duration, Instant}};
    /// let m = Arc::new(scalelock::Mutex::new(0));
    /// assert!(m.try_lock_arc_until(Instant::now() + Duration::from_millis(1)).is_some());
    /// ```
    #[track_caller]
    pub fn try_lock_arc_until(
        self: &Arc<Self>,
        deadline: Instant,
    ) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(self.arc_guard(self.try_lock_until(deadline)?))
    }
}

// ---------------------------------------------------------------------------------------------
// RwLock and BiasedRwLock

/// A read guard of a [`RwLock`] or [`BiasedRwLock`] that owns an `Arc` of the lock (from
/// `read_arc` & co.). Unlocks on drop.
///
/// ```
/// use scalelock::{ArcRwLockReadGuard, RawRwLock, RwLock};
/// use std::sync::Arc;
///
/// let l = Arc::new(RwLock::new(5));
/// let r: ArcRwLockReadGuard<RawRwLock, i32> = l.read_arc();
/// assert_eq!(*r, 5);
/// assert!(l.try_write().is_none());
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub struct ArcRwLockReadGuard<R: ArcLockRawRwLock, T: ?Sized> {
    rwlock: Arc<R::Lock<T>>,
    marker: PhantomData<(*const (), R::GuardMarker)>,
}

/// The write guard of a [`RwLock`] or [`BiasedRwLock`] that owns an `Arc` of the lock (from
/// `write_arc` & co.). Unlocks on drop.
///
/// ```
/// use scalelock::{ArcRwLockWriteGuard, BiasedRwLock, RawBiasedRwLock};
/// use std::sync::Arc;
///
/// let l = Arc::new(BiasedRwLock::new(5));
/// let mut w: ArcRwLockWriteGuard<RawBiasedRwLock, i32> = l.write_arc();
/// *w += 1;
/// drop(w);
/// assert_eq!(*l.read(), 6);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub struct ArcRwLockWriteGuard<R: ArcLockRawRwLock, T: ?Sized> {
    rwlock: Arc<R::Lock<T>>,
    marker: PhantomData<(*const (), R::GuardMarker)>,
}

/// An upgradable read guard of a [`RwLock`] or [`BiasedRwLock`] that owns an `Arc` of the lock
/// (from `upgradable_read_arc` & co.). Unlocks on drop.
///
/// ```
/// use scalelock::{ArcRwLockUpgradableReadGuard, RwLock};
/// use std::sync::Arc;
///
/// let l = Arc::new(RwLock::new(5));
/// let u = l.upgradable_read_arc();
/// let mut w = ArcRwLockUpgradableReadGuard::upgrade(u);
/// *w = 6;
/// drop(w);
/// assert_eq!(*l.read(), 6);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
#[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
pub struct ArcRwLockUpgradableReadGuard<R: ArcLockRawRwLock, T: ?Sized> {
    rwlock: Arc<R::Lock<T>>,
    marker: PhantomData<(*const (), R::GuardMarker)>,
}

// SAFETY (the six impls below): as lock_api's owned rwlock guards. A guard gives access to a `T`
// that other guards may share, so both need `T: Send + Sync`; moving a guard moves the
// obligation to unlock, allowed from another thread only when the raw lock's guard marker is
// Send (scalelock's rwlocks keep per-thread records of read locks, so theirs is not).
unsafe impl<R: ArcLockRawRwLock + Send + Sync, T: Send + Sync + ?Sized> Send
    for ArcRwLockReadGuard<R, T>
where
    R::GuardMarker: Send,
{
}
unsafe impl<R: ArcLockRawRwLock + Sync, T: Send + Sync + ?Sized> Sync for ArcRwLockReadGuard<R, T> {}
unsafe impl<R: ArcLockRawRwLock + Send + Sync, T: Send + Sync + ?Sized> Send
    for ArcRwLockWriteGuard<R, T>
where
    R::GuardMarker: Send,
{
}
unsafe impl<R: ArcLockRawRwLock + Sync, T: Send + Sync + ?Sized> Sync
    for ArcRwLockWriteGuard<R, T>
{
}
unsafe impl<R: ArcLockRawRwLock + Send + Sync, T: Send + Sync + ?Sized> Send
    for ArcRwLockUpgradableReadGuard<R, T>
where
    R::GuardMarker: Send,
{
}
unsafe impl<R: ArcLockRawRwLock + Sync, T: Send + Sync + ?Sized> Sync
    for ArcRwLockUpgradableReadGuard<R, T>
{
}

/// The raw lock of an owned guard's rwlock.
fn raw<'a, R: ArcLockRawRwLock, T: ?Sized + 'a>(l: &'a Arc<R::Lock<T>>) -> &'a R {
    // SAFETY: the raw lock is only used here to change the lock a guard holds, keeping lock_api's
    // pairing of locks and unlocks (each guard unlocks exactly what it holds).
    unsafe { l.raw() }
}

impl<R: ArcLockRawRwLock, T: ?Sized> ArcRwLockReadGuard<R, T> {
    /// The rwlock this guard reads.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let r = l.read_arc();
    /// assert!(Arc::ptr_eq(scalelock::ArcRwLockReadGuard::rwlock(&r), &l));
    /// ```
    pub fn rwlock(s: &Self) -> &Arc<R::Lock<T>> {
        &s.rwlock
    }

    /// Unlocks and returns the `Arc` the guard held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let back = scalelock::ArcRwLockReadGuard::into_arc(l.read_arc());
    /// assert!(!back.is_locked());
    /// ```
    pub fn into_arc(s: Self) -> Arc<R::Lock<T>> {
        // SAFETY: the guard holds a read lock, released here once (Drop does not run).
        unsafe { lock_api::RawRwLock::unlock_shared(raw::<R, T>(&s.rwlock)) };
        // SAFETY: `rwlock` is the guard's field.
        unsafe { take_arc(s, |g| &g.rwlock) }
    }
}

impl<R: ArcLockRawRwLock, T: ?Sized> ArcRwLockReadGuard<R, T> {
    /// Releases the read lock while `f` runs, then reads again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(0));
    /// let mut r = l.read_arc();
    /// scalelock::ArcRwLockReadGuard::unlocked(&mut r, || *l.write() = 1);
    /// assert_eq!(*r, 1);
    /// ```
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        // SAFETY: the guard holds a read lock; it holds one again before it is usable.
        unsafe { lock_api::RawRwLock::unlock_shared(raw::<R, T>(&s.rwlock)) };
        let r = f();
        lock_api::RawRwLock::lock_shared(raw::<R, T>(&s.rwlock));
        r
    }
}

impl<R: ArcLockRawRwLock, T: ?Sized> ArcRwLockWriteGuard<R, T> {
    /// Releases the write lock while `f` runs, then writes again.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::BiasedRwLock::new(0));
    /// let mut w = l.write_arc();
    /// scalelock::ArcRwLockWriteGuard::unlocked(&mut w, || assert_eq!(*l.read(), 0));
    /// *w = 1;
    /// ```
    pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
        // SAFETY: the guard holds the write lock; it holds it again before it is usable.
        unsafe { lock_api::RawRwLock::unlock_exclusive(raw::<R, T>(&s.rwlock)) };
        let r = f();
        lock_api::RawRwLock::lock_exclusive(raw::<R, T>(&s.rwlock));
        r
    }
}

impl<R: ArcLockRawRwLock + RawRwLockFair, T: ?Sized> ArcRwLockReadGuard<R, T> {
    /// Releases the read lock fairly (a waiting writer, if any, goes next).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(0));
    /// scalelock::ArcRwLockReadGuard::unlock_fair(l.read_arc());
    /// assert!(!l.is_locked());
    /// ```
    pub fn unlock_fair(s: Self) {
        // SAFETY: the guard holds a read lock, released here once (Drop does not run).
        unsafe { RawRwLockFair::unlock_shared_fair(raw::<R, T>(&s.rwlock)) };
        // SAFETY: `rwlock` is the guard's field.
        drop(unsafe { take_arc(s, |g| &g.rwlock) });
    }
}

impl<R: ArcLockRawRwLock + RawRwLockFair, T: ?Sized> ArcRwLockWriteGuard<R, T> {
    /// Releases the write lock fairly (a waiting thread, if any, goes next).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(0));
    /// scalelock::ArcRwLockWriteGuard::unlock_fair(l.write_arc());
    /// assert!(!l.is_locked());
    /// ```
    pub fn unlock_fair(s: Self) {
        // SAFETY: the guard holds the write lock, released here once (Drop does not run).
        unsafe { RawRwLockFair::unlock_exclusive_fair(raw::<R, T>(&s.rwlock)) };
        // SAFETY: `rwlock` is the guard's field.
        drop(unsafe { take_arc(s, |g| &g.rwlock) });
    }
}

impl<R: ArcLockRawRwLock, T: ?Sized> ArcRwLockWriteGuard<R, T> {
    /// The rwlock this guard writes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let w = l.write_arc();
    /// assert!(Arc::ptr_eq(scalelock::ArcRwLockWriteGuard::rwlock(&w), &l));
    /// ```
    pub fn rwlock(s: &Self) -> &Arc<R::Lock<T>> {
        &s.rwlock
    }

    /// Unlocks and returns the `Arc` the guard held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let back = scalelock::ArcRwLockWriteGuard::into_arc(l.write_arc());
    /// assert!(!back.is_locked());
    /// ```
    pub fn into_arc(s: Self) -> Arc<R::Lock<T>> {
        // SAFETY: the guard holds the write lock, released here once (Drop does not run).
        unsafe { lock_api::RawRwLock::unlock_exclusive(raw::<R, T>(&s.rwlock)) };
        // SAFETY: `rwlock` is the guard's field.
        unsafe { take_arc(s, |g| &g.rwlock) }
    }

    /// Turns the write lock into a read lock without letting another writer in.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let mut w = l.write_arc();
    /// *w = 2;
    /// let r = scalelock::ArcRwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r, 2);
    /// assert!(l.try_read().is_some());
    /// ```
    pub fn downgrade(s: Self) -> ArcRwLockReadGuard<R, T>
    where
        R: RawRwLockDowngrade,
    {
        // SAFETY: the guard holds the write lock; afterwards the returned guard holds the read
        // lock it became.
        unsafe { RawRwLockDowngrade::downgrade(raw::<R, T>(&s.rwlock)) };
        ArcRwLockReadGuard {
            // SAFETY: `rwlock` is the guard's field.
            rwlock: unsafe { take_arc(s, |g| &g.rwlock) },
            marker: PhantomData,
        }
    }

    /// Turns the write lock into an upgradable read lock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let u = scalelock::ArcRwLockWriteGuard::downgrade_to_upgradable(l.write_arc());
    /// assert!(l.try_read().is_some());
    /// assert!(l.try_upgradable_read().is_none());
    /// drop(u);
    /// ```
    pub fn downgrade_to_upgradable(s: Self) -> ArcRwLockUpgradableReadGuard<R, T> {
        // SAFETY: the guard holds the write lock; afterwards the returned guard holds the
        // upgradable lock it became.
        unsafe { RawRwLockUpgradeDowngrade::downgrade_to_upgradable(raw::<R, T>(&s.rwlock)) };
        ArcRwLockUpgradableReadGuard {
            // SAFETY: `rwlock` is the guard's field.
            rwlock: unsafe { take_arc(s, |g| &g.rwlock) },
            marker: PhantomData,
        }
    }
}

impl<R: ArcLockRawRwLock, T: ?Sized> ArcRwLockUpgradableReadGuard<R, T> {
    /// The rwlock this guard reads.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let u = l.upgradable_read_arc();
    /// assert!(Arc::ptr_eq(scalelock::ArcRwLockUpgradableReadGuard::rwlock(&u), &l));
    /// ```
    pub fn rwlock(s: &Self) -> &Arc<R::Lock<T>> {
        &s.rwlock
    }

    /// Unlocks and returns the `Arc` the guard held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(()));
    /// let back = scalelock::ArcRwLockUpgradableReadGuard::into_arc(l.upgradable_read_arc());
    /// assert!(!back.is_locked());
    /// ```
    pub fn into_arc(s: Self) -> Arc<R::Lock<T>> {
        // SAFETY: the guard holds an upgradable lock, released here once (Drop does not run).
        unsafe { lock_api::RawRwLockUpgrade::unlock_upgradable(raw::<R, T>(&s.rwlock)) };
        // SAFETY: `rwlock` is the guard's field.
        unsafe { take_arc(s, |g| &g.rwlock) }
    }

    fn into_write(s: Self) -> ArcRwLockWriteGuard<R, T> {
        ArcRwLockWriteGuard {
            // SAFETY: `rwlock` is the guard's field.
            rwlock: unsafe { take_arc(s, |g| &g.rwlock) },
            marker: PhantomData,
        }
    }

    /// Waits for the readers to leave and turns the lock into the write lock.
    ///
    /// ```
    /// use scalelock::ArcRwLockUpgradableReadGuard as U;
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let mut w = U::upgrade(l.upgradable_read_arc());
    /// *w = 2;
    /// ```
    pub fn upgrade(s: Self) -> ArcRwLockWriteGuard<R, T> {
        // SAFETY: the guard holds the upgradable lock; afterwards the write lock.
        unsafe { lock_api::RawRwLockUpgrade::upgrade(raw::<R, T>(&s.rwlock)) };
        Self::into_write(s)
    }

    /// Upgrades if no reader holds the lock; otherwise gives the guard back.
    ///
    /// ```
    /// use scalelock::ArcRwLockUpgradableReadGuard as U;
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let r = l.read_arc();
    /// let u = U::try_upgrade(l.upgradable_read_arc()).unwrap_err();
    /// drop(r);
    /// assert!(U::try_upgrade(u).is_ok());
    /// ```
    pub fn try_upgrade(s: Self) -> Result<ArcRwLockWriteGuard<R, T>, Self> {
        // SAFETY: the guard holds the upgradable lock; on success, the write lock.
        if unsafe { lock_api::RawRwLockUpgrade::try_upgrade(raw::<R, T>(&s.rwlock)) } {
            Ok(Self::into_write(s))
        } else {
            Err(s)
        }
    }

    /// Upgrades, waiting at most `timeout` for the readers to leave.
    ///
    /// ```
    /// use scalelock::ArcRwLockUpgradableReadGuard as U;
    /// use std::{sync::Arc, time::Duration};
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let r = l.read_arc();
    /// assert!(U::try_upgrade_for(l.upgradable_read_arc(), Duration::from_millis(1)).is_err());
    /// ```
    pub fn try_upgrade_for(s: Self, timeout: Duration) -> Result<ArcRwLockWriteGuard<R, T>, Self> {
        // SAFETY: the guard holds the upgradable lock; on success, the write lock.
        if unsafe { RawRwLockUpgradeTimed::try_upgrade_for(raw::<R, T>(&s.rwlock), timeout) } {
            Ok(Self::into_write(s))
        } else {
            Err(s)
        }
    }

    /// Upgrades, waiting until `deadline` at most for the readers to leave.
    ///
    /// ```
    /// use scalelock::ArcRwLockUpgradableReadGuard as U;
    /// use std::{sync::Arc, time::{Duration, Instant}};
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let u = l.upgradable_read_arc();
    /// assert!(U::try_upgrade_until(u, Instant::now() + Duration::from_millis(1)).is_ok());
    /// ```
    pub fn try_upgrade_until(
        s: Self,
        deadline: Instant,
    ) -> Result<ArcRwLockWriteGuard<R, T>, Self> {
        // SAFETY: the guard holds the upgradable lock; on success, the write lock.
        if unsafe { RawRwLockUpgradeTimed::try_upgrade_until(raw::<R, T>(&s.rwlock), deadline) } {
            Ok(Self::into_write(s))
        } else {
            Err(s)
        }
    }

    /// Turns the upgradable lock into a plain read lock.
    ///
    /// ```
    /// use scalelock::ArcRwLockUpgradableReadGuard as U;
    /// use std::sync::Arc;
    /// let l = Arc::new(scalelock::RwLock::new(1));
    /// let r = U::downgrade(l.upgradable_read_arc());
    /// assert!(l.try_upgradable_read().is_some());
    /// assert_eq!(*r, 1);
    /// ```
    pub fn downgrade(s: Self) -> ArcRwLockReadGuard<R, T> {
        // SAFETY: the guard holds the upgradable lock; afterwards a read lock.
        unsafe { RawRwLockUpgradeDowngrade::downgrade_upgradable(raw::<R, T>(&s.rwlock)) };
        ArcRwLockReadGuard {
            // SAFETY: `rwlock` is the guard's field.
            rwlock: unsafe { take_arc(s, |g| &g.rwlock) },
            marker: PhantomData,
        }
    }
}

/// Deref (shared), Drop (with `$unlock`) and formatting for one owned rwlock guard.
macro_rules! rwlock_guard_impls {
    ($guard:ident, $unlock:path) => {
        impl<R: ArcLockRawRwLock, T: ?Sized> Deref for $guard<R, T> {
            type Target = T;
            fn deref(&self) -> &T {
                // SAFETY: the guard holds the lock (at least shared).
                unsafe { &*self.rwlock.data_ptr() }
            }
        }

        impl<R: ArcLockRawRwLock, T: ?Sized> Drop for $guard<R, T> {
            fn drop(&mut self) {
                // SAFETY: the guard holds this kind of lock, released once here.
                unsafe { $unlock(raw::<R, T>(&self.rwlock)) };
            }
        }

        impl<R: ArcLockRawRwLock, T: fmt::Debug + ?Sized> fmt::Debug for $guard<R, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }

        impl<R: ArcLockRawRwLock, T: fmt::Display + ?Sized> fmt::Display for $guard<R, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                (**self).fmt(f)
            }
        }
    };
}

rwlock_guard_impls!(ArcRwLockReadGuard, lock_api::RawRwLock::unlock_shared);
rwlock_guard_impls!(ArcRwLockWriteGuard, lock_api::RawRwLock::unlock_exclusive);
rwlock_guard_impls!(
    ArcRwLockUpgradableReadGuard,
    lock_api::RawRwLockUpgrade::unlock_upgradable
);

impl<R: ArcLockRawRwLock, T: ?Sized> DerefMut for ArcRwLockWriteGuard<R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the write lock, exclusively.
        unsafe { &mut *self.rwlock.data_ptr() }
    }
}

/// The `*_arc` methods of one rwlock wrapper.
macro_rules! rwlock_arc_methods {
    ($name:ident, $raw:ident, $sname:literal) => {
        #[cfg_attr(docsrs, doc(cfg(feature = "arc_lock")))]
        impl<T: ?Sized> $name<T> {
            fn read_guard(self: &Arc<Self>, g: lock_api::RwLockReadGuard<'_, $raw, T>) -> ArcRwLockReadGuard<$raw, T> {
                mem::forget(g);
                ArcRwLockReadGuard { rwlock: Arc::clone(self), marker: PhantomData }
            }

            fn write_guard(self: &Arc<Self>, g: lock_api::RwLockWriteGuard<'_, $raw, T>) -> ArcRwLockWriteGuard<$raw, T> {
                mem::forget(g);
                ArcRwLockWriteGuard { rwlock: Arc::clone(self), marker: PhantomData }
            }

            fn upgradable_guard(
                self: &Arc<Self>,
                g: lock_api::RwLockUpgradableReadGuard<'_, $raw, T>,
            ) -> ArcRwLockUpgradableReadGuard<$raw, T> {
                mem::forget(g);
                ArcRwLockUpgradableReadGuard { rwlock: Arc::clone(self), marker: PhantomData }
            }

            #[doc = concat!("`read`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet (a, b) = (l.read_arc(), l.read_arc());\nassert_eq!(*a + *b, 2);\n```")]
            #[track_caller]
            pub fn read_arc(self: &Arc<Self>) -> ArcRwLockReadGuard<$raw, T> {
                self.read_guard(self.read())
            }

            #[doc = concat!("`try_read`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet w = l.write();\nassert!(l.try_read_arc().is_none());\n```")]
            pub fn try_read_arc(self: &Arc<Self>) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.try_read()?))
            }

            #[doc = concat!("`try_read_for`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::Duration};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nassert!(l.try_read_arc_for(Duration::from_millis(1)).is_some());\n```")]
            #[track_caller]
            pub fn try_read_arc_for(self: &Arc<Self>, timeout: Duration) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.try_read_for(timeout)?))
            }

            #[doc = concat!("`try_read_until`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::{Duration, Instant}};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet w = l.write();\nassert!(l.try_read_arc_until(Instant::now() + Duration::from_millis(1)).is_none());\n```")]
            #[track_caller]
            pub fn try_read_arc_until(self: &Arc<Self>, deadline: Instant) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.try_read_until(deadline)?))
            }

            #[doc = concat!("`read_recursive`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet a = l.read_arc();\nlet b = l.read_arc_recursive();\nassert_eq!(*a + *b, 2);\n```")]
            #[track_caller]
            pub fn read_arc_recursive(self: &Arc<Self>) -> ArcRwLockReadGuard<$raw, T> {
                self.read_guard(self.read_recursive())
            }

            #[doc = concat!("`try_read_recursive`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nassert!(l.try_read_recursive_arc().is_some());\n```")]
            pub fn try_read_recursive_arc(self: &Arc<Self>) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.as_lock_api().try_read_recursive()?))
            }

            #[doc = concat!("`try_read_recursive_for`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::Duration};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet w = l.write();\nassert!(l.try_read_arc_recursive_for(Duration::from_millis(1)).is_none());\n```")]
            pub fn try_read_arc_recursive_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.as_lock_api().try_read_recursive_for(timeout)?))
            }

            #[doc = concat!("`try_read_recursive_until`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::{Duration, Instant}};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet a = l.read_arc();\nassert!(l.try_read_arc_recursive_until(Instant::now() + Duration::from_millis(1)).is_some());\n```")]
            pub fn try_read_arc_recursive_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcRwLockReadGuard<$raw, T>> {
                Some(self.read_guard(self.as_lock_api().try_read_recursive_until(deadline)?))
            }

            #[doc = concat!("`write`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\n*l.write_arc() += 1;\nassert_eq!(*l.read(), 2);\n```")]
            #[track_caller]
            pub fn write_arc(self: &Arc<Self>) -> ArcRwLockWriteGuard<$raw, T> {
                self.write_guard(self.write())
            }

            #[doc = concat!("`try_write`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet r = l.read();\nassert!(l.try_write_arc().is_none());\n```")]
            #[track_caller]
            pub fn try_write_arc(self: &Arc<Self>) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                Some(self.write_guard(self.try_write()?))
            }

            #[doc = concat!("`try_write_for`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::Duration};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet r = l.read();\nassert!(l.try_write_arc_for(Duration::from_millis(1)).is_none());\n```")]
            #[track_caller]
            pub fn try_write_arc_for(self: &Arc<Self>, timeout: Duration) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                Some(self.write_guard(self.try_write_for(timeout)?))
            }

            #[doc = concat!("`try_write_until`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::{Duration, Instant}};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nassert!(l.try_write_arc_until(Instant::now() + Duration::from_millis(1)).is_some());\n```")]
            #[track_caller]
            pub fn try_write_arc_until(self: &Arc<Self>, deadline: Instant) -> Option<ArcRwLockWriteGuard<$raw, T>> {
                Some(self.write_guard(self.try_write_until(deadline)?))
            }

            #[doc = concat!("`upgradable_read`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet u = l.upgradable_read_arc();\nassert!(l.try_upgradable_read().is_none());\nassert_eq!(*l.read(), 1);\n```")]
            #[track_caller]
            pub fn upgradable_read_arc(self: &Arc<Self>) -> ArcRwLockUpgradableReadGuard<$raw, T> {
                self.upgradable_guard(self.upgradable_read())
            }

            #[doc = concat!("`try_upgradable_read`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::sync::Arc;\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet u = l.try_upgradable_read_arc().unwrap();\nassert!(l.try_upgradable_read_arc().is_none());\n```")]
            pub fn try_upgradable_read_arc(self: &Arc<Self>) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                Some(self.upgradable_guard(self.as_lock_api().try_upgradable_read()?))
            }

            #[doc = concat!("`try_upgradable_read_for`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::Duration};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nlet w = l.write();\nassert!(l.try_upgradable_read_arc_for(Duration::from_millis(1)).is_none());\n```")]
            pub fn try_upgradable_read_arc_for(
                self: &Arc<Self>,
                timeout: Duration,
            ) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                Some(self.upgradable_guard(self.as_lock_api().try_upgradable_read_for(timeout)?))
            }

            #[doc = concat!("`try_upgradable_read_until`, returning a guard that owns an `Arc` of the lock.\n\n```\nuse std::{sync::Arc, time::{Duration, Instant}};\nlet l = Arc::new(scalelock::", $sname, "::new(1));\nassert!(l.try_upgradable_read_arc_until(Instant::now() + Duration::from_millis(1)).is_some());\n```")]
            pub fn try_upgradable_read_arc_until(
                self: &Arc<Self>,
                deadline: Instant,
            ) -> Option<ArcRwLockUpgradableReadGuard<$raw, T>> {
                Some(self.upgradable_guard(self.as_lock_api().try_upgradable_read_until(deadline)?))
            }
        }
    };
}

rwlock_arc_methods!(RwLock, RawRwLock, "RwLock");
rwlock_arc_methods!(BiasedRwLock, RawBiasedRwLock, "BiasedRwLock");
