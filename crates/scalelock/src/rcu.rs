//! scalelock's RCU cell: readers pay nothing another core can see; writers copy, publish, retire.
//!
//! # Design
//!
//! An [`Rcu<T>`] is one pointer to a heap-allocated *version* of `T`. A reader *pins* itself
//! (enters a read-side critical section), loads the pointer and reads the version in place, with no
//! lock and no reference count. A writer builds a whole new version, publishes it with one pointer
//! store, and *retires* the old one: the old version is freed only after a *grace period*, once
//! every reader that could have loaded the old pointer has unpinned. Writers are serialised among
//! themselves by a scalelock [`RawMutex`]; readers never wait for writers and writers never wait for
//! readers (only [`synchronize`] does).
//!
//! ```text
//!   reader                               writer (holds the writer mutex)
//!   ------                               ------
//!   pin: own epoch slot := global epoch   new := Box(f(&*ptr))
//!   p := ptr.load(Acquire)                old := ptr.swap(new, Release)
//!   ... read *p in place ...              retire(old): queued with the global epoch E
//!   unpin: own epoch slot := unpinned     old is freed once the global epoch reaches E + 2,
//!                                         i.e. after every thread pinned at or before E unpinned
//! ```
//!
//! # Why crossbeam-epoch
//!
//! Reclamation is delegated to [`crossbeam_epoch`] (the collector behind crossbeam-deque, and so
//! rayon's work stealing, and crossbeam-skiplist: widely used and long maintained); this file
//! contains no epoch or hazard-pointer code of its own. It was chosen over `arc-swap` for two
//! reasons:
//!
//! - **Grace periods are explicit.** Epochs *are* grace periods, so [`synchronize`] ("wait until
//!   every reader that started before now has finished") is a deferred marker plus a wait. arc-swap
//!   tracks readers per pointer (debts), not per time, so it can only say "nobody holds *this*
//!   version any more", and has no way to wait for the readers of an unknown set of versions.
//! - **Readers stay private.** An arc-swap load writes a per-thread debt slot, like a pin, but
//!   falls back to the version's shared reference count when a thread holds more than a handful of
//!   guards, and writers must visit every thread's slots. An epoch pin writes only the thread's
//!   own epoch slot (but see the amortised collector step below), whatever the nesting depth
//!   (nested pins only bump a thread-local counter).
//!
//! scalelock keeps its **own collector**, not crossbeam's process-wide default one, so that
//! [`synchronize`] waits only for scalelock RCU readers, never for an unrelated crossbeam user that
//! happens to hold a guard, and so that scalelock's garbage is not mixed with anyone else's.
//!
//! # What a reader costs
//!
//! [`Rcu::read`] (outermost, not nested) does: a thread-local lookup of the thread's collector
//! handle, one `lock cmpxchg` on the thread's **own** epoch slot (crossbeam's full fence on x86),
//! one `Acquire` load of the pointer (a plain `mov` on x86); dropping the guard is one `Release`
//! store to the same private slot. Besides its own slot, a reader only *reads* shared lines (the
//! global epoch and the cell's pointer), which change only when the epoch advances or a writer
//! publishes. The one exception: once every 128 outermost pins, the pin helps the collector
//! (reads every thread's epoch slot, may advance the global epoch with a compare-exchange and free
//! expired garbage); that amortised step is where a reader writes a shared line. A nested read
//! (inside another guard) skips the fence and the step: a counter bump.
//!
//! A thread that reads in a loop can skip the fence altogether with an [`RcuReader`] (the QSBR
//! flavour of RCU): it stays pinned, each read is one load, and it declares a quiescent state now
//! and then, which costs one unpin and pin. At 100k-entry dentry-cache lookups, where every
//! lookup already waits for cache misses, the per-read fence cost about 19 ns more than the
//! misses it waited behind (`scalelock bench --workload path-lookup`, 1 thread).
//!
//! Measured with the former `rcu_read_cost` example, now `scalelock bench --workload rcu-read`
//! (CPU time per read of a `[u64; 4]`, read + sum + drop, on the 2-vCPU AMD EPYC development VM
//! shared with other jobs; three runs agreed within 0.5 ns):
//!
//! ```text
//! CPU ns per read                      1 thread    2 threads (same cell)
//! rcu read (outermost)                      6.9         10.6 - 11.1
//! rcu read (nested, 16 per outer)           2.1          2.3 -  2.4
//! scalelock Mutex lock                     10.4         47.1 - 50.6
//! std RwLock read                          10.2         38.7 - 45.0
//! ```
//!
//! An outermost read costs about 7 ns alone, a nested one 2 ns. With both cores reading, the RCU
//! read rises to about 11 ns; we attribute the extra 4 ns to the amortised collector step (it pulls
//! the other thread's epoch slot over and advances the global epoch that every pin reads), since a
//! nested read, which skips both, does not rise. A lock's readers instead fight over the lock word
//! on every read and pay 40-50 ns each.
//!
//! # What a writer costs, and the caveats
//!
//! A write allocates and builds a whole new version (so keep each cell small: shard a big map over
//! many cells, each an `Rcu` of one small bucket), takes the writer mutex, swaps the pointer, and
//! *flushes* the retired version into the collector's global queue at once (so that
//! [`synchronize`] can promise the version is freed, see there). A reader that stays pinned for a
//! long time holds back the reclamation of *every* version retired meanwhile, in every `Rcu`: keep
//! read-side critical sections short and never block inside one. [`synchronize`] inside a
//! read-side critical section would wait for itself; it panics instead.
//!
//! # Checking it with Miri
//!
//! Miri's reports on this module's tests (a Stacked Borrows violation; a data race between a
//! reader and a version's destructor under Tree Borrows) arise inside crossbeam-epoch 0.9 and
//! reproduce with crossbeam-epoch alone; the header of `tests/rcu.rs` gives the evidence and the
//! flags under which they pass.
//!
//! # Example
//!
//! ```
//! use std::collections::HashMap;
//! use scalelock::rcu::{synchronize, Rcu};
//!
//! // A routing table: looked up on every packet, changed once in a while.
//! let routes = Rcu::new(HashMap::from([("10.0.0.0/8", "eth0")]));
//! assert_eq!(routes.read().get("10.0.0.0/8"), Some(&"eth0"));
//! routes.update(|old| {
//!     let mut new = old.clone();
//!     new.insert("192.168.0.0/16", "eth1");
//!     new
//! });
//! synchronize(); // the one-route table is now gone
//! assert_eq!(routes.read().len(), 2);
//! ```

