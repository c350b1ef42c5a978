//! Lockstat: which lock, and which caller, costs the time.
//!
//! # Design
//!
//! Every scalelock lock records, when recording is on, what Solaris `lockstat` and mutrace
//! show: per lock and per acquisition site, acquisitions, contended acquisitions, spin time,
//! sleeps, hand-offs, total and maximum wait, sampled total and maximum hold time, and a log2
//! wait-time histogram; and the yields its waits made and the wall time they took (the part
//! of a wait spent letting other threads run on the waiter's CPU, which is where a wait grows
//! past its spin when threads outnumber CPUs). [`report`] reads it back as data ([`Report`],
//! with [`Report::to_json`]) or as a text table sorted by total wait time.
//!
//! **Where the numbers live.** One fixed, open-addressed table of 16384 cache-line-aligned
//! entries in `.bss`, keyed by `(lock address, call site)`; site 0 holds the lock's totals.
//! Entries are claimed with one compare-exchange, counters are relaxed atomics. No allocation,
//! no lock, no formatting and no panic on any lock path. A program that keeps creating locks at
//! new addresses would fill the table with locks that are gone: a lock retired with
//! [`raw::destroyed`] (the preload library retires a pthread lock the program destroys) has
//! its counts folded into the row `(destroyed)@function` of the function that first used
//! it, with its call sites, and its entries freed for new locks; a Rust lock is retired when
//! it is dropped, into the row `(destroyed)@file:line` of the site that created it (or
//! `name (destroyed)`, for a named lock). A lock that still finds the
//! table full around its slot records its events in a small overflow table, by call site,
//! under the one row `(other locks: table full)`; only an event that finds no room there
//! either is counted in [`Report::dropped`].
//!
//! **What each path pays.**
//!
//! ```text
//!                            feature off  recording off            recording on
//!  raw lock fast paths       nothing      nothing                  nothing
//!  raw lock contended path   nothing      1 relaxed load + branch  2 clock reads, 2 table updates
//!  raw mutex contended unlock nothing     1 relaxed load + branch  1 table lookup
//!  Mutex::lock, RwLock::write nothing     1 relaxed load + branch  counter += 1 in the lock's cached
//!   (wrapper fast path)                                            entry (plain load + store: the lock
//!                                                                  serialises its holders), 1 mask test
//!  RwLock::read (wrapper)    nothing      1 relaxed load + branch  nothing more (reads are not
//!                                                                  counted: see below)
//! ```
//!
//! The raw locks' fast paths are untouched. Their contended paths ([`RawMutex`](crate::RawMutex)'s
//! `lock_slow`, [`RawRwLock`](crate::RawRwLock)'s `wait_parked` / `wait_writer`,
//! [`RawBiasedRwLock`](crate::RawBiasedRwLock)'s wait for deferred readers to drain) create a
//! `Recorder` and record one event per acquisition that spun, slept, took a hand-off or timed
//! out. The event goes to the call site that the wrapper ([`Mutex`](crate::Mutex),
//! [`RwLock`](crate::RwLock), [`BiasedRwLock`](crate::BiasedRwLock), whose acquisition methods
//! are `#[track_caller]`) put in a thread-local before entering the contended path, or to
//! "unknown" (`-`) for the raw lock_api path. Exclusive acquisitions through a wrapper are
//! counted per lock; read acquisitions are not (counting them would make every reader write one
//! shared cache line, the very cost the biased rwlock removes), so an rwlock's `Acquired` column
//! counts its writes, and its contention columns count reads and writes.
//!
//! **Sampling.** Hold times need a clock read at both ends of a critical section, which would
//! cost several times an uncontended lock + unlock, so they are sampled, for mutexes: every
//! [`sample_period`]-th acquisition of a lock (default 4096; [`set_sample_period`],
//! `SCALELOCK_LOCKSTAT_SAMPLE`), and every acquisition that slept or took a hand-off, notes the
//! time and marks the mutex contended, which sends its unlock through the contended path, where
//! the hold is measured (after a sleep the mutex is marked contended anyway, so those samples
//! cost only the clock reads). The periodic sample also counts the acquisition at its call site,
//! weighted by the period, so per-site acquisition counts are estimates (exact with period 1);
//! per-lock acquisition counts and all contention numbers are exact. Rwlocks report no hold
//! times.
//!
//! **Turning it on.** `SCALELOCK_LOCKSTAT=1` (`on`), or `exit` to also print the table to
//! stderr when the process exits; read once, lazily, without allocating. Or [`enable`],
//! [`disable`], [`reset`] (starts a new interval) and [`print_at_exit`] at run time. Building
//! without the `lockstat` cargo feature removes every hook; this API then records nothing.
//!
//! **Limits.** A lock is identified by its address: two locks that live at the same address one
//! after the other share an entry (their counts add up; the latest one's name is shown), unless
//! the first one was retired: dropped (a Rust lock), or destroyed with [`raw::destroyed`], as
//! the preload library does when a program destroys a pthread lock or initialises one. A Rust
//! lock that is moved keeps the rows of its first address there until another lock at that
//! address is retired. Counters are read without stopping
//! writers, so a report taken while threads lock is a consistent-enough snapshot, not an atomic
//! one. The table holds 16384 `(lock, site)` pairs.
//!
//! ```
//! use scalelock::{stats, Mutex};
//!
//! static CACHE: Mutex<u64> = Mutex::with_name("table_cache", 0);
//!
//! stats::enable();
//! *CACHE.lock() += 1;
//! let r = stats::report();
//! # #[cfg(feature = "lockstat")]
//! assert!(r.locks.iter().any(|l| l.lock.name == Some("table_cache") && l.counters.acquisitions >= 1));
//! println!("{r}");
//! stats::disable();
//! ```

