//! [`RwLock<T>`] and [`BiasedRwLock<T>`]: lock_api's rwlock over [`RawRwLock`] /
//! [`RawBiasedRwLock`], plus what lockstat needs to name the caller.
//!
//! Thin wrappers (like [`Mutex`](crate::Mutex)) so that the acquisition methods can be
//! `#[track_caller]`: with lockstat on, contended reads and writes are attributed to the
//! `file:line` that called `read`/`write`/.., and write acquisitions are counted. Uncontended
//! reads are *not* counted: counting them would make every reader write one shared cache line,
//! which is exactly what the biased rwlock exists to avoid. Everything else is lock_api's
//! `RwLock` (through `Deref`), and the guards are lock_api's own, so `upgrade`, `downgrade`,
//! `map` and the rest work unchanged.
//!
//! With the `lockstat` feature (the default) a wrapper adds 24 bytes (a cached pointer to the
//! lock's statistics entry and its name or creation site) and one relaxed load of the global
//! switch to each tracked acquisition; without the feature it adds nothing.

use crate::biased::RawBiasedRwLock;
use crate::rwlock::RawRwLock;
#[cfg(feature = "lockstat")]
use crate::stats::{hook, table};
use core::fmt;
#[cfg(feature = "lockstat")]
use core::mem::size_of;
use core::ops::Deref;
#[cfg(feature = "lockstat")]
use core::panic::Location;
#[cfg(feature = "lockstat")]
use core::sync::atomic::AtomicPtr;
use lock_api::{RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

/// Bytes that complete the first cache line of a [`BiasedRwLock`] (which is line-aligned) after
/// the lockstat fields, so that the raw lock starts the next line: its bias word, its
/// bookkeeping and its lock word then each begin a line, and the data shares the lock word's
/// (see [`RawBiasedRwLock`]). A [`RwLock`] needs none: its lock word and data share a line
/// wherever the wrapper lies.
#[cfg(feature = "lockstat")]
const LINE_PAD: usize = 64 - size_of::<AtomicPtr<table::Entry>>() - size_of::<table::Label>();

/// A tracked write's first, quick attempt: the write lock if taking it needs no waiting and a
/// failure leaves the lock as it found it. Only if it fails does the write name its call site
/// and take the contended path, which lockstat then records.
#[cfg(feature = "lockstat")]
trait QuickWrite {
    fn try_write_quick(&self) -> bool;
}

#[cfg(feature = "lockstat")]
impl QuickWrite for RawRwLock {
    #[inline]
    fn try_write_quick(&self) -> bool {
        self.try_lock_exclusive()
    }
}

#[cfg(feature = "lockstat")]
impl QuickWrite for RawBiasedRwLock {
    /// Only with the bias off: a try that finds the bias on revokes it, and one that then finds
    /// a deferred reader inside turns it back on and fails, work that the write's own path
    /// (which revokes it once and waits) would repeat.
    #[inline]
    fn try_write_quick(&self) -> bool {
        self.try_lock_exclusive_unbiased()
    }
}

/// Defines one rwlock wrapper over the raw lock `$raw`; `$pad` bytes go between the lockstat
/// fields and the lock.
macro_rules! tracked_rwlock {
    ($(#[$doc:meta])* $name:ident, $raw:ident, $sname:literal, $pad:expr) => {
        $(#[$doc])*
        #[repr(C)]
        pub struct $name<T: ?Sized> {
            /// The lock's totals entry in the lockstat table (null until first recorded).
            #[cfg(feature = "lockstat")]
            entry: AtomicPtr<table::Entry>,
            /// Name, or the site that created the lock.
            #[cfg(feature = "lockstat")]
            label: table::Label,
            /// Places `inner` (see [`LINE_PAD`]).
            #[cfg(feature = "lockstat")]
            _pad: [u8; $pad],
            inner: lock_api::RwLock<$raw, T>,
        }

        impl<T> $name<T> {
            #[doc = concat!("An unlocked rwlock holding `value`; lockstat identifies it by its address and this call's location.\n\n```\nstatic L: scalelock::", $sname, "<Vec<u8>> = scalelock::", $sname, "::new(Vec::new());\nL.write().push(1);\nassert_eq!(L.read().len(), 1);\n```")]
            #[track_caller]
            pub const fn new(value: T) -> $name<T> {
                $name {
                    #[cfg(feature = "lockstat")]
                    entry: AtomicPtr::new(core::ptr::null_mut()),
                    #[cfg(feature = "lockstat")]
                    label: table::Label::Created(Location::caller()),
                    #[cfg(feature = "lockstat")]
                    _pad: [0; $pad],
                    inner: lock_api::RwLock::new(value),
                }
            }

            #[doc = concat!("An unlocked rwlock holding `value`, called `name` in lockstat reports.\n\n```\nstatic SCHEMA: scalelock::", $sname, "<u32> = scalelock::", $sname, "::with_name(\"schema\", 0);\nassert_eq!(SCHEMA.name(), if cfg!(feature = \"lockstat\") { Some(\"schema\") } else { None });\n```")]
            pub const fn with_name(name: &'static str, value: T) -> $name<T> {
                #[cfg(not(feature = "lockstat"))]
                let _ = name;
                $name {
                    #[cfg(feature = "lockstat")]
                    entry: AtomicPtr::new(core::ptr::null_mut()),
                    #[cfg(feature = "lockstat")]
                    label: table::Label::Name(name),
                    #[cfg(feature = "lockstat")]
                    _pad: [0; $pad],
                    inner: lock_api::RwLock::new(value),
                }
            }

            #[doc = concat!("An unlocked rwlock around an existing raw lock (lock_api's `const_new`).\n\n```\nuse lock_api::RawRwLock as _;\nstatic L: scalelock::", $sname, "<u8> = scalelock::", $sname, "::const_new(scalelock::", stringify!($raw), "::INIT, 1);\nassert_eq!(*L.read(), 1);\n```")]
            #[track_caller]
            pub const fn const_new(raw: $raw, value: T) -> $name<T> {
                $name {
                    #[cfg(feature = "lockstat")]
                    entry: AtomicPtr::new(core::ptr::null_mut()),
                    #[cfg(feature = "lockstat")]
                    label: table::Label::Created(Location::caller()),
                    #[cfg(feature = "lockstat")]
                    _pad: [0; $pad],
                    inner: lock_api::RwLock::const_new(raw, value),
                }
            }

            #[doc = concat!("Same as [`const_new`](Self::const_new) (lock_api's `from_raw`).\n\n```\nuse lock_api::RawRwLock as _;\nlet l = scalelock::", $sname, "::from_raw(scalelock::", stringify!($raw), "::INIT, 1);\nassert_eq!(*l.read(), 1);\n```")]
            #[track_caller]
            pub const fn from_raw(raw: $raw, value: T) -> $name<T> {
                $name::const_new(raw, value)
            }

            #[doc = concat!("Consumes the lock and returns the value.\n\n```\nassert_eq!(scalelock::", $sname, "::new(7).into_inner(), 7);\n```")]
            pub fn into_inner(self) -> T {
                self.inner.into_inner()
            }
        }

        impl<T: ?Sized> $name<T> {
            #[cfg(feature = "lockstat")]
            #[inline]
            fn raw_lock(&self) -> &$raw {
                // SAFETY: the raw lock is only locked here in pairs with a guard made at once
                // (see the acquisition methods), as lock_api's `raw` requires.
                unsafe { self.inner.raw() }
            }

            /// Lockstat bookkeeping for a read-side acquisition that may wait: fast attempt
            /// first, then the waiting one with the caller named for the contended path.
            #[cfg(feature = "lockstat")]
            #[inline(always)]
            fn shared_tracked(
                &self,
                site: &'static Location<'static>,
                try_fast: impl FnOnce(&$raw) -> bool,
                wait: impl FnOnce(&$raw) -> bool,
            ) -> bool {
                let raw = self.raw_lock();
                if try_fast(raw) {
                    return true;
                }
                hook::label(raw.stats_key(), &self.entry, &self.label);
                hook::with_site(table::site_of_location(site), || wait(raw))
            }

            /// Lockstat bookkeeping for an exclusive acquisition that may wait: fast attempt
            /// first, then the waiting one with the caller named; counts it.
            #[cfg(feature = "lockstat")]
            #[inline(always)]
            fn exclusive_tracked(
                &self,
                site: &'static Location<'static>,
                try_fast: impl FnOnce(&$raw) -> bool,
                wait: impl FnOnce(&$raw) -> bool,
            ) -> bool {
                let raw = self.raw_lock();
                let site = table::site_of_location(site);
                let ok = try_fast(raw) || hook::with_site(site, || wait(raw));
                if ok {
                    let _ = hook::acquired(raw.stats_key(), &self.entry, &self.label, site);
                }
                ok
            }

            #[doc = concat!("Takes a read lock, waiting while a writer holds the lock (or waits for it).\n\n```\nlet l = scalelock::", $sname, "::new(1);\nlet (a, b) = (l.read(), l.read());\nassert_eq!(*a + *b, 2);\n```")]
            #[inline(always)]
            #[track_caller]
            pub fn read(&self) -> RwLockReadGuard<'_, $raw, T> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    self.shared_tracked(
                        Location::caller(),
                        lock_api::RawRwLock::try_lock_shared,
                        |r| {
                            lock_api::RawRwLock::lock_shared(r);
                            true
                        },
                    );
                    // SAFETY: a read lock was taken just above; the guard releases it.
                    return unsafe { self.inner.make_read_guard_unchecked() };
                }
                self.inner.read()
            }

            #[doc = concat!("Takes a read lock if that needs no waiting.\n\n```\nlet l = scalelock::", $sname, "::new(1);\nlet w = l.write();\nassert!(l.try_read().is_none());\ndrop(w);\nassert!(l.try_read().is_some());\n```")]
            #[inline]
            pub fn try_read(&self) -> Option<RwLockReadGuard<'_, $raw, T>> {
                self.inner.try_read()
            }

            #[doc = concat!("Takes a read lock, waiting at most `timeout`.\n\n```\nuse std::time::Duration;\nlet l = scalelock::", $sname, "::new(1);\nlet w = l.write();\nassert!(l.try_read_for(Duration::from_millis(1)).is_none());\n```")]
            #[inline]
            #[track_caller]
            pub fn try_read_for(&self, timeout: Duration) -> Option<RwLockReadGuard<'_, $raw, T>> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    let ok = self.shared_tracked(
                        Location::caller(),
                        lock_api::RawRwLock::try_lock_shared,
                        |r| lock_api::RawRwLockTimed::try_lock_shared_for(r, timeout),
                    );
                    // SAFETY: a read lock was taken just above if `ok`; the guard releases it.
                    return ok.then(|| unsafe { self.inner.make_read_guard_unchecked() });
                }
                self.inner.try_read_for(timeout)
            }

            #[doc = concat!("Takes a read lock, waiting until `deadline` at most.\n\n```\nuse std::time::{Duration, Instant};\nlet l = scalelock::", $sname, "::new(1);\nassert!(l.try_read_until(Instant::now() + Duration::from_millis(1)).is_some());\n```")]
            #[inline]
            #[track_caller]
            pub fn try_read_until(&self, deadline: Instant) -> Option<RwLockReadGuard<'_, $raw, T>> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    let ok = self.shared_tracked(
                        Location::caller(),
                        lock_api::RawRwLock::try_lock_shared,
                        |r| lock_api::RawRwLockTimed::try_lock_shared_until(r, deadline),
                    );
                    // SAFETY: a read lock was taken just above if `ok`; the guard releases it.
                    return ok.then(|| unsafe { self.inner.make_read_guard_unchecked() });
                }
                self.inner.try_read_until(deadline)
            }

            #[doc = concat!("Takes a read lock whenever no writer *holds* the lock, even while writers wait: a thread that already reads may read again.\n\n```\nlet l = scalelock::", $sname, "::new(1);\nlet a = l.read();\nlet b = l.read_recursive();\nassert_eq!(*a + *b, 2);\n```")]
            #[inline(always)]
            #[track_caller]
            pub fn read_recursive(&self) -> RwLockReadGuard<'_, $raw, T> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    self.shared_tracked(
                        Location::caller(),
                        lock_api::RawRwLockRecursive::try_lock_shared_recursive,
                        |r| {
                            lock_api::RawRwLockRecursive::lock_shared_recursive(r);
                            true
                        },
                    );
                    // SAFETY: a read lock was taken just above; the guard releases it.
                    return unsafe { self.inner.make_read_guard_unchecked() };
                }
                self.inner.read_recursive()
            }

            #[doc = concat!("Takes an upgradable read lock: shared with readers, exclusive with writers and other upgradable readers.\n\n```\nuse lock_api::RwLockUpgradableReadGuard;\nlet l = scalelock::", $sname, "::new(1);\nlet u = l.upgradable_read();\nlet mut w = RwLockUpgradableReadGuard::upgrade(u);\n*w += 1;\ndrop(w);\nassert_eq!(*l.read(), 2);\n```")]
            #[inline(always)]
            #[track_caller]
            pub fn upgradable_read(&self) -> RwLockUpgradableReadGuard<'_, $raw, T> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    self.shared_tracked(
                        Location::caller(),
                        lock_api::RawRwLockUpgrade::try_lock_upgradable,
                        |r| {
                            lock_api::RawRwLockUpgrade::lock_upgradable(r);
                            true
                        },
                    );
                    // SAFETY: an upgradable read lock was taken just above; the guard
                    // releases it.
                    return unsafe { self.inner.make_upgradable_guard_unchecked() };
                }
                self.inner.upgradable_read()
            }

            #[doc = concat!("Takes the write lock, waiting for readers and writers to leave.\n\n```\nlet l = scalelock::", $sname, "::new(1);\n*l.write() += 1;\nassert_eq!(*l.read(), 2);\n```")]
            #[inline(always)]
            #[track_caller]
            pub fn write(&self) -> RwLockWriteGuard<'_, $raw, T> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    self.exclusive_tracked(Location::caller(), QuickWrite::try_write_quick, |r| {
                        lock_api::RawRwLock::lock_exclusive(r);
                        true
                    });
                    // SAFETY: the write lock was taken just above; the guard releases it.
                    return unsafe { self.inner.make_write_guard_unchecked() };
                }
                self.inner.write()
            }

            #[doc = concat!("Takes the write lock if it is free.\n\n```\nlet l = scalelock::", $sname, "::new(1);\nlet r = l.read();\nassert!(l.try_write().is_none());\ndrop(r);\nassert!(l.try_write().is_some());\n```")]
            #[inline]
            #[track_caller]
            pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, $raw, T>> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    let ok = self.exclusive_tracked(
                        Location::caller(),
                        lock_api::RawRwLock::try_lock_exclusive,
                        |_| false,
                    );
                    // SAFETY: the write lock was taken just above if `ok`; the guard releases it.
                    return ok.then(|| unsafe { self.inner.make_write_guard_unchecked() });
                }
                self.inner.try_write()
            }

            #[doc = concat!("Takes the write lock, waiting at most `timeout`.\n\n```\nuse std::time::Duration;\nlet l = scalelock::", $sname, "::new(1);\nlet r = l.read();\nassert!(l.try_write_for(Duration::from_millis(1)).is_none());\n```")]
            #[inline]
            #[track_caller]
            pub fn try_write_for(&self, timeout: Duration) -> Option<RwLockWriteGuard<'_, $raw, T>> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    let ok = self.exclusive_tracked(Location::caller(), QuickWrite::try_write_quick, |r| {
                        lock_api::RawRwLockTimed::try_lock_exclusive_for(r, timeout)
                    });
                    // SAFETY: the write lock was taken just above if `ok`; the guard releases it.
                    return ok.then(|| unsafe { self.inner.make_write_guard_unchecked() });
                }
                self.inner.try_write_for(timeout)
            }

            #[doc = concat!("Takes the write lock, waiting until `deadline` at most.\n\n```\nuse std::time::{Duration, Instant};\nlet l = scalelock::", $sname, "::new(1);\nassert!(l.try_write_until(Instant::now() + Duration::from_millis(1)).is_some());\n```")]
            #[inline]
            #[track_caller]
            pub fn try_write_until(&self, deadline: Instant) -> Option<RwLockWriteGuard<'_, $raw, T>> {
                #[cfg(feature = "lockstat")]
                if hook::on() {
                    let ok = self.exclusive_tracked(Location::caller(), QuickWrite::try_write_quick, |r| {
                        lock_api::RawRwLockTimed::try_lock_exclusive_until(r, deadline)
                    });
                    // SAFETY: the write lock was taken just above if `ok`; the guard releases it.
                    return ok.then(|| unsafe { self.inner.make_write_guard_unchecked() });
                }
                self.inner.try_write_until(deadline)
            }

            #[doc = concat!("A mutable reference to the value; the borrow proves exclusivity.\n\n```\nlet mut l = scalelock::", $sname, "::new(1);\n*l.get_mut() = 3;\nassert_eq!(*l.read(), 3);\n```")]
            pub fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }

            #[doc = concat!("The name given with `with_name`, if any.\n\n```\nassert_eq!(scalelock::", $sname, "::new(()).name(), None);\n```")]
            pub fn name(&self) -> Option<&'static str> {
                #[cfg(feature = "lockstat")]
                if let table::Label::Name(n) = self.label {
                    return Some(n);
                }
                None
            }

            #[doc = concat!("The underlying lock_api rwlock (also reachable through `Deref`): every lock_api method is there. Locking through it is recorded per lock, not per call site.\n\n```\nlet l = scalelock::", $sname, "::new(3);\nassert!(!l.as_lock_api().is_locked());\nassert!(!l.is_locked()); // the same, through Deref\n```")]
            pub fn as_lock_api(&self) -> &lock_api::RwLock<$raw, T> {
                &self.inner
            }
        }

        impl<T: ?Sized> Deref for $name<T> {
            type Target = lock_api::RwLock<$raw, T>;

            #[doc = concat!("Everything of lock_api's `RwLock` that the wrapper does not define itself.\n\n```\nlet l = scalelock::", $sname, "::new(5);\nlet w = l.write();\nassert!(l.is_locked_exclusive());\ndrop(w);\n```")]
            fn deref(&self) -> &Self::Target {
                &self.inner
            }
        }

        impl<T: Default> Default for $name<T> {
            #[doc = concat!("A rwlock holding `T::default()`.\n\n```\nlet l: scalelock::", $sname, "<Vec<u8>> = Default::default();\nassert!(l.read().is_empty());\n```")]
            #[track_caller]
            fn default() -> $name<T> {
                $name::new(T::default())
            }
        }

        impl<T> From<T> for $name<T> {
            #[doc = concat!("A rwlock holding `value`.\n\n```\nlet l = scalelock::", $sname, "::from(3);\nassert_eq!(*l.read(), 3);\n```")]
            #[track_caller]
            fn from(value: T) -> $name<T> {
                $name::new(value)
            }
        }

        impl<T: ?Sized + fmt::Debug> fmt::Debug for $name<T> {
            #[doc = concat!("Like lock_api's: the value if a read lock can be taken, `<locked>` otherwise.\n\n```\nassert_eq!(format!(\"{:?}\", scalelock::", $sname, "::new(1)), \"RwLock { data: 1 }\");\n```")]
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.inner, f)
            }
        }
    };
}