use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_epoch::{self as epoch, Atomic, Collector, Guard, LocalHandle, Owned};

use crate::mutex::RawMutex;

/// scalelock's private epoch collector, shared by every [`Rcu`] in the process.
fn collector() -> &'static Collector {
    static COLLECTOR: OnceLock<Collector> = OnceLock::new();
    COLLECTOR.get_or_init(Collector::new)
}

thread_local! {
    /// This thread's registration with [`collector`], made on its first read or write.
    static HANDLE: LocalHandle = collector().register();
}

/// Enters a read-side critical section on this thread (nested calls are cheap).
#[inline]
fn pin() -> Guard {
    HANDLE
        .try_with(LocalHandle::pin)
        // During thread teardown the thread-local may be gone: a temporary registration works
        // (the guard keeps it alive until it is dropped), just more slowly.
        .unwrap_or_else(|_| collector().register().pin())
}

/// Whether this thread is inside a read-side critical section of scalelock's collector.
fn is_pinned() -> bool {
    HANDLE.try_with(LocalHandle::is_pinned).unwrap_or(false)
}

/// A read-mostly cell: lock-free reads of the current version, copy-and-publish writes.
///
/// Readers call [`read`](Rcu::read) and get a guard that derefs to the version that was current
/// when they called; it stays valid (and unchanged) until the guard is dropped, however many
/// writers publish meanwhile. Writers call [`store`](Rcu::store) or [`update`](Rcu::update);
/// they are serialised by a [`RawMutex`], so an `update` never loses another writer's change. See the
/// [module documentation](self) for the design and its costs.
///
/// ```
/// use scalelock::rcu::Rcu;
///
/// let config = Rcu::new(vec!["10.0.0.0/8".to_string()]);
/// let before = config.read();
/// config.update(|routes| {
///     let mut routes = routes.clone();
///     routes.push("192.168.0.0/16".to_string());
///     routes
/// });
/// assert_eq!(before.len(), 1); // an old reader keeps its version
/// assert_eq!(config.read().len(), 2); // a new reader sees the new one
/// ```
pub struct Rcu<T> {
    /// The current version; never null (except inside `into_inner`).
    current: Atomic<T>,
    /// Serialises writers. The bare lock (8 bytes, no lockstat bookkeeping), so that a cell is
    /// two words and an array of cells (a hash table's buckets) stays dense.
    writer: lock_api::Mutex<RawMutex, ()>,
}