mod counters;
mod dump;
#[cfg(all(feature = "lockstat", not(loom)))]
pub(crate) mod hook;
#[cfg(not(all(feature = "lockstat", not(loom))))]
mod noop;
mod report;
#[cfg(all(feature = "lockstat", not(loom)))]
mod retire;
#[cfg_attr(not(all(feature = "lockstat", not(loom))), allow(dead_code))]
pub(crate) mod table;

#[cfg(all(feature = "lockstat", not(loom)))]
pub(crate) use hook::{released, Recorder};
#[cfg(not(all(feature = "lockstat", not(loom))))]
pub(crate) use noop::{released, Recorder};

/// A lock whose holds lockstat samples (the mutex): lockstat asks it to send its next unlock
/// through its contended path, which ends the sample. The lock implements this; lockstat never
/// names a lock type, so that the arrows point from the locks to lockstat only.
#[cfg_attr(not(all(feature = "lockstat", not(loom))), allow(dead_code))]
pub(crate) trait HoldSampled {
    /// The address the lock's statistics are kept under.
    fn stats_key(&self) -> usize;
    /// Makes the holder's unlock take the contended path (called while the caller holds it).
    fn mark_contended(&self);
}

pub use counters::{Counters, Wait};
pub use report::{LockId, LockReport, Report, Site, SiteReport};

use crate::wait::now_ns;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Default [`sample_period`].
pub const DEFAULT_SAMPLE_PERIOD: u64 = 4096;

/// When the current interval started (monotonic ns; 0: never enabled).
static INTERVAL_START: AtomicU64 = AtomicU64::new(0);

/// Whether recording is on.
///
/// ```
/// scalelock::stats::enable();
/// assert_eq!(scalelock::stats::enabled(), cfg!(feature = "lockstat"));
/// scalelock::stats::disable();
/// assert!(!scalelock::stats::enabled());
/// ```
#[inline]
pub fn enabled() -> bool {
    #[cfg(all(feature = "lockstat", not(loom)))]
    {
        hook::on()
    }
    #[cfg(not(all(feature = "lockstat", not(loom))))]
    {
        false
    }
}