tracked_rwlock!(
    /// A reader-writer lock protecting a `T`, built on [`RawRwLock`]: a drop-in for
    /// `parking_lot::RwLock` (same lock_api surface: upgradable, recursive, timed, fair,
    /// downgrade).
    ///
    /// ```
    /// use scalelock::RwLock;
    ///
    /// let lock = RwLock::new(5);
    /// {
    ///     let r1 = lock.read();
    ///     let r2 = lock.read_recursive(); // never waits behind a waiting writer
    ///     assert_eq!(*r1 + *r2, 10);
    /// }
    /// *lock.write() += 1;
    /// assert_eq!(*lock.read(), 6);
    /// ```
    RwLock,
    RawRwLock,
    "RwLock",
    0
);

tracked_rwlock!(
    /// A reader-biased reader-writer lock protecting a `T`, built on [`RawBiasedRwLock`]: readers
    /// on different cores write no common cache line while writes are rare; writers pay for
    /// revoking the bias. The same guard API as [`RwLock`] (no fair-unlock methods).
    ///
    /// ```
    /// use scalelock::BiasedRwLock;
    /// use std::sync::Arc;
    ///
    /// let config = Arc::new(BiasedRwLock::new(String::from("v1")));
    /// let readers: Vec<_> = (0..4)
    ///     .map(|_| {
    ///         let c = Arc::clone(&config);
    ///         std::thread::spawn(move || (0..1000).filter(|_| c.read().starts_with('v')).count())
    ///     })
    ///     .collect();
    /// *config.write() = String::from("v2");
    /// for r in readers {
    ///     assert_eq!(r.join().unwrap(), 1000);
    /// }
    /// assert_eq!(*config.read(), "v2");
    /// ```
    #[repr(align(64))]
    BiasedRwLock,
    RawBiasedRwLock,
    "BiasedRwLock",
    LINE_PAD
);

// BiasedRwLock's raw lock starts a cache line (see `LinePad`), and its data follows the lock
// word on that word's line.
const _: () = {
    use core::mem::{align_of, offset_of};
    assert!(align_of::<BiasedRwLock<u64>>() == 64);
    assert!(offset_of!(BiasedRwLock<u64>, inner) % 64 == 0);
};
