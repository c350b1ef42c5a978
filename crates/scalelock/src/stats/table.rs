//! The fixed global table every lockstat record lands in.
//!
//! One open-addressed array of [`CAPACITY`] cache-line-aligned entries in `.bss`, keyed by
//! `(lock address, site)`. Site [`SITE_TOTAL`] holds a lock's totals; any other site holds what
//! was recorded at one call site of that lock ([`SITE_UNKNOWN`] when the caller is not known).
//! Entries are claimed with one compare-exchange, so a pointer to an entry stays valid (the
//! `Mutex` wrapper caches one), and freed only by `retire` (the module above this one), for a
//! lock the program has destroyed. Nothing here allocates, locks, formats or panics: it runs
//! on lock paths.
//!
//! A process that creates locks at new addresses all the time fills the table with locks that
//! are gone. Two things keep its rows meaningful:
//! - `retire`, when the program destroys a lock (`pthread_mutex_destroy`, through the
//!   preload library, or a Rust lock's drop), folds the lock's entries into the entries of
//!   the pseudo-lock [`fold_lock`]`(origin)`: one row per function that first used such C
//!   locks, or per site that created such Rust locks (or name they had), named [`FOLD_NAME`],
//!   with a row per call site under it as any lock has, and frees the lock's entries for new
//!   locks. It finds the lock's call-site entries through a chain kept in
//!   `Entry::chain` (the totals entry holds the head).
//! - The events of locks that still find no room go to a small [`OVERFLOW`] table, one entry per
//!   call site and one for the totals, shared by all such locks under the pseudo-lock
//!   [`OVERFLOW_LOCK`] (its totals are named [`OVERFLOW_NAME`]): only counters that take
//!   `fetch_add` go there (see [`record_entry`]), so sharing loses no update.
//!
//! A freed entry is a *tombstone*: lookups probe past it (the keys placed after it stay
//! reachable), and a key that is not in the table is claimed in the first tombstone its probe
//! passed, or else in the empty slot that ended the probe.
//!
//! Site encoding (one `usize`):
//!
//! ```text
//!   0              SITE_TOTAL    the lock's totals
//!   2              SITE_UNKNOWN  recorded without a caller (raw lock_api path, condvar)
//!   even, >= 8     &'static core::panic::Location (align 8: low three bits clear)
//!   odd            (code address << 1) | 1, a C caller's return address (preload)
//! ```

use super::Wait;
use core::panic::Location;
use core::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Number of entries (a power of two), sized for a server with thousands of live locks (a
/// database's per-table and per-connection mutexes, each with its call sites): 16384 × 448
/// bytes ≈ 7 MiB of zero pages, touched only as entries are claimed.
pub(crate) const CAPACITY: usize = 16384;
/// How many slots a lookup probes before it gives up and counts the event as dropped.
const MAX_PROBES: usize = 64;
/// Wait-time histogram buckets: bucket `b` counts waits in `[2^(b-1), 2^b)` ns, the last one all
/// longer waits.
pub(crate) const HIST_BUCKETS: usize = 32;

/// Site of a lock's totals entry.
pub(crate) const SITE_TOTAL: usize = 0;
/// Site of events recorded without a known caller.
pub(crate) const SITE_UNKNOWN: usize = 2;

/// Encodes a Rust call site.
#[inline]
pub(crate) fn site_of_location(loc: &'static Location<'static>) -> usize {
    loc as *const Location<'static> as usize
}

/// Encodes a C caller's code address (0: unknown).
#[inline]
pub(crate) fn site_of_address(addr: usize) -> usize {
    if addr == 0 {
        SITE_UNKNOWN
    } else {
        (addr << 1) | 1
    }
}

/// A decoded site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SiteKey {
    Total,
    Unknown,
    Location(&'static Location<'static>),
    Address(usize),
}

