//! [`Mutex<T>`]: lock_api's mutex over [`RawMutex`], plus what lockstat needs to name the caller.
//!
//! A thin wrapper rather than a type alias so that the acquisition methods can be
//! `#[track_caller]` (lock_api's cannot): with lockstat on, each acquisition and each contended
//! wait is attributed to the `file:line` that called `lock`. Everything else is lock_api's
//! `Mutex` (reachable through `Deref`), and the guards are lock_api's own [`MutexGuard`], so
//! [`Condvar`](crate::Condvar), `MutexGuard::map` and the rest work unchanged.
//!
//! With the `lockstat` feature (the default) the wrapper adds 24 bytes (a cached pointer to the
//! lock's statistics entry, 8, and its name or creation site, 16) and one relaxed load of the global
//! switch to `lock`; without the feature it adds nothing.

use crate::mutex::{MutexGuard, RawMutex};
#[cfg(feature = "lockstat")]
use crate::stats::{hook, table};
use core::fmt;
use core::ops::Deref;
#[cfg(feature = "lockstat")]
use core::panic::Location;
#[cfg(feature = "lockstat")]
use core::sync::atomic::AtomicPtr;
use std::time::{Duration, Instant};

/// A mutual-exclusion lock protecting a `T`, built on [`RawMutex`].
///
/// ```
/// use scalelock::Mutex;
/// use std::sync::Arc;
///
/// let counter = Arc::new(Mutex::new(0u64));
/// let handles: Vec<_> = (0..4)
///     .map(|_| {
///         let c = Arc::clone(&counter);
///         std::thread::spawn(move || {
///             for _ in 0..1000 {
///                 *c.lock() += 1;
///             }
///         })
///     })
///     .collect();
/// for h in handles {
///     h.join().unwrap();
/// }
/// assert_eq!(*counter.lock(), 4000);
/// ```
#[repr(C)]
pub struct Mutex<T: ?Sized> {
    /// The lock's totals entry in the lockstat table (null until first recorded).
    #[cfg(feature = "lockstat")]
    entry: AtomicPtr<table::Entry>,
    /// Name, or the site that created the lock.
    #[cfg(feature = "lockstat")]
    label: table::Label,
    inner: lock_api::Mutex<RawMutex, T>,
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`. Lockstat identifies it by its address and this call's
    /// location; once it is dropped, by this call's location alone (see
    /// [`stats`](crate::stats)'s limits).
    ///
    /// ```
    /// static M: scalelock::Mutex<Vec<u8>> = scalelock::Mutex::new(Vec::new());
    /// M.lock().push(1);
    /// ```
    #[track_caller]
    pub const fn new(value: T) -> Mutex<T> {
        Mutex {
            #[cfg(feature = "lockstat")]
            entry: AtomicPtr::new(core::ptr::null_mut()),
            #[cfg(feature = "lockstat")]
            label: table::Label::Created(Location::caller()),
            inner: lock_api::Mutex::new(value),
        }
    }

    /// An unlocked mutex holding `value`, called `name` in lockstat reports.
    ///
    /// ```
    /// static TABLE_CACHE: scalelock::Mutex<u32> = scalelock::Mutex::with_name("table_cache", 0);
    /// assert_eq!(TABLE_CACHE.name(), if cfg!(feature = "lockstat") { Some("table_cache") } else { None });
    /// ```
    pub const fn with_name(name: &'static str, value: T) -> Mutex<T> {
        #[cfg(not(feature = "lockstat"))]
        let _ = name;
        Mutex {
            #[cfg(feature = "lockstat")]
            entry: AtomicPtr::new(core::ptr::null_mut()),
            #[cfg(feature = "lockstat")]
            label: table::Label::Name(name),
            inner: lock_api::Mutex::new(value),
        }
    }

    /// An unlocked mutex around an existing raw mutex (lock_api's `const_new`).
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    /// static M: scalelock::Mutex<u8> = scalelock::Mutex::const_new(scalelock::RawMutex::INIT, 1);
    /// assert_eq!(*M.lock(), 1);
    /// ```
    #[track_caller]
    pub const fn const_new(raw: RawMutex, value: T) -> Mutex<T> {
        Mutex {
            #[cfg(feature = "lockstat")]
            entry: AtomicPtr::new(core::ptr::null_mut()),
            #[cfg(feature = "lockstat")]
            label: table::Label::Created(Location::caller()),
            inner: lock_api::Mutex::const_new(raw, value),
        }
    }

    /// Same as [`const_new`](Self::const_new) (lock_api's `from_raw`).
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    /// let m = scalelock::Mutex::from_raw(scalelock::RawMutex::INIT, 1);
    /// assert_eq!(*m.lock(), 1);
    /// ```
    #[track_caller]
    pub const fn from_raw(raw: RawMutex, value: T) -> Mutex<T> {
        Mutex::const_new(raw, value)
    }