/// Reads `SCALELOCK_LOCKSTAT` and `SCALELOCK_LOCKSTAT_SAMPLE` once (first lock event or first
/// API call) without allocating; returns whether recording is on.
#[cfg(all(feature = "lockstat", not(loom)))]
#[cold]
pub(crate) fn init_from_env() -> bool {
    use hook::{OFF, ON, STATE, UNREAD};
    let mut on = false;
    let mut at_exit = false;
    if let Some(v) = getenv(c"SCALELOCK_LOCKSTAT") {
        match v {
            b"" | b"0" | b"off" | b"no" | b"false" => {}
            b"exit" => {
                on = true;
                at_exit = true;
            }
            _ => on = true,
        }
    }
    if let Some(v) = getenv(c"SCALELOCK_LOCKSTAT_SAMPLE") {
        let mut n: u64 = 0;
        let mut ok = !v.is_empty();
        for &d in v {
            if d.is_ascii_digit() {
                n = n.saturating_mul(10).saturating_add((d - b'0') as u64);
            } else {
                ok = false;
            }
        }
        if ok {
            set_sample_period(n);
        }
    }
    let want = if on { ON } else { OFF };
    match STATE.compare_exchange(UNREAD, want, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {
            if on {
                start_interval_if_unset();
            }
            if at_exit {
                print_at_exit();
            }
            on
        }
        // enable()/disable() ran meanwhile: they win.
        Err(current) => current == ON,
    }
}

#[cfg(all(feature = "lockstat", not(loom)))]
fn getenv(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: getenv with a NUL-terminated name; the result, if not null, is a NUL-terminated
    // string owned by the environment (valid until the variable is changed, which well-behaved
    // programs do not do while threads run).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        None
    } else {
        // SAFETY: non-null NUL-terminated string from getenv.
        Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
    }
}

#[cfg(all(feature = "lockstat", not(loom)))]
fn start_interval_if_unset() {
    let _ =
        INTERVAL_START.compare_exchange(0, now_ns().max(1), Ordering::Relaxed, Ordering::Relaxed);
}

pub(crate) fn interval_ns() -> u64 {
    match INTERVAL_START.load(Ordering::Relaxed) {
        0 => 0,
        t => now_ns().saturating_sub(t),
    }
}

/// Turns recording on for every scalelock lock (a no-op without the `lockstat` feature).
/// Counters keep what earlier intervals recorded until [`reset`].
///
/// ```
/// scalelock::stats::enable();
/// let m = scalelock::Mutex::new(0);
/// *m.lock() += 1;
/// scalelock::stats::disable();
/// ```
pub fn enable() {
    #[cfg(all(feature = "lockstat", not(loom)))]
    {
        // Read the environment first, so SCALELOCK_LOCKSTAT=exit still registers its printer.
        let _ = hook::on();
        // A hold sample started before a `disable` was never ended; forget it.
        for (e, _, site) in table::entries() {
            if site == table::SITE_TOTAL {
                e.hold_start.store(0, Ordering::Relaxed);
            }
        }
        start_interval_if_unset();
        hook::STATE.store(hook::ON, Ordering::Relaxed);
    }
}

/// Turns recording off. What was recorded stays readable with [`report`].
///
/// ```
/// scalelock::stats::disable();
/// assert!(!scalelock::stats::enabled());
/// ```
pub fn disable() {
    #[cfg(all(feature = "lockstat", not(loom)))]
    {
        let _ = hook::on();
        hook::STATE.store(hook::OFF, Ordering::Relaxed);
    }
}

/// Starts a new interval: clears every counter (acquisition counts are re-based, not written,
/// because lock holders update them without atomic read-modify-writes).
///
/// ```
/// use scalelock::stats;
/// stats::reset();
/// assert!(stats::report().sites.iter().all(|s| s.counters.contended == 0));
/// ```
pub fn reset() {
    for (e, _, _) in table::entries() {
        e.reset();
    }
    table::DROPPED.store(0, Ordering::Relaxed);
    INTERVAL_START.store(now_ns().max(1), Ordering::Relaxed);
}