impl<T> Rcu<T> {
    /// A cell whose first version is `value`.
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::new(7);
    /// assert_eq!(*cell.read(), 7);
    /// ```
    pub fn new(value: T) -> Rcu<T> {
        Rcu {
            current: Atomic::new(value),
            writer: lock_api::Mutex::new(()),
        }
    }

    /// A guard to the current version: no lock, no reference count, nothing another core sees.
    ///
    /// The guard pins this thread: versions retired while it lives are not freed until it is
    /// dropped, so keep it short-lived. It cannot be sent to another thread.
    ///
    /// ```
    /// use scalelock::rcu::Rcu;
    ///
    /// let cell = Rcu::new(String::from("v1"));
    /// let guard = cell.read();
    /// cell.store(String::from("v2"));
    /// assert_eq!(*guard, "v1");
    /// drop(guard);
    /// assert_eq!(*cell.read(), "v2");
    /// ```
    #[inline]
    pub fn read(&self) -> RcuReadGuard<'_, T> {
        let pin = pin();
        // Acquire pairs with the writer's Release swap: the version's contents, written before
        // it was published, are visible here.
        let shared = self.current.load(Ordering::Acquire, &pin);
        // `current` is never null: set by `new`, replaced only by non-null `Owned`s.
        let value = NonNull::from(
            // SAFETY: loaded under `pin`; the version cannot be freed while this thread stays
            // pinned, and the pin moves into the guard that hands out the reference.
            unsafe { shared.deref() },
        );
        RcuReadGuard {
            value,
            _pin: pin,
            _cell: PhantomData,
        }
    }

    /// The current version, mutably: no reader or writer can exist while `&mut self` does.
    ///
    /// ```
    /// let mut cell = scalelock::rcu::Rcu::new(1);
    /// *cell.get_mut() += 1;
    /// assert_eq!(*cell.read(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` excludes every reader (guards borrow the cell) and every writer;
        // `current` is never null and points at a live version owned by the cell.
        unsafe {
            self.current
                .load(Ordering::Relaxed, epoch::unprotected())
                .deref_mut()
        }
    }

    /// Consumes the cell and returns its current version.
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::new(vec![1, 2]);
    /// assert_eq!(cell.into_inner(), vec![1, 2]);
    /// ```
    pub fn into_inner(mut self) -> T {
        // Leave null behind: `Drop` skips it.
        let current = core::mem::replace(&mut self.current, Atomic::null());
        // SAFETY: we own the cell, so no reader (guards borrow it) or writer exists; `current`
        // was never null and owns its version, which is moved out exactly once.
        unsafe { *current.into_owned().into_box() }
    }
}