    /// Consumes the mutex and returns the value.
    ///
    /// ```
    /// assert_eq!(scalelock::Mutex::new(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Acquires the mutex, spinning then sleeping while another thread holds it.
    ///
    /// ```
    /// let m = scalelock::Mutex::new(1);
    /// *m.lock() += 1;
    /// assert_eq!(*m.lock(), 2);
    /// ```
    // inline(always): the check of the switch must stay a load and a branch at the call site,
    // not a call (the recording path below is a separate function).
    #[inline(always)]
    #[track_caller]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        #[cfg(feature = "lockstat")]
        if hook::on() {
            return self.lock_recorded(Location::caller());
        }
        self.inner.lock()
    }

    #[cfg(feature = "lockstat")]
    #[inline(always)]
    fn lock_recorded(&self, caller: &'static Location<'static>) -> MutexGuard<'_, T> {
        let raw = self.raw_mutex();
        let site = table::site_of_location(caller);
        // The fast path of `lock` alone; with recording on, the contended path is entered here,
        // naming the caller first.
        if !raw.try_lock_idle() {
            // Contended (or free with a waiter's flag set): let the raw lock's slow path know who
            // is waiting.
            hook::with_site(site, || lock_api::RawMutex::lock(raw));
        }
        self.acquired(raw, site);
        // SAFETY: this thread acquired the lock just above; the guard releases it.
        unsafe { self.inner.make_guard_unchecked() }
    }

    /// Counts an acquisition (the caller holds the lock); every sample period, times the hold.
    #[cfg(feature = "lockstat")]
    #[inline]
    fn acquired(&self, raw: &RawMutex, site: usize) {
        let key = raw as *const RawMutex as usize;
        if let Some(total) = hook::acquired(key, &self.entry, &self.label, site) {
            hook::start_hold(total, raw, site);
        }
    }

    #[cfg(feature = "lockstat")]
    #[inline]
    fn raw_mutex(&self) -> &RawMutex {
        // SAFETY: the raw mutex is only locked and unlocked here in pairs with a guard (see
        // `lock_recorded`), as lock_api's `raw` requires.
        unsafe { self.inner.raw() }
    }

    /// Acquires the mutex if it is free.
    ///
    /// ```
    /// let m = scalelock::Mutex::new(());
    /// let g = m.try_lock();
    /// assert!(g.is_some());
    /// assert!(m.try_lock().is_none());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let g = self.inner.try_lock()?;
        #[cfg(feature = "lockstat")]
        if hook::on() {
            let site = table::site_of_location(Location::caller());
            self.acquired(self.raw_mutex(), site);
        }
        Some(g)
    }

    /// Acquires the mutex, waiting at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let m = scalelock::Mutex::new(());
    /// let _g = m.lock();
    /// assert!(m.try_lock_for(Duration::from_millis(1)).is_none());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
        #[cfg(feature = "lockstat")]
        if hook::on() {
            let site = table::site_of_location(Location::caller());
            let g = hook::with_site(site, || self.inner.try_lock_for(timeout))?;
            self.acquired(self.raw_mutex(), site);
            return Some(g);
        }
        self.inner.try_lock_for(timeout)
    }

    /// Acquires the mutex, waiting until `deadline` at most.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let m = scalelock::Mutex::new(());
    /// assert!(m.try_lock_until(Instant::now() + Duration::from_millis(1)).is_some());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock_until(&self, deadline: Instant) -> Option<MutexGuard<'_, T>> {
        #[cfg(feature = "lockstat")]
        if hook::on() {
            let site = table::site_of_location(Location::caller());
            let g = hook::with_site(site, || self.inner.try_lock_until(deadline))?;
            self.acquired(self.raw_mutex(), site);
            return Some(g);
        }
        self.inner.try_lock_until(deadline)
    }

    /// A mutable reference to the value; no locking needed, the borrow proves exclusivity.
    ///
    /// ```
    /// let mut m = scalelock::Mutex::new(1);
    /// *m.get_mut() = 5;
    /// assert_eq!(*m.lock(), 5);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// The name given with [`with_name`](Mutex::with_name), if any.
    ///
    /// ```
    /// assert_eq!(scalelock::Mutex::new(()).name(), None);
    /// ```
    pub fn name(&self) -> Option<&'static str> {
        #[cfg(feature = "lockstat")]
        if let table::Label::Name(n) = self.label {
            return Some(n);
        }
        None
    }

    /// The underlying lock_api mutex (also reachable through `Deref`): every lock_api method
    /// (`is_locked`, `data_ptr`, `force_unlock`, `raw`, `make_guard_unchecked`, ..) is there.
    /// Locking through it works but is not attributed to a call site by lockstat.
    ///
    /// ```
    /// let m = scalelock::Mutex::new(3);
    /// let inner: &lock_api::Mutex<scalelock::RawMutex, i32> = m.as_lock_api();
    /// assert!(!inner.is_locked());
    /// assert!(!m.is_locked()); // the same, through Deref
    /// ```
    pub fn as_lock_api(&self) -> &lock_api::Mutex<RawMutex, T> {
        &self.inner
    }
}

impl<T: ?Sized> Deref for Mutex<T> {
    type Target = lock_api::Mutex<RawMutex, T>;

    /// Everything of lock_api's `Mutex` that the wrapper does not define itself.
    ///
    /// ```
    /// let m = scalelock::Mutex::new(5);
    /// let g = m.lock();
    /// assert!(m.is_locked());
    /// drop(g);
    /// // SAFETY: (example) data_ptr is only read while nobody holds the lock.
    /// assert_eq!(unsafe { *m.data_ptr() }, 5);
    /// ```
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<T: Default> Default for Mutex<T> {
    /// A mutex holding `T::default()`.
    ///
    /// ```
    /// let m: scalelock::Mutex<Vec<u8>> = Default::default();
    /// assert!(m.lock().is_empty());
    /// ```
    #[track_caller]
    fn default() -> Mutex<T> {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    /// A mutex holding `value`.
    ///
    /// ```
    /// let m = scalelock::Mutex::from(3);
    /// assert_eq!(*m.lock(), 3);
    /// ```
    #[track_caller]
    fn from(value: T) -> Mutex<T> {
        Mutex::new(value)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// Like lock_api's: the value if the lock is free, `<locked>` otherwise.
    ///
    /// ```
    /// assert_eq!(format!("{:?}", scalelock::Mutex::new(1)), "Mutex { data: 1 }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