/// Sets how often hold times (and per-site acquisition counts) are sampled: once every `period`
/// acquisitions of a lock, rounded up to a power of two (1: every acquisition; exact, slow).
///
/// ```
/// use scalelock::stats;
/// let before = stats::sample_period();
/// stats::set_sample_period(1000);
/// assert_eq!(stats::sample_period(), if cfg!(feature = "lockstat") { 1024 } else { before });
/// stats::set_sample_period(before);
/// ```
pub fn set_sample_period(period: u64) {
    #[cfg(all(feature = "lockstat", not(loom)))]
    {
        let p = period.clamp(1, 1 << 40).next_power_of_two();
        hook::SAMPLE_MASK.store(p - 1, Ordering::Relaxed);
        // Every lock keeps a copy next to its counter (see `hook::acquired`).
        for (e, _, site) in table::entries() {
            if site == table::SITE_TOTAL {
                e.sample_mask.store(p - 1, Ordering::Relaxed);
            }
        }
    }
    #[cfg(not(all(feature = "lockstat", not(loom))))]
    let _ = period;
}

/// The current sample period (see [`set_sample_period`]).
///
/// ```
/// assert!(scalelock::stats::sample_period().is_power_of_two());
/// ```
pub fn sample_period() -> u64 {
    #[cfg(all(feature = "lockstat", not(loom)))]
    {
        hook::SAMPLE_MASK.load(Ordering::Relaxed) + 1
    }
    #[cfg(not(all(feature = "lockstat", not(loom))))]
    {
        DEFAULT_SAMPLE_PERIOD
    }
}

/// Everything recorded in the current interval.
///
/// ```
/// let r = scalelock::stats::report();
/// println!("{r}"); // the text table
/// let _json = r.to_json();
/// ```
pub fn report() -> Report {
    Report::collect()
}

/// Writes the text table of [`report`] to `w`.
///
/// ```
/// let mut out = Vec::new();
/// scalelock::stats::report_to(&mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().contains("Caller"));
/// ```
pub fn report_to(w: &mut impl std::io::Write) -> std::io::Result<()> {
    write!(w, "{}", report())
}

/// Writes the text table (the top `top` rows of each part, at most 64) to file descriptor `fd`
/// without allocating or locking: formatted into a fixed stack buffer and written with
/// `write(2)`. For the preload library and for exit-time printing, where the allocator may be
/// unusable.
///
/// ```
/// scalelock::stats::report_to_fd(2, 10); // to stderr
/// ```
pub fn report_to_fd(fd: i32, top: usize) {
    report::write_fd(fd, top);
}

/// Writes every entry, unsorted and unformatted, to file descriptor `fd` for a reader in another
/// process (`scalelock profile`); allocation- and lock-free like [`report_to_fd`]. The format is
/// described in `stats/dump.rs` and starts with the line [`DUMP_MAGIC`].
///
/// ```
/// scalelock::stats::dump_to_fd(2);
/// ```
pub fn dump_to_fd(fd: i32) {
    dump::write_dump_fd(fd);
}

pub use dump::DUMP_MAGIC;

/// The name of the report's rows of destroyed locks, one per function that first used them
/// (see [`raw::destroyed`]).
///
/// ```
/// assert_eq!(scalelock::stats::DESTROYED_LOCKS, "(destroyed)");
/// ```
pub const DESTROYED_LOCKS: &str = table::FOLD_NAME;

/// How many rows of each table the exit-time report prints.
pub const EXIT_REPORT_ROWS: usize = 20;

static AT_EXIT: AtomicBool = AtomicBool::new(false);

extern "C" fn print_report_at_exit() {
    report_to_fd(2, EXIT_REPORT_ROWS);
}

/// Prints the text table to stderr when the process exits (`atexit`); idempotent.
/// `SCALELOCK_LOCKSTAT=exit` calls this.
///
/// ```no_run
/// scalelock::stats::enable();
/// scalelock::stats::print_at_exit();
/// ```
pub fn print_at_exit() {
    if !AT_EXIT.swap(true, Ordering::Relaxed) {
        // SAFETY: registers a plain `extern "C" fn()` that lives for the whole process.
        unsafe { libc::atexit(print_report_at_exit) };
    }
}

