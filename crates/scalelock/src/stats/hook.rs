//! What the locks call: the on/off switch, the contended-path [`Recorder`], the hold-time
//! sampler, and the per-thread "who is acquiring" site.
//!
//! Everything a lock's fast path may touch is `#[inline]` and tiny (one relaxed load of
//! [`STATE`]); everything else is `#[cold]`.

use super::table::{self, Entry, Label, SITE_TOTAL, SITE_UNKNOWN};
use super::HoldSampled;
use super::Wait;
use crate::wait::now_ns;
use core::cell::Cell;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};

/// Recording is off.
pub(crate) const OFF: u8 = 0;
/// Recording is on.
pub(crate) const ON: u8 = 1;
/// The environment has not been read yet.
pub(crate) const UNREAD: u8 = 2;

/// The switch. `OFF` is 0 so that the hot check is a load and a test against zero.
pub(crate) static STATE: AtomicU8 = AtomicU8::new(UNREAD);
/// Hold times (and per-site acquisitions) are sampled on every `SAMPLE_MASK + 1`-th acquisition
/// of a lock; a power of two minus one.
pub(crate) static SAMPLE_MASK: AtomicU64 = AtomicU64::new(super::DEFAULT_SAMPLE_PERIOD - 1);

/// Whether recording is on. One relaxed load and, when off, one predictable branch.
#[inline(always)]
pub(crate) fn on() -> bool {
    let s = STATE.load(Ordering::Relaxed);
    s != OFF && (s == ON || super::init_from_env())
}

thread_local! {
    /// The call site of the acquisition this thread is waiting in (set by the `Mutex` wrapper
    /// only around a contended acquisition, read by the raw lock's contended path).
    static SITE: Cell<usize> = const { Cell::new(SITE_UNKNOWN) };
}

/// Runs `f` (a contended acquisition) with `site` as this thread's current acquisition site.
#[inline]
pub(crate) fn with_site<R>(site: usize, f: impl FnOnce() -> R) -> R {
    /// Clears the site when `f` returns or unwinds (a debug-build deadlock check may panic).
    struct Clear;
    impl Drop for Clear {
        #[inline]
        fn drop(&mut self) {
            let _ = SITE.try_with(|s| s.set(SITE_UNKNOWN));
        }
    }
    // try_with: never panics, even during thread-local destruction.
    let _ = SITE.try_with(|s| s.set(site));
    let _clear = Clear;
    f()
}

fn current_site() -> usize {
    SITE.try_with(Cell::get).unwrap_or(SITE_UNKNOWN)
}

/// Records one contended acquisition (or timed-out attempt) of the raw lock at `lock`.
///
/// Where the table has no room for the lock (or the site), the wait is recorded in the
/// overflow's entries (see `table::OVERFLOW`); the lock's own totals entry is returned, `None`
/// where it has none.
#[cold]
pub(crate) fn record_wait(lock: usize, site: usize, wait: &Wait) -> Option<&'static Entry> {
    let total = table::record_entry(lock, SITE_TOTAL)?;
    total.add_wait(wait);
    if let Some(e) = table::record_entry(lock, site) {
        e.add_wait(wait);
    }
    (!table::is_overflow(total)).then_some(total)
}

/// Starts a sampled hold of `raw` (held by the caller) at `site`: notes the time and marks the
/// mutex contended so that its unlock takes the contended path, where [`released`] ends the
/// sample. Marking it contended is what the condvar does after a requeue; its only cost is one
/// futex wake with nobody to wake, and that waiters arriving meanwhile sleep instead of spinning,
/// once per sample period.
#[cold]
pub(crate) fn start_hold<L: HoldSampled + ?Sized>(total: &Entry, raw: &L, site: usize) {
    total.hold_site.store(site, Ordering::Relaxed);
    total.hold_start.store(now_ns().max(1), Ordering::Relaxed);
    raw.mark_contended();
}

/// The contended unlock path of the mutex at `lock`: ends a sampled hold if one is running.
#[inline]
pub(crate) fn released(lock: usize) {
    if on() {
        end_hold(lock);
    }
}