pub(crate) fn decode_site(site: usize) -> SiteKey {
    match site {
        SITE_TOTAL => SiteKey::Total,
        SITE_UNKNOWN => SiteKey::Unknown,
        s if s & 1 == 1 => SiteKey::Address(s >> 1),
        // SAFETY: even site values >= 8 are only ever produced by `site_of_location` from a
        // `&'static Location`, which lives for the whole process.
        s => SiteKey::Location(unsafe { &*(s as *const Location<'static>) }),
    }
}

const EMPTY: u8 = 0;
const CLAIMING: u8 = 1;
const READY: u8 = 2;
/// Freed by `retire`: probed past, claimable (see the module docs).
const TOMBSTONE: u8 = 3;

/// What a lock is called: a name, or the site that created it (16 bytes: it lives in every
/// `Mutex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    Name(&'static str),
    Created(&'static Location<'static>),
}

impl Label {
    /// The address the destroyed locks with this label are folded by (see `retire`): their
    /// creation site's, or their name's.
    pub(crate) fn origin(&self) -> usize {
        match *self {
            Label::Name(n) => n.as_ptr() as usize,
            Label::Created(loc) => loc as *const Location<'static> as usize,
        }
    }
}

/// What an entry's label slot holds: a label given by a lock, or (for C locks, from the preload
/// library) the code address of the first recorded acquisition. Kept apart from [`Label`], which
/// every `Mutex` wrapper carries and which must stay two pointer-sized words.
#[derive(Clone, Copy)]
pub(crate) enum StoredLabel {
    Given(Label),
    FirstUser(usize),
}

/// `label_len` of a `Label::Created` (the pointer is a `&'static Location`).
const LEN_CREATED: usize = usize::MAX;
/// `label_len` of a `Label::FirstUser` (the pointer is a code address).
const LEN_FIRST_USER: usize = usize::MAX - 1;

/// One `(lock, site)` record. Counters are relaxed atomics: they are statistics, and a report is
/// a snapshot, not a transaction.
#[repr(align(64))]
pub(crate) struct Entry {
    key_state: AtomicU8,
    lock: AtomicUsize,
    site: AtomicUsize,
    /// Seqlock over the label: 0 never set, odd while being written.
    label_seq: AtomicUsize,
    label_ptr: AtomicUsize,
    /// Name length, or `usize::MAX` when `label_ptr` is a `&'static Location`.
    label_len: AtomicUsize,

    /// Acquisitions. On a totals entry written by lock holders with a plain load + store (they
    /// are serialised by the lock itself); `reset` therefore never writes it but moves
    /// `acquisitions_base` instead.
    pub(crate) acquisitions: AtomicU64,
    pub(crate) acquisitions_base: AtomicU64,
    /// Totals entry: this lock's copy of the global sample mask (next to the counter it is
    /// tested against, so the wrapper's fast path reads one cache line).
    pub(crate) sample_mask: AtomicU64,
    pub(crate) contended: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) spin_ns: AtomicU64,
    pub(crate) sleeps: AtomicU64,
    pub(crate) handoffs: AtomicU64,
    pub(crate) wait_ns: AtomicU64,
    pub(crate) max_wait_ns: AtomicU64,
    pub(crate) hold_samples: AtomicU64,
    pub(crate) hold_ns: AtomicU64,
    pub(crate) max_hold_ns: AtomicU64,
    pub(crate) yields: AtomicU64,
    pub(crate) yield_ns: AtomicU64,
    /// Totals entry only: start of a sampled hold in progress (0: none) and its site.
    pub(crate) hold_start: AtomicU64,
    pub(crate) hold_site: AtomicUsize,
    pub(crate) wait_hist: [AtomicU64; HIST_BUCKETS],
    /// The chain of a lock's call-site entries in the main table (see `retire`), as one more
    /// than an index into that table (0: none): on the totals entry, the first; on a call-site
    /// entry, the next.
    chain: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);

impl Entry {
    /// An empty entry, for the small tables of unit tests.
    #[cfg(test)]
    pub(crate) const fn new_for_tests() -> Entry {
        Entry::new()
    }

    const fn new() -> Entry {
        Entry {
            key_state: AtomicU8::new(EMPTY),
            lock: AtomicUsize::new(0),
            site: AtomicUsize::new(0),
            label_seq: AtomicUsize::new(0),
            label_ptr: AtomicUsize::new(0),
            label_len: AtomicUsize::new(0),
            acquisitions: ZERO,
            acquisitions_base: ZERO,
            sample_mask: ZERO,
            contended: ZERO,
            timeouts: ZERO,
            spin_ns: ZERO,
            sleeps: ZERO,
            handoffs: ZERO,
            wait_ns: ZERO,
            max_wait_ns: ZERO,
            hold_samples: ZERO,
            hold_ns: ZERO,
            max_hold_ns: ZERO,
            yields: ZERO,
            yield_ns: ZERO,
            hold_start: ZERO,
            hold_site: AtomicUsize::new(0),
            wait_hist: [ZERO; HIST_BUCKETS],
            chain: AtomicUsize::new(0),
        }
    }

    /// Empties a retired entry and makes it a tombstone (see the module docs). Only a retired
    /// lock's entries come here: no thread records into them any more (a program that uses a
    /// lock it destroyed has undefined behaviour), though a report may be reading them.
    pub(crate) fn free(&self) {
        // Out of use while it is emptied: reports skip it, lookups probe past it, and nobody
        // claims it before it is a tombstone.
        self.key_state.store(CLAIMING, Ordering::Relaxed);
        self.clear_interval();
        for c in [
            &self.acquisitions,
            &self.acquisitions_base,
            &self.sample_mask,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        for w in [
            &self.lock,
            &self.site,
            &self.label_seq,
            &self.label_ptr,
            &self.label_len,
            &self.hold_site,
            &self.chain,
        ] {
            w.store(0, Ordering::Relaxed);
        }
        // Release: a thread that claims the tombstone sees the entry emptied.
        self.key_state.store(TOMBSTONE, Ordering::Release);
    }

    /// The `(lock, site)` key, if this entry is in use.
    #[inline]
    pub(crate) fn key(&self) -> Option<(usize, usize)> {
        if self.key_state.load(Ordering::Acquire) == READY {
            Some((
                self.lock.load(Ordering::Relaxed),
                self.site.load(Ordering::Relaxed),
            ))
        } else {
            None
        }
    }

    /// The lock address this entry belongs to (0 while not in use).
    #[inline]
    pub(crate) fn lock_addr(&self) -> usize {
        self.lock.load(Ordering::Relaxed)
    }

    /// Sets the label: the latest lock object to claim this address names it. A seqlock keeps
    /// pointer and length consistent for readers; a writer that finds another one writing gives up.
    pub(crate) fn set_label(&self, label: Label) {
        let (ptr, len) = match label {
            Label::Name(s) => (s.as_ptr() as usize, s.len()),
            Label::Created(loc) => (loc as *const Location<'static> as usize, LEN_CREATED),
        };
        let seq = self.label_seq.load(Ordering::Relaxed);
        self.write_label(seq, ptr, len);
    }

    /// Sets the label unless the entry already has one.
    pub(crate) fn set_label_once(&self, label: Label) {
        if self.label_seq.load(Ordering::Relaxed) == 0 {
            self.set_label(label);
        }
    }

    /// Records `code` as the lock's first user, unless the entry already has a label.
    pub(crate) fn set_first_user(&self, code: usize) {
        if self.label_seq.load(Ordering::Relaxed) == 0 {
            self.write_label(0, code, LEN_FIRST_USER);
        }
    }

    /// Seqlock write of a label over sequence `seq` (gives up if another writer is at it).
    fn write_label(&self, seq: usize, ptr: usize, len: usize) {
        if seq & 1 == 1
            || self
                .label_seq
                .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // Release fence: a reader that sees the new pointer or length also sees the odd sequence.
        core::sync::atomic::fence(Ordering::Release);
        self.label_ptr.store(ptr, Ordering::Relaxed);
        self.label_len.store(len, Ordering::Relaxed);
        // Release: a reader that sees seq + 2 sees the pointer and length written above.
        self.label_seq.store(seq + 2, Ordering::Release);
    }

    pub(crate) fn label(&self) -> Option<StoredLabel> {
        for _ in 0..100 {
            let seq = self.label_seq.load(Ordering::Acquire);
            if seq == 0 {
                return None;
            }
            if seq & 1 == 1 {
                core::hint::spin_loop();
                continue;
            }
            let ptr = self.label_ptr.load(Ordering::Relaxed);
            let len = self.label_len.load(Ordering::Relaxed);
            core::sync::atomic::fence(Ordering::Acquire);
            if self.label_seq.load(Ordering::Relaxed) != seq {
                continue;
            }
            if len == LEN_FIRST_USER {
                return Some(StoredLabel::FirstUser(ptr));
            }
            return Some(StoredLabel::Given(if len == LEN_CREATED {
                // SAFETY: a consistent (seqlock-validated) pair stored by `set_label` from a
                // `&'static Location`.
                Label::Created(unsafe { &*(ptr as *const Location<'static>) })
            } else {
                // SAFETY: a consistent (seqlock-validated) pointer and length of a `&'static str`
                // stored by `set_label`; the string lives for the whole process and is UTF-8.
                Label::Name(unsafe {
                    core::str::from_utf8_unchecked(core::slice::from_raw_parts(
                        ptr as *const u8,
                        len,
                    ))
                })
            }));
        }
        None
    }

    /// Adds one contention (or timed-out attempt) record.
    pub(crate) fn add_wait(&self, w: &Wait) {
        self.contended.fetch_add(1, Ordering::Relaxed);
        if !w.ok {
            self.timeouts.fetch_add(1, Ordering::Relaxed);
        }
        if w.spun_ns != 0 {
            self.spin_ns.fetch_add(w.spun_ns, Ordering::Relaxed);
        }
        if w.sleeps != 0 {
            self.sleeps.fetch_add(w.sleeps, Ordering::Relaxed);
        }
        if w.yields != 0 {
            self.yields.fetch_add(w.yields, Ordering::Relaxed);
            self.yield_ns.fetch_add(w.yield_ns, Ordering::Relaxed);
        }
        if w.handoff {
            self.handoffs.fetch_add(1, Ordering::Relaxed);
        }
        self.wait_ns.fetch_add(w.wait_ns, Ordering::Relaxed);
        self.max_wait_ns.fetch_max(w.wait_ns, Ordering::Relaxed);
        self.wait_hist[hist_bucket(w.wait_ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one sampled hold time.
    pub(crate) fn add_hold(&self, hold_ns: u64) {
        self.hold_samples.fetch_add(1, Ordering::Relaxed);
        self.hold_ns.fetch_add(hold_ns, Ordering::Relaxed);
        self.max_hold_ns.fetch_max(hold_ns, Ordering::Relaxed);
    }

    /// Starts a new interval for this entry.
    pub(crate) fn reset(&self) {
        self.acquisitions_base
            .store(self.acquisitions.load(Ordering::Relaxed), Ordering::Relaxed);
        self.clear_interval();
    }

    /// Zeroes every counter of the interval but the acquisitions (which lock holders may
    /// update with a plain load and store: see `acquisitions`), and a hold sample in progress.
    fn clear_interval(&self) {
        for c in [
            &self.contended,
            &self.timeouts,
            &self.spin_ns,
            &self.sleeps,
            &self.handoffs,
            &self.wait_ns,
            &self.max_wait_ns,
            &self.hold_samples,
            &self.hold_ns,
            &self.max_hold_ns,
            &self.yields,
            &self.yield_ns,
            &self.hold_start,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        for h in &self.wait_hist {
            h.store(0, Ordering::Relaxed);
        }
    }
}

/// Log2 bucket of a wait time.
#[inline]
pub(crate) fn hist_bucket(ns: u64) -> usize {
    ((64 - ns.leading_zeros()) as usize).min(HIST_BUCKETS - 1)
}

/// The table.
pub(crate) static TABLE: [Entry; CAPACITY] = [const { Entry::new() }; CAPACITY];
// The size CAPACITY's docs count with (64-bit targets).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Entry>() == 448);
/// Events that found no free slot within `MAX_PROBES`, in the table nor in the overflow.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Entries of the overflow table (a power of two): one per call site, and one for the totals.
pub(crate) const OVERFLOW_CAPACITY: usize = 256;
/// Where the events that [`record_entry`] finds no room for in the table are recorded, keyed
/// `(OVERFLOW_LOCK, site)`: a server that creates and destroys locks all the time (MariaDB's
/// metadata locks, each a mutex of its own) fills the table with locks that are gone, and the
/// waits of the locks it creates later must still count, at their call sites at least.
pub(crate) static OVERFLOW: [Entry; OVERFLOW_CAPACITY] =
    [const { Entry::new() }; OVERFLOW_CAPACITY];
/// The lock address of the overflow's entries: no lock's (locks are aligned).
pub(crate) const OVERFLOW_LOCK: usize = 1;
/// The name of the overflow's totals, as reports show it.
pub(crate) const OVERFLOW_NAME: &str = "(other locks: table full)";

/// The pseudo-lock whose entries hold what `retire` folds of the destroyed locks first used at
/// the code address `first_user` (0: not known), or of the Rust locks whose label lies at that
/// address (see [`Label::origin`]; no code address is one: labels are data, and its fold's
/// totals carry the label): `first_user << 2 | 3`, odd, so no lock's address (locks are
/// aligned to at least 4 bytes) and not [`OVERFLOW_LOCK`].
pub(crate) const fn fold_lock(first_user: usize) -> usize {
    (first_user << 2) | 3
}

/// Whether `lock` is a [`fold_lock`].
pub(crate) const fn is_fold(lock: usize) -> bool {
    lock & 3 == 3
}

/// The first user a [`fold_lock`] stands for (0: not known).
pub(crate) const fn fold_first_user(lock: usize) -> usize {
    lock >> 2
}

/// The name of a [`fold_lock`]'s rows, as reports show it (with its first user).
pub(crate) const FOLD_NAME: &str = "(destroyed)";

#[inline]
fn slot_of(lock: usize, site: usize, len: usize) -> usize {
    let h = (lock ^ site.rotate_left(29)) as u64;
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - len.trailing_zeros())) as usize
}

/// Finds the entry for `(lock, site)`, claiming a free one if `insert`. `None` when absent (and
/// not inserting) or when the table is full around that slot (counted in [`DROPPED`]).
pub(crate) fn lookup(lock: usize, site: usize, insert: bool) -> Option<&'static Entry> {
    let e = if lock == OVERFLOW_LOCK {
        lookup_in(&OVERFLOW, lock, site, insert)
    } else {
        find_chained(&TABLE, lock, site, insert)
    };
    if e.is_none() && insert {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    e
}

/// The entry an event of `(lock, site)` is recorded in with shared counters only (counts added
/// with `fetch_add`, waits, holds): the key's own, claimed if need be, or, where the table is
/// full around its slot, the overflow's entry for `site` (see [`OVERFLOW`]), which the events
/// of every such lock share. `None` (counted in [`DROPPED`]) only if both are full.
pub(crate) fn record_entry(lock: usize, site: usize) -> Option<&'static Entry> {
    let e = record_entry_in(&TABLE, &OVERFLOW, lock, site);
    if e.is_none() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    e
}

/// [`record_entry`] over the tables `main` and `overflow`.
pub(crate) fn record_entry_in(
    main: &'static [Entry],
    overflow: &'static [Entry],
    lock: usize,
    site: usize,
) -> Option<&'static Entry> {
    if let Some(e) = find_chained(main, lock, site, true) {
        return Some(e);
    }
    // The overflow's totals entry carries its name, for its call sites' rows too.
    let total = lookup_in(overflow, OVERFLOW_LOCK, SITE_TOTAL, true);
    if let Some(t) = total {
        t.set_label_once(Label::Name(OVERFLOW_NAME));
    }
    if site == SITE_TOTAL {
        total
    } else {
        lookup_in(overflow, OVERFLOW_LOCK, site, true)
    }
}

/// Whether `e` is one of the overflow's entries, which many locks share (see [`OVERFLOW`]).
#[inline]
pub(crate) fn is_overflow(e: &Entry) -> bool {
    e.lock_addr() == OVERFLOW_LOCK
}

/// [`lookup`] in `table` (its length a power of two), counting nothing; a call-site entry it
/// claims is not chained to its lock (see [`find_chained`]).
fn lookup_in(
    table: &'static [Entry],
    lock: usize,
    site: usize,
    insert: bool,
) -> Option<&'static Entry> {
    find(table, lock, site, insert).map(|(e, _)| e)
}

/// [`lookup_in`] `main`, the table whose entries `retire` frees: a call-site entry it claims
/// joins the chain of its lock's totals entry (claimed too if need be).
fn find_chained(
    main: &'static [Entry],
    lock: usize,
    site: usize,
    insert: bool,
) -> Option<&'static Entry> {
    let (e, claimed) = find(main, lock, site, insert)?;
    if claimed && site != SITE_TOTAL {
        if let Some(total) = lookup_in(main, lock, SITE_TOTAL, true) {
            let link = index_in(main, e) + 1;
            let mut head = total.chain.load(Ordering::Relaxed);
            loop {
                e.chain.store(head, Ordering::Relaxed);
                // Release: a retire that reads the new head sees this entry's link.
                match total.chain.compare_exchange_weak(
                    head,
                    link,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(current) => head = current,
                }
            }
        }
    }
    Some(e)
}

/// The index of `e` in `table`.
fn index_in(table: &[Entry], e: &Entry) -> usize {
    (e as *const Entry as usize - table.as_ptr() as usize) / core::mem::size_of::<Entry>()
}

/// Finds the entry of `(lock, site)` in `table`, or with `insert` claims one (see the module
/// docs: the first tombstone the probe passed, else the empty slot that ended it); true with
/// an entry this call claimed.
fn find(
    table: &'static [Entry],
    lock: usize,
    site: usize,
    insert: bool,
) -> Option<(&'static Entry, bool)> {
    let len = table.len();
    let start = slot_of(lock, site, len);
    let mut tombstone: Option<&'static Entry> = None;
    for i in 0..MAX_PROBES.min(len) {
        let e = &table[(start + i) & (len - 1)];
        let mut state = e.key_state.load(Ordering::Acquire);
        if state == EMPTY {
            if !insert {
                return None;
            }
            // The key is in none of the slots its probe passed: it goes into the first
            // tombstone among them, if another thread has not just taken it, or here.
            if let Some(t) = tombstone {
                if claim(t, TOMBSTONE, lock, site).is_ok() {
                    return Some((t, true));
                }
            }
            match claim(e, EMPTY, lock, site) {
                Ok(()) => return Some((e, true)),
                Err(current) => state = current,
            }
        }
        if state == TOMBSTONE {
            tombstone = tombstone.or(Some(e));
            continue;
        }
        if state == CLAIMING {
            // Another thread is a few instructions from publishing this key; wait briefly. If it
            // was preempted, move on: at worst the key gets a second entry, which a report merges.
            for _ in 0..64 {
                core::hint::spin_loop();
                state = e.key_state.load(Ordering::Acquire);
                if state == READY {
                    break;
                }
            }
        }
        if state == READY
            && e.lock.load(Ordering::Relaxed) == lock
            && e.site.load(Ordering::Relaxed) == site
        {
            return Some((e, false));
        }
    }
    // No empty slot within the probes: a tombstone passed takes the key.
    match tombstone {
        Some(t) if insert && claim(t, TOMBSTONE, lock, site).is_ok() => Some((t, true)),
        _ => None,
    }
}

/// Claims `e`, in state `from` (empty or a tombstone), for `(lock, site)`; the state found
/// where another thread changed it first.
fn claim(e: &Entry, from: u8, lock: usize, site: usize) -> Result<(), u8> {
    e.key_state
        .compare_exchange(from, CLAIMING, Ordering::Acquire, Ordering::Acquire)?;
    e.lock.store(lock, Ordering::Relaxed);
    e.site.store(site, Ordering::Relaxed);
    // Release: whoever sees READY sees the key.
    e.key_state.store(READY, Ordering::Release);
    Ok(())
}

/// The entries of `lock` in `main` that `retire` folds and frees: its totals, and its
/// call-site entries in their chain (each with its site); `None` where the lock has no totals
/// entry there.
pub(crate) fn lock_entries_in(
    main: &'static [Entry],
    lock: usize,
) -> Option<(
    &'static Entry,
    impl Iterator<Item = (&'static Entry, usize)>,
)> {
    let total = lookup_in(main, lock, SITE_TOTAL, false)?;
    // Acquire: pairs with the Release of the link that made each entry the head.
    let mut next = total.chain.load(Ordering::Acquire);
    // A chain holds distinct entries; the bound only guards the walk.
    let mut left = main.len();
    let sites = core::iter::from_fn(move || {
        while next != 0 && left > 0 {
            left -= 1;
            let e = &main[next - 1];
            next = e.chain.load(Ordering::Relaxed);
            match e.key() {
                Some((l, site)) if l == lock && site != SITE_TOTAL => return Some((e, site)),
                _ => continue,
            }
        }
        None
    });
    Some((total, sites))
}

/// Every entry in use, with its key: the table's, then the overflow's.
pub(crate) fn entries() -> impl Iterator<Item = (&'static Entry, usize, usize)> {
    all().filter_map(|e| e.key().map(|(l, s)| (e, l, s)))
}

/// Every entry, in use or not, the table's then the overflow's: the `i`th is [`entry_at`]`(i)`.
pub(crate) fn all() -> impl Iterator<Item = &'static Entry> {
    TABLE.iter().chain(OVERFLOW.iter())
}

/// The `i`th entry of [`all`].
pub(crate) fn entry_at(i: usize) -> &'static Entry {
    if i < CAPACITY {
        &TABLE[i]
    } else {
        &OVERFLOW[i - CAPACITY]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_probe_past_a_freed_entry_and_new_keys_take_it() {
        static T: [Entry; 4] = [const { Entry::new() }; 4];
        let t: &'static [Entry] = &T;
        // Three locks whose probes start at the same slot.
        let start = slot_of(64, SITE_TOTAL, 4);
        let same: Vec<usize> = (1..)
            .map(|k| k * 64)
            .filter(|&l| slot_of(l, SITE_TOTAL, 4) == start)
            .take(3)
            .collect();
        let (a, b, c) = (same[0], same[1], same[2]);
        let ea = lookup_in(t, a, SITE_TOTAL, true).unwrap();
        let eb = lookup_in(t, b, SITE_TOTAL, true).unwrap();
        assert_eq!(index_in(t, eb), (index_in(t, ea) + 1) % 4);
        ea.free();
        assert_eq!(ea.key(), None);
        // b, placed past a's slot, is still found, and not claimed again in the tombstone.
        assert!(core::ptr::eq(
            lookup_in(t, b, SITE_TOTAL, false).unwrap(),
            eb
        ));
        assert!(core::ptr::eq(
            lookup_in(t, b, SITE_TOTAL, true).unwrap(),
            eb
        ));
        assert!(lookup_in(t, a, SITE_TOTAL, false).is_none());
        // A new key takes the tombstone its probe passed.
        let ec = lookup_in(t, c, SITE_TOTAL, true).unwrap();
        assert!(core::ptr::eq(ec, ea));
        assert_eq!(ec.key(), Some((c, SITE_TOTAL)));
        // With no empty slot left in its probe, a key takes a tombstone too.
        let filled = (100..)
            .map(|k| lookup_in(t, k * 64, SITE_TOTAL, true))
            .take_while(Option::is_some)
            .count();
        assert_eq!(filled, 2, "two slots were left");
        assert!(lookup_in(t, 99 * 64, SITE_TOTAL, true).is_none(), "full");
        eb.free();
        let ed = lookup_in(t, 99 * 64, SITE_TOTAL, true).unwrap();
        assert!(core::ptr::eq(ed, eb));
    }

    #[test]
    fn a_locks_call_site_entries_are_chained_to_its_totals() {
        static T: [Entry; 16] = [const { Entry::new() }; 16];
        let t: &'static [Entry] = &T;
        // A call site recorded first claims the totals too, and joins its chain.
        let s1 = find_chained(t, 0x100, site_of_address(1), true).unwrap();
        let s2 = find_chained(t, 0x100, site_of_address(2), true).unwrap();
        let other = find_chained(t, 0x200, site_of_address(1), true).unwrap();
        assert!(core::ptr::eq(
            find_chained(t, 0x100, site_of_address(1), true).unwrap(),
            s1
        ));
        let (total, sites) = lock_entries_in(t, 0x100).unwrap();
        assert_eq!(total.key(), Some((0x100, SITE_TOTAL)));
        let sites: Vec<(&Entry, usize)> = sites.collect();
        assert_eq!(sites.len(), 2);
        assert!(sites
            .iter()
            .any(|(e, s)| core::ptr::eq(*e, s1) && *s == site_of_address(1)));
        assert!(sites
            .iter()
            .any(|(e, s)| core::ptr::eq(*e, s2) && *s == site_of_address(2)));
        assert!(sites.iter().all(|(e, _)| !core::ptr::eq(*e, other)));
        assert!(lock_entries_in(t, 0x300).is_none());
    }

    #[test]
    fn events_past_a_full_table_are_recorded_in_the_overflow_by_site() {
        static MAIN: [Entry; 8] = [const { Entry::new() }; 8];
        static OVER: [Entry; 8] = [const { Entry::new() }; 8];
        let (main, overflow): (&'static [Entry], &'static [Entry]) = (&MAIN, &OVER);
        // Eight locks fill the main table.
        for lock in 1..=8 {
            let e = record_entry_in(main, overflow, lock * 64, SITE_TOTAL).unwrap();
            assert_eq!(e.key(), Some((lock * 64, SITE_TOTAL)));
            assert!(!is_overflow(e));
        }
        // A ninth lock's totals and its call site go to the overflow, which names itself.
        let total = record_entry_in(main, overflow, 9 * 64, SITE_TOTAL).unwrap();
        assert_eq!(total.key(), Some((OVERFLOW_LOCK, SITE_TOTAL)));
        assert!(is_overflow(total));
        assert!(matches!(
            total.label(),
            Some(StoredLabel::Given(Label::Name(OVERFLOW_NAME)))
        ));
        let site = site_of_address(0x4242);
        let at_site = record_entry_in(main, overflow, 9 * 64, site).unwrap();
        assert_eq!(at_site.key(), Some((OVERFLOW_LOCK, site)));
        // Every lock past the table shares them; an entry of the table is still found.
        assert!(core::ptr::eq(
            record_entry_in(main, overflow, 10 * 64, site).unwrap(),
            at_site
        ));
        assert!(core::ptr::eq(
            record_entry_in(main, overflow, 10 * 64, SITE_TOTAL).unwrap(),
            total
        ));
        assert_eq!(
            record_entry_in(main, overflow, 3 * 64, SITE_TOTAL)
                .unwrap()
                .key(),
            Some((3 * 64, SITE_TOTAL))
        );
        // Once the overflow is full too, an event has nowhere to go.
        for s in 1..=6 {
            assert!(record_entry_in(main, overflow, 64, site_of_address(s)).is_some());
        }
        assert!(record_entry_in(main, overflow, 64, site_of_address(7)).is_none());
    }
}
