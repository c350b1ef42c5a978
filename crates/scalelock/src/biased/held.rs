//! Per-thread record of the deferred read locks a thread holds: which lock, which slot, and how
//! many nested reads share that slot. Fixed size, no destructor, no allocation.

use core::cell::Cell;

/// Deferred read locks one thread can hold at once (more take the slow path).
const HELD: usize = 8;
/// Slow-path reads between two looks at the clock (to re-enable the bias).
const CLOCK_EVERY: u32 = 256;
/// A reader that waits for a paused bias records how the wait went (for the learned wait) in
/// one case in this many: the learned wait lives in the bias's cache line, which every deferred
/// reader reads, and a store there after every wait would take that line from all of them (and
/// from the writer, whose next read would miss it) once per write and waiting reader.
const REBIAS_RECORD_EVERY: u32 = 16;

pub(super) struct Held {
    key: [Cell<usize>; HELD],
    slot: [Cell<usize>; HELD],
    depth: [Cell<u32>; HELD],
    /// Entries in use: lets the common cases (none held) skip the scan.
    used: Cell<u32>,
    /// Waits for a paused bias (for `sample_bias_wait`).
    bias_waits: Cell<u32>,
    /// Reads of biased locks (deferred or not, not nested) by this thread, wrapping: one count
    /// serves both `take_reads` (the difference from `reads_taken`) and the slow path's clock
    /// (`slow_read`), so that a read bumps one thread-local word.
    reads: Cell<u32>,
    /// `reads` when this thread last took a biased lock's write lock.
    reads_taken: Cell<u32>,
}

impl Held {
    const fn new() -> Held {
        Held {
            key: [const { Cell::new(0) }; HELD],
            slot: [const { Cell::new(0) }; HELD],
            depth: [const { Cell::new(0) }; HELD],
            used: Cell::new(0),
            bias_waits: Cell::new(0),
            reads: Cell::new(0),
            reads_taken: Cell::new(0),
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    static HELD_LOCKS: Held = const { Held::new() };
}

#[cfg(loom)]
loom::thread_local! {
    static HELD_LOCKS: Held = Held::new();
}

#[cfg(not(loom))]
#[inline(always)]
fn with<R>(f: impl FnOnce(&Held) -> R) -> Option<R> {
    HELD_LOCKS.try_with(f).ok()
}

#[cfg(loom)]
fn with<R>(f: impl FnOnce(&Held) -> R) -> Option<R> {
    Some(HELD_LOCKS.with(f))
}

pub(super) enum Nest {
    /// This thread already holds a deferred read lock on the lock: nested into it.
    Nested,
    /// No room to record another deferred read lock (or thread-locals are gone).
    Full,
    /// Not held; this entry is free to record it.
    Free(usize),
}

/// Whether this thread holds a deferred read lock (on any lock). True if the thread-locals
/// are gone, so that `nest` then says `Full` (a read it could not record must not be
/// deferred).
#[inline]
pub(super) fn holds_any() -> bool {
    with(|h| h.used.get() != 0).unwrap_or(true)
}

/// Nests into a deferred read lock this thread holds on `key` if it is recorded in the first
/// entry, the one a thread's first deferred read lock takes: a nested read of the only lock a
/// thread holds is then one compare and one increment, with no call and no scan. False leaves
/// the record unchanged (the caller goes on to `nest`).
#[inline(always)]
pub(super) fn nest_first(key: usize) -> bool {
    with(|h| {
        let found = h.key[0].get() == key;
        if found {
            h.depth[0].set(h.depth[0].get() + 1);
        }
        found
    })
    .unwrap_or(false)
}

/// Nests into a deferred read lock this thread holds on `key`, or says whether a new one
/// could be recorded.
#[inline]
pub(super) fn nest(key: usize) -> Nest {
    with(|h| {
        if h.used.get() == 0 {
            return Nest::Free(0);
        }
        let mut free = None;
        for i in 0..HELD {
            let k = h.key[i].get();
            if k == key {
                h.depth[i].set(h.depth[i].get() + 1);
                return Nest::Nested;
            }
            if k == 0 && free.is_none() {
                free = Some(i);
            }
        }
        free.map_or(Nest::Full, Nest::Free)
    })
    .unwrap_or(Nest::Full)
}

/// Records a new deferred read lock on `key` in slot `slot`, in the free `entry` that
/// `nest` found.
#[inline]
pub(super) fn record(entry: usize, key: usize, slot: usize) {
    with(|h| {
        h.key[entry].set(key);
        h.slot[entry].set(slot);
        h.depth[entry].set(1);
        h.used.set(h.used.get() + 1);
        h.reads.set(h.reads.get().wrapping_add(1));
    });
}

/// The reads of biased locks this thread has done since the last call (any lock): called
/// as it takes a write lock.
#[inline]
pub(super) fn take_reads() -> u32 {
    with(|h| {
        let reads = h.reads.get();
        reads.wrapping_sub(h.reads_taken.replace(reads))
    })
    .unwrap_or(0)
}

/// Releases one deferred read lock on `key`: `Some(Some(slot))` when the slot is to be
/// cleared, `Some(None)` when a nested read was released, `None` when this thread holds no
/// deferred read lock on `key` (its read lock is on the underlying lock).
#[inline]
pub(super) fn release(key: usize) -> Option<Option<usize>> {
    with(|h| {
        if h.used.get() == 0 {
            return None;
        }
        let i = (0..HELD).find(|&i| h.key[i].get() == key)?;
        let depth = h.depth[i].get() - 1;
        h.depth[i].set(depth);
        if depth == 0 {
            h.key[i].set(0);
            h.used.set(h.used.get() - 1);
            Some(Some(h.slot[i].get()))
        } else {
            Some(None)
        }
    })
    .flatten()
}

/// Counts a wait for a paused bias; true once every `REBIAS_RECORD_EVERY` calls on this
/// thread (always under loom): the waits that are recorded.
#[inline]
pub(super) fn sample_bias_wait() -> bool {
    with(|h| one_in(&h.bias_waits, REBIAS_RECORD_EVERY)).unwrap_or(false)
}

/// Counts a read through the underlying lock; true once every `CLOCK_EVERY` reads of biased
/// locks on this thread (always under loom), so the slow read path reads the clock rarely.
/// (Deferred reads count too: while the bias is off, which is when the clock matters, reads
/// take the slow path, so one in `CLOCK_EVERY` of them looks.)
#[inline]
pub(super) fn slow_read() -> bool {
    with(|h| one_in(&h.reads, CLOCK_EVERY)).unwrap_or(false)
}

/// Counts one more event on `count`; true for one in `n` (for every one under loom, so that
/// the models explore the sampled path).
#[inline]
fn one_in(count: &Cell<u32>, n: u32) -> bool {
    let c = count.get().wrapping_add(1);
    count.set(c);
    cfg!(loom) || c % n == 0
}