impl<T: Send + 'static> Rcu<T> {
    /// Publishes `value` as the new version and retires the old one.
    ///
    /// Readers that already hold a guard keep the old version; every later [`read`](Rcu::read)
    /// sees `value` (or a newer one). The old version is dropped, possibly on another thread, once
    /// no reader can see it.
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::new(1);
    /// cell.store(2);
    /// assert_eq!(*cell.read(), 2);
    /// ```
    pub fn store(&self, value: T) {
        self.update(move |_| value);
    }

    /// Publishes `f(&current)` as the new version (copy-update) and retires the old one.
    ///
    /// Writers are serialised, so concurrent `update`s compose: none is lost. `f` runs with the
    /// writer mutex held (keep it short and do not write to the same cell inside it). If `f`
    /// panics, nothing is published.
    ///
    /// ```
    /// use std::thread;
    /// use scalelock::rcu::Rcu;
    ///
    /// let counter = Rcu::new(0u64);
    /// thread::scope(|s| {
    ///     for _ in 0..4 {
    ///         s.spawn(|| for _ in 0..100 { counter.update(|n| n + 1) });
    ///     }
    /// });
    /// assert_eq!(*counter.read(), 400);
    /// ```
    pub fn update<F: FnOnce(&T) -> T>(&self, f: F) {
        let _ = self.try_update(|old| Ok::<T, ()>(f(old)));
    }

    /// Like [`update`](Rcu::update), but `f` may decline: on `Err(e)` nothing is published and
    /// `e` is returned (no copy is made or retired).
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::new(vec![1, 2, 3]);
    /// let removed = cell.try_update(|v| {
    ///     if v.contains(&9) {
    ///         Ok(v.iter().copied().filter(|&x| x != 9).collect())
    ///     } else {
    ///         Err("absent")
    ///     }
    /// });
    /// assert_eq!(removed, Err("absent"));
    /// assert_eq!(*cell.read(), vec![1, 2, 3]);
    /// ```
    pub fn try_update<E, F: FnOnce(&T) -> Result<T, E>>(&self, f: F) -> Result<(), E> {
        let _writer = self.writer.lock();
        let pin = pin();
        // Relaxed suffices: only writers change `current`, and they all hold `writer`, whose
        // acquisition ordered us after the last writer's swap (and the version it published).
        let old = self.current.load(Ordering::Relaxed, &pin);
        // SAFETY: `current` is never null; `old` cannot be retired by anyone but us while we
        // hold `writer`, and we are pinned.
        let new = Owned::new(f(unsafe { old.deref() })?);
        // Release: a reader that loads the new pointer sees the version fully built.
        let old = self.current.swap(new, Ordering::Release, &pin);
        // SAFETY: `old` is no longer reachable from `current`, so only readers pinned now can
        // see it; crossbeam frees it after they all unpin. It is retired exactly once (by the
        // writer that unlinked it, under `writer`). `T: Send + 'static` lets it be dropped on
        // any thread, at any later time.
        unsafe { pin.defer_destroy(old) };
        // Hand the retired version to the global queue now, rather than leaving it in this
        // thread's local bag until 64 accumulate: this is what lets `synchronize` promise it.
        pin.flush();
        Ok(())
    }
}

impl<T> Drop for Rcu<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader (guards borrow the cell) or writer exists, so no guard
        // is needed; the current version is owned by the cell and dropped exactly once. Retired
        // versions are owned by the collector, which frees them.
        unsafe {
            let current = self.current.load(Ordering::Relaxed, epoch::unprotected());
            // Null only after `into_inner`.
            if !current.is_null() {
                drop(current.into_owned());
            }
        }
    }
}

impl<T: Default> Default for Rcu<T> {
    /// A cell holding `T::default()`.
    ///
    /// ```
    /// let cell: scalelock::rcu::Rcu<u32> = Default::default();
    /// assert_eq!(*cell.read(), 0);
    /// ```
    fn default() -> Rcu<T> {
        Rcu::new(T::default())
    }
}