#[cold]
fn end_hold(lock: usize) {
    let Some(total) = table::lookup(lock, SITE_TOTAL, false) else {
        return;
    };
    if total.hold_start.load(Ordering::Relaxed) == 0 {
        return;
    }
    let start = total.hold_start.swap(0, Ordering::Relaxed);
    if start == 0 {
        return;
    }
    let held = now_ns().saturating_sub(start);
    total.add_hold(held);
    let site = total.hold_site.load(Ordering::Relaxed);
    if site != SITE_TOTAL {
        if let Some(e) = table::record_entry(lock, site) {
            e.add_hold(held);
        }
    }
}

/// Records an exclusive acquisition of the lock at `lock` through a wrapper; the caller holds
/// it exclusively. `cache` is the wrapper's cached totals entry. Returns the totals entry when
/// this acquisition is a sample (the caller may then time the hold).
#[inline]
pub(crate) fn acquired(
    lock: usize,
    cache: &AtomicPtr<Entry>,
    label: &Label,
    site: usize,
) -> Option<&'static Entry> {
    let total = cached_entry(lock, cache, label)?;
    if table::is_overflow(total) {
        // No room for an entry of the lock's own: the acquisition counts in the overflow's
        // totals, which other locks' holders write too; no sample, no hold timing.
        total.acquisitions.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // The caller holds the lock exclusively, and only such holders write this counter, so a
    // plain load + store cannot lose an increment (and costs no locked instruction).
    let n = total.acquisitions.load(Ordering::Relaxed).wrapping_add(1);
    total.acquisitions.store(n, Ordering::Relaxed);
    if n & total.sample_mask.load(Ordering::Relaxed) == 0 {
        return Some(sample_site(total, lock, site));
    }
    None
}

/// The totals entry of the lock at `lock`, from the wrapper's cache or (cold) the table; where
/// the table has no room for it, the overflow's (see `table::OVERFLOW`), never cached.
#[inline]
fn cached_entry(lock: usize, cache: &AtomicPtr<Entry>, label: &Label) -> Option<&'static Entry> {
    let p = cache.load(Ordering::Relaxed);
    // SAFETY: a non-null cached pointer was taken from `table::TABLE`, a static whose entries
    // are never freed.
    match unsafe { p.as_ref() } {
        Some(e) if e.lock_addr() == lock => Some(e),
        _ => lookup_for_wrapper(lock, cache, label),
    }
}

/// Makes sure the lock at `lock` has its totals entry, labelled by its wrapper (for a wrapper
/// path that records only contention, such as a contended read).
#[cold]
pub(crate) fn label(lock: usize, cache: &AtomicPtr<Entry>, label: &Label) {
    let _ = cached_entry(lock, cache, label);
}

#[cold]
fn lookup_for_wrapper(
    lock: usize,
    cache: &AtomicPtr<Entry>,
    label: &Label,
) -> Option<&'static Entry> {
    let e = table::record_entry(lock, SITE_TOTAL)?;
    if table::is_overflow(e) {
        return Some(e);
    }
    e.sample_mask
        .store(SAMPLE_MASK.load(Ordering::Relaxed), Ordering::Relaxed);
    e.set_label(*label);
    cache.store(e as *const Entry as *mut Entry, Ordering::Relaxed);
    Some(e)
}