/// The interface for locks that are not scalelock's own Rust types: C locks interposed by the
/// preload library, or any lock keyed by a raw address. `lock` is the lock's address (never 0);
/// `caller` a code address of the acquisition site (0: unknown), printed as `symbol+0xoff`.
/// Every function is allocation-free and lock-free, records nothing while recording is off, and
/// compiles to nothing without the `lockstat` feature.
///
/// ```
/// use scalelock::stats::{self, raw};
/// static C_LOCK: u64 = 0; // stands in for a pthread_mutex_t
/// let lock = &C_LOCK as *const u64 as usize;
/// stats::enable();
/// raw::name(lock, "c_lock");
/// raw::acquired(lock, 0);
/// raw::contended(lock, 0, 5_000, 1_000, 1, false, true);
/// raw::held(lock, 0, 2_000);
/// # #[cfg(feature = "lockstat")]
/// assert!(stats::report().locks.iter().any(|l| l.lock.name == Some("c_lock")));
/// stats::disable();
/// ```
pub mod raw {
    #[cfg(all(feature = "lockstat", not(loom)))]
    use super::{hook, table};
    #[cfg(all(feature = "lockstat", not(loom)))]
    use core::sync::atomic::Ordering;

    /// Whether recording is on: check it before measuring anything.
    ///
    /// ```
    /// if scalelock::stats::raw::enabled() { /* time the acquisition */ }
    /// ```
    #[inline]
    pub fn enabled() -> bool {
        super::enabled()
    }

    /// Names the lock at `lock` (the latest name given wins).
    ///
    /// ```
    /// scalelock::stats::raw::name(0x1000, "buffer_pool");
    /// ```
    pub fn name(lock: usize, name: &'static str) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if let Some(e) = table::lookup(lock, table::SITE_TOTAL, true) {
            e.set_label(table::Label::Name(name));
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = (lock, name);
    }

    /// Counts one acquisition of `lock`, per lock only, and, the first time the lock is
    /// recorded, labels it with `caller` (the code address of the function that first used it):
    /// what the preload library reports for locks of a C program, where a (lock, site) entry per
    /// acquisition would fill the fixed table.
    ///
    /// ```
    /// use scalelock::stats::{self, raw, Site};
    /// stats::enable();
    /// raw::acquired_by(0x2000, 0x4242);
    /// raw::acquired_by(0x2000, 0x9999); // the first user stays
    /// let r = stats::report();
    /// let lock = r.locks.iter().find(|l| l.lock.addr == 0x2000);
    /// if cfg!(feature = "lockstat") {
    ///     let lock = lock.unwrap();
    ///     assert_eq!(lock.lock.created, Some(Site::Address(0x4242)));
    ///     assert_eq!(lock.counters.acquisitions, 2);
    /// } else {
    ///     assert!(lock.is_none(), "without the feature nothing is recorded");
    /// }
    /// # stats::disable();
    /// ```
    #[inline]
    pub fn acquired_by(lock: usize, caller: usize) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if hook::on() {
            if let Some(e) = table::record_entry(lock, table::SITE_TOTAL) {
                e.acquisitions.fetch_add(1, Ordering::Relaxed);
                if caller != 0 && !table::is_overflow(e) {
                    e.set_first_user(caller);
                }
            }
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = (lock, caller);
    }