impl<T> From<T> for Rcu<T> {
    /// A cell whose first version is `value`.
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::from("x");
    /// assert_eq!(*cell.read(), "x");
    /// ```
    fn from(value: T) -> Rcu<T> {
        Rcu::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Rcu<T> {
    /// Formats the current version.
    ///
    /// ```
    /// assert_eq!(format!("{:?}", scalelock::rcu::Rcu::new(3)), "Rcu(3)");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Rcu").field(&*self.read()).finish()
    }
}

/// A reader's view of one version of an [`Rcu`], returned by [`Rcu::read`].
///
/// Derefs to the version that was current when it was made. While it lives, this thread is in a
/// read-side critical section: that version (and every version retired since) stays allocated.
/// It is `!Send`: the critical section belongs to the thread.
///
/// ```
/// use scalelock::rcu::{Rcu, RcuReadGuard};
///
/// let cell = Rcu::new((1, "one"));
/// let guard: RcuReadGuard<'_, (i32, &str)> = cell.read();
/// assert_eq!(guard.1, "one");
/// ```
pub struct RcuReadGuard<'a, T> {
    value: NonNull<T>,
    /// Keeps `value` alive: the version cannot be freed while this thread is pinned.
    _pin: Guard,
    _cell: PhantomData<&'a T>,
}

impl<T> Deref for RcuReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: `value` was loaded from the cell under `_pin`, which this guard still holds,
        // so the version has not been freed; versions are never mutated after publication.
        unsafe { self.value.as_ref() }
    }
}

impl<T: fmt::Debug> fmt::Debug for RcuReadGuard<'_, T> {
    /// Formats the version.
    ///
    /// ```
    /// let cell = scalelock::rcu::Rcu::new(5);
    /// assert_eq!(format!("{:?}", cell.read()), "5");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// A thread's long-lived read-side critical section, for threads that read very often: the
/// *quiescent-state-based* flavour of RCU (QSBR, as in liburcu's `urcu-qsbr`).
///
/// [`Rcu::read`] pins and unpins the thread around every read, and the pin is a full fence. A
/// thread that reads in a loop can instead stay pinned: it creates one `RcuReader`, reads
/// through it ([`read`](RcuReader::read): one load, no fence, nothing written) and now and then
/// declares a *quiescent state* ([`quiescent`](RcuReader::quiescent)), a moment at which it holds
/// no reference from a read. That one call pays the fence for all the reads since the last one.
/// The borrow checker enforces the rule: a reference from `read` borrows the reader, and
/// `quiescent` takes it mutably.
///
/// The price is paid by writers and memory: a version retired while the reader is pinned is
/// freed only after the reader's next two quiescent states (each lets the collector's epoch
/// advance one step past it), and [`synchronize`] waits for them. Call `quiescent` often (every
/// few dozen reads, or between requests, as a server would), and drop the reader (go offline)
/// before the thread blocks or stops reading for long. Never call [`synchronize`] while holding
/// one: it would wait for itself (it panics instead).
///
/// ```
/// use scalelock::rcu::{Rcu, RcuReader};
///
/// let table = Rcu::new(vec![1, 2, 3]);
/// let mut reader = RcuReader::new();
/// let mut sum = 0;
/// for i in 0..1000 {
///     sum += reader.read(&table)[i % 3];
///     if i % 64 == 63 {
///         reader.quiescent(); // no reference from `read` lives here
///     }
/// }
/// assert_eq!(sum, 1999);
/// ```
pub struct RcuReader {
    guard: Guard,
}

impl RcuReader {
    /// Enters a read-side critical section that lasts until [`quiescent`](RcuReader::quiescent)
    /// or drop.
    #[inline]
    pub fn new() -> RcuReader {
        RcuReader { guard: pin() }
    }

    /// The current version of `cell`: one `Acquire` load (a plain `mov` on x86), no fence,
    /// nothing written. The reference lives until this reader's next quiescent state.
    #[inline]
    pub fn read<'r, T>(&'r self, cell: &'r Rcu<T>) -> &'r T {
        let shared = cell.current.load(Ordering::Acquire, &self.guard);
        // SAFETY: loaded while this thread is pinned by `self.guard`; the version is freed only
        // after the thread unpins, which takes `&mut self` (`quiescent`) or dropping `self`,
        // neither possible while the returned borrow of `self` lives. `current` is never null.
        unsafe { shared.deref() }
    }