/// Every sample period: count the acquisition at its site, weighted by the period.
#[cold]
fn sample_site(total: &'static Entry, lock: usize, site: usize) -> &'static Entry {
    let period = total.sample_mask.load(Ordering::Relaxed) + 1;
    if let Some(e) = table::record_entry(lock, site) {
        e.acquisitions.fetch_add(period, Ordering::Relaxed);
    }
    total
}

/// Statistics gathered by one call of a raw lock's contended path. The hook lines in the lock
/// create one on entry, report sleeps and yields, and pass every result through
/// [`Recorder::done`].
pub(crate) struct Recorder {
    start: u64,
    sleeps: u32,
    yields: u32,
    yield_ns: u64,
}

impl Recorder {
    /// Starts recording if lockstat is on (one relaxed load and a branch if it is off).
    #[inline]
    pub(crate) fn begin() -> Recorder {
        Recorder {
            start: if on() { now_ns().max(1) } else { 0 },
            sleeps: 0,
            yields: 0,
            yield_ns: 0,
        }
    }

    /// A recorder that records nothing (a wait that is not a lock's own).
    #[inline]
    pub(crate) fn none() -> Recorder {
        Recorder {
            start: 0,
            sleeps: 0,
            yields: 0,
            yield_ns: 0,
        }
    }

    /// The waiter is about to sleep.
    #[inline]
    pub(crate) fn sleep(&mut self) {
        self.sleeps = self.sleeps.saturating_add(1);
    }

    /// The waiter gave its CPU away with a yield that took `took_ns`.
    #[inline]
    pub(crate) fn yielded(&mut self, took_ns: u64) {
        self.yields = self.yields.saturating_add(1);
        self.yield_ns = self.yield_ns.saturating_add(took_ns);
    }

    /// What this recorder has gathered, for a wait that ends now with `ok` after spinning
    /// `spun_ns`; `handoff` if the lock was handed over.
    #[inline]
    fn wait(&self, ok: bool, spun_ns: u32, handoff: bool) -> Wait {
        Wait {
            wait_ns: now_ns().saturating_sub(self.start),
            spun_ns: spun_ns as u64,
            sleeps: self.sleeps as u64,
            yields: self.yields as u64,
            yield_ns: self.yield_ns,
            handoff,
            ok,
        }
    }

    /// Whether the wait did anything lockstat counts: spun, slept, yielded, took a hand-off,
    /// or timed out.
    #[inline]
    fn waited(&self, ok: bool, spun_ns: u32, handoff: bool) -> bool {
        spun_ns != 0 || self.sleeps != 0 || self.yields != 0 || handoff || !ok
    }

    /// The contended path ends with `ok` (acquired, or false: timed out) after spinning
    /// `spun_ns`; `handoff` if the lock was handed over. Returns `ok`.
    #[inline]
    pub(crate) fn done(
        &self,
        raw: &dyn HoldSampled,
        ok: bool,
        spun_ns: u32,
        handoff: bool,
    ) -> bool {
        if self.start != 0 && self.waited(ok, spun_ns, handoff) {
            self.record(raw, ok, spun_ns, handoff);
        }
        ok
    }

    /// [`done`](Recorder::done) for locks other than the mutex (rwlocks): records the wait of
    /// the lock at address `lock`; no hold sampling.
    #[inline]
    pub(crate) fn done_at(&self, lock: usize, ok: bool, spun_ns: u32, handoff: bool) -> bool {
        if self.start != 0 && self.waited(ok, spun_ns, handoff) {
            self.record_at(lock, ok, spun_ns, handoff);
        }
        ok
    }

    /// Like [`done_at`](Recorder::done_at), but records even if the wait neither spun nor slept
    /// (a biased rwlock's writer that found a reader to drain has waited in any case).
    #[inline]
    pub(crate) fn done_waited(&self, lock: usize, ok: bool, spun_ns: u32) -> bool {
        if self.start != 0 {
            self.record_at(lock, ok, spun_ns, false);
        }
        ok
    }

    #[cold]
    fn record_at(&self, lock: usize, ok: bool, spun_ns: u32, handoff: bool) {
        let _ = record_wait(lock, current_site(), &self.wait(ok, spun_ns, handoff));
    }

    #[cold]
    fn record(&self, raw: &dyn HoldSampled, ok: bool, spun_ns: u32, handoff: bool) {
        let lock = raw.stats_key();
        let site = current_site();
        let total = record_wait(lock, site, &self.wait(ok, spun_ns, handoff));
        // Time the hold that follows: always after a sleep or a hand-off (the lock is then held
        // with CONTENDED set already, so its unlock takes the contended path anyway and the
        // sample costs two clock reads), otherwise once per sample period. So the holds of
        // contended locks are measured even on the raw lock_api path.
        if let (Some(total), true) = (total, ok) {
            let n = total.contended.load(Ordering::Relaxed);
            if self.sleeps != 0 || handoff || n & SAMPLE_MASK.load(Ordering::Relaxed) == 0 {
                start_hold(total, raw, site);
            }
        }
    }
}