    /// Counts one acquisition of `lock` (from `caller`, counted there too when non-zero).
    ///
    /// ```
    /// scalelock::stats::raw::acquired(0x1000, 0);
    /// ```
    #[inline]
    pub fn acquired(lock: usize, caller: usize) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if hook::on() {
            if let Some(e) = table::record_entry(lock, table::SITE_TOTAL) {
                e.acquisitions.fetch_add(1, Ordering::Relaxed);
            }
            if caller != 0 {
                if let Some(e) = table::record_entry(lock, table::site_of_address(caller)) {
                    e.acquisitions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = (lock, caller);
    }

    /// Records one contended acquisition of `lock` from `caller`: it waited `wait_ns`, spun
    /// `spun_ns` of it, slept `sleeps` times, got the lock by hand-off or not, and acquired it
    /// (`ok`) or timed out.
    ///
    /// ```
    /// scalelock::stats::raw::contended(0x1000, 0, 12_000, 2_000, 1, false, true);
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn contended(
        lock: usize,
        caller: usize,
        wait_ns: u64,
        spun_ns: u64,
        sleeps: u64,
        handoff: bool,
        ok: bool,
    ) {
        waited(
            lock,
            caller,
            &super::Wait {
                wait_ns,
                spun_ns,
                sleeps,
                handoff,
                ok,
                ..Default::default()
            },
        );
    }

    /// Records one contended acquisition (or timed-out attempt) of `lock` from `caller`, as
    /// [`contended`] does, with everything a [`Wait`](super::Wait) tells (its yields too).
    ///
    /// ```
    /// use scalelock::stats::{raw, Wait};
    ///
    /// let wait = Wait { wait_ns: 9_000, yields: 3, yield_ns: 6_000, ..Default::default() };
    /// raw::waited(0x1000, 0, &wait);
    /// ```
    pub fn waited(lock: usize, caller: usize, wait: &super::Wait) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if hook::on() {
            let _ = hook::record_wait(lock, table::site_of_address(caller), wait);
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = (lock, caller, wait);
    }

    /// Records one hold of `lock`, acquired at `caller`, that lasted `hold_ns`.
    ///
    /// ```
    /// scalelock::stats::raw::held(0x1000, 0, 3_000);
    /// ```
    pub fn held(lock: usize, caller: usize, hold_ns: u64) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if hook::on() {
            if let Some(e) = table::record_entry(lock, table::SITE_TOTAL) {
                e.add_hold(hold_ns);
            }
            if caller != 0 {
                if let Some(e) = table::record_entry(lock, table::site_of_address(caller)) {
                    e.add_hold(hold_ns);
                }
            }
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = (lock, caller, hold_ns);
    }

    /// The program destroyed the lock at `lock` (`pthread_mutex_destroy`): its rows are folded
    /// into the row of the destroyed locks that the same function first used (see
    /// [`acquired_by`]; the report names it `(destroyed)@function`), with its call sites,
    /// and its entries are freed, so that a program that keeps creating locks keeps its live
    /// ones in rows of their own, and a lock created later at the same address starts from
    /// nothing. Nothing happens if lockstat has never been on.
    ///
    /// ```
    /// use scalelock::stats::{self, raw, Site};
    /// stats::enable();
    /// raw::acquired_by(0x3000, 0x4242);
    /// raw::destroyed(0x3000);
    /// let r = stats::report();
    /// # #[cfg(feature = "lockstat")]
    /// # {
    /// assert!(r.locks.iter().all(|l| l.lock.addr != 0x3000));
    /// let folded = r.locks.iter().find(|l| l.lock.name == Some("(destroyed)")).unwrap();
    /// assert_eq!(folded.lock.created, Some(Site::Address(0x4242)));
    /// assert!(folded.counters.acquisitions >= 1);
    /// # }
    /// # stats::disable();
    /// ```
    #[inline]
    pub fn destroyed(lock: usize) {
        #[cfg(all(feature = "lockstat", not(loom)))]
        if super::INTERVAL_START.load(Ordering::Relaxed) != 0 {
            let _ = super::retire::retire(lock);
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = lock;
    }

    /// Runs `f` with `caller` as this thread's acquisition site, so that a scalelock raw lock
    /// that waits inside `f` attributes the wait to `caller` (the preload library wraps its
    /// `RawMutex::lock` calls in this).
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    /// static M: scalelock::RawMutex = scalelock::RawMutex::INIT;
    /// scalelock::stats::raw::with_caller(0x4242, || M.lock());
    /// // SAFETY: locked just above.
    /// unsafe { M.unlock() };
    /// ```
    #[inline]
    pub fn with_caller<R>(caller: usize, f: impl FnOnce() -> R) -> R {
        #[cfg(all(feature = "lockstat", not(loom)))]
        {
            if hook::on() {
                return hook::with_site(table::site_of_address(caller), f);
            }
        }
        #[cfg(not(all(feature = "lockstat", not(loom))))]
        let _ = caller;
        f()
    }
}