    /// Declares a quiescent state: the thread holds no reference from [`read`](RcuReader::read)
    /// (guaranteed by `&mut self`), so versions retired before now may be freed. Costs about
    /// one [`Rcu::read`] (an unpin and a pin).
    #[inline]
    pub fn quiescent(&mut self) {
        self.guard.repin();
    }
}

impl Default for RcuReader {
    fn default() -> RcuReader {
        RcuReader::new()
    }
}

impl fmt::Debug for RcuReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RcuReader")
    }
}

/// Waits until every RCU reader (of any [`Rcu`]) that started before the call has finished, and
/// every version retired before the call is unreachable and handed to its destructor.
///
/// Use it when a caller must know an old version is gone, for example before unmapping memory the
/// old version pointed into, or to bound memory after a burst of writes. It takes at least two
/// advances of the collector's epoch, so it costs microseconds when readers are short and
/// blocks for as long as the oldest reader stays inside. Readers that start after the call do not
/// delay it beyond that.
///
/// # Panics
///
/// If the calling thread is itself inside a read-side critical section (holds an
/// [`RcuReadGuard`]): it would wait for itself forever.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use scalelock::rcu::{synchronize, Rcu};
///
/// struct Version(Arc<AtomicUsize>);
/// impl Drop for Version {
///     fn drop(&mut self) { self.0.fetch_add(1, Ordering::SeqCst); }
/// }
///
/// let dropped = Arc::new(AtomicUsize::new(0));
/// let cell = Rcu::new(Version(dropped.clone()));
/// cell.store(Version(dropped.clone()));
/// synchronize();
/// // The first version's destructor has run (or is running on a collecting thread).
/// while dropped.load(Ordering::SeqCst) == 0 { std::thread::yield_now() }
/// assert_eq!(dropped.load(Ordering::SeqCst), 1);
/// ```
pub fn synchronize() {
    synchronize_until(None);
}

/// Like [`synchronize`], but gives up after `timeout`; returns whether the grace period ended.
///
/// ```
/// use std::time::Duration;
/// use scalelock::rcu::synchronize_timeout;
///
/// assert!(synchronize_timeout(Duration::from_secs(10)));
/// ```
///
/// # Panics
///
/// Like [`synchronize`], inside a read-side critical section.
pub fn synchronize_timeout(timeout: Duration) -> bool {
    synchronize_until(Some(Instant::now() + timeout))
}

fn synchronize_until(deadline: Option<Instant>) -> bool {
    assert!(
        !is_pinned(),
        "rcu::synchronize called inside an RCU read-side critical section: it would wait forever"
    );
    // A marker deferred now sits in the global queue behind every version retired before the
    // call (writers flush on retire). Queued bags are sealed with the global epoch and run, in
    // order, once it has advanced twice past it: after every reader pinned at the time of the
    // flush has unpinned. So when the marker runs, the grace period is over.
    let done = Arc::new(AtomicBool::new(false));
    {
        let pin = pin();
        let flag = done.clone();
        // Release/Acquire: whoever sees the flag also sees the earlier bags' destructors as
        // begun (they were popped before this marker).
        pin.defer(move || flag.store(true, Ordering::Release));
        pin.flush();
    }
    let mut round = 0u32;
    loop {
        if done.load(Ordering::Acquire) {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        // Help: try to advance the epoch and run expired bags (the marker among them). Unpin
        // before waiting, so this thread never holds the epoch back itself.
        pin().flush();
        if round < 16 {
            std::thread::yield_now();
        } else {
            // Readers are still inside: back off to at most 1 ms between attempts.
            let us = 1u64 << (round - 16).min(10);
            std::thread::sleep(Duration::from_micros(us));
        }
        round = round.saturating_add(1);
    }
}
