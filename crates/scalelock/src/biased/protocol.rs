//! The protocol of [`RawBiasedRwLock`], a reader-biased rwlock whose readers do not share a
//! cache line (BRAVO-style visible readers).
//!
//! # Design
//!
//! Even a perfect one-word rwlock makes every reader write the lock's cache line: two readers on
//! two cores pass that line back and forth, and read-mostly locks stop scaling at two threads.
//! [`RawBiasedRwLock`] follows BRAVO (Dice and Kogan, "BRAVO: Biased Locking for Reader-Writer
//! Locks", USENIX ATC 2019) and folly's `SharedMutex` "deferred readers": it wraps a
//! [`RawRwLock`] and adds a *read bias*. While the bias is on, a reader does not touch the lock at
//! all: it publishes "I read lock L" in a slot of a process-wide **visible-readers table**, in the
//! row of the CPU it runs on, and re-checks that the bias is still on. Each row is its own
//! 128-byte block (two cache lines, so the adjacent-line prefetcher does not couple neighbours),
//! so readers on different cores write different lines, and the lock's own line stays shared in
//! every core's cache.
//!
//! A writer takes the underlying lock (which stops slow-path readers), **revokes the bias**, and
//! waits until no slot of the table names this lock: those readers entered before the revocation
//! and finish their read sections. The writer's price is bounded: one scan of one row per CPU
//! (not per thread; 2 rows on a 2-core machine, 32 KB at most), plus waiting for the readers that
//! were already inside.
//!
//! **When the bias comes back.** BRAVO keeps the bias off for `9 x` the measured revocation time
//! after each revocation, capping the writers' overhead near a tenth. On a fast machine that rule
//! keeps the bias off most of the time at one write per thousand reads (a revocation every few
//! microseconds), and the readers then pay for a shared cache line on every read. scalelock asks
//! instead whether the bias *pays*, weighing what it saves readers against what revocations
//! cost (`bias_pays`):
//!
//! - a read saves about one coherence miss on the lock word (taken as 32 ns) when readers on
//!   several CPUs share the lock (revocations find a reader inside at least once in 16), and a
//!   few ns (2) for a lone reader;
//! - a revocation costs what the writer measures (one revocation in 8 is timed; the time spent
//!   waiting for readers already inside is left out, as any rwlock's writer waits for those),
//!   and, when readers share the lock, what they wait while the bias is paused: the writer
//!   times that too, from its revocation to its unlock;
//! - writers that also read count their reads between two writes, which on average is the
//!   read:write ratio: the bias pays if those reads save more than a revocation costs. Where
//!   cross-core hand-offs are slow, the pause readers wait through outweighs what the bias
//!   saves them, and without counting it the bias stayed on where it lost to the plain lock.
//!   The pause includes the writer's own critical section, which readers would wait out with
//!   any rwlock: with long write sections the bias turns off sooner than it has to, and the
//!   lock then behaves as the plain one (the safe side of the verdict);
//! - for writers that do not read, the ratio is unknown: the bias pays if readers share the
//!   lock and it lives at least twice as long as a revocation takes.
//!
//! All are moving averages over about 8 revocations, each sample clamped, so that neither one
//! preempted revocation nor the short-long rhythm of two writers' phases flips the verdict.
//!
//! While the bias pays, **the writer turns it back on as it unlocks**: the revocation sets the
//! bias to `PAUSED`, meaning off for this writer's critical section only, and a reader that
//! arrives meanwhile *waits for the bias by reading it* (polling, for a learned time) instead of
//! queueing on the underlying lock, which would write the lock's line twice and pull it from the
//! writer. A writer that leaves while another waits hands `PAUSED` over: the next writer has no
//! reader to scan for, and turns the bias on in its turn. A reader that has waited 1 µs looks
//! whether writers queue; if so it stops waiting and takes the underlying lock, which lets it in
//! between two writers (under a stream of writers the bias went from writer to writer, and every
//! read waited out its whole budget for it; `scalelock bench --workload reader-tail` measures
//! that cell). Under such a stream the bias goes off after a few revocations and stays off.
//! When the bias stops paying it is set `OFF` and stays off for a back-off window, `2 x` the
//! revocation time doubled for each unpaid revocation in a row (up to `2^10`: a longer cap cost
//! `read-write`, where the bias pays at times): as writes get frequent the bias fades out and
//! the lock behaves as the plain [`RawRwLock`] plus a few predictable loads. A reader on the slow path
//! turns the bias back on once the window has passed (it looks at the clock once every 256 slow
//! reads), or at once if it finds it `PAUSED` with no writer left to turn it on.
//!
//! Compared with crossbeam's `ShardedLock` (eight padded `RwLock` shards *per lock*, about 1 KB,
//! and a writer that locks all eight), the lock object here is two cache lines and 20 bytes,
//! and the table is shared by all locks; compared with BRAVO's hashed table, rows per CPU
//! (rather than a hash of thread and lock) mean that two cores never write the same line. The
//! layout: a line for the bias, which biased readers only read; a line for the writers'
//! bookkeeping; then the underlying lock word, which the protected data follows on the same
//! line (lock_api puts a [`BiasedRwLock`](crate::BiasedRwLock)'s data right after the raw lock,
//! and `BiasedRwLock` starts the raw lock on a line). Sharing the bias's line with the lock word
//! would cost an unbiased reader a second coherence miss for its look at the bias, and a
//! revoking writer's bookkeeping stores would pull the bias line from the readers waiting for
//! it. The data shares the lock word's line because with the bias off (frequent writes) a
//! reader or writer then moves one line, as with [`RwLock`](crate::RwLock), not two (with the
//! data on a line of its own, frequent writes ran well behind `RwLock`, and so did `RwLock`
//! itself given a separate data line). The rest is the bias's own work on each operation (a few
//! loads and thread-local counts).
//!
//! # State
//!
//! ```text
//!  RawBiasedRwLock (152 bytes; starts a line)  visible-readers table (static, one row per CPU)
//!  +-------------------------------------+     row 0: [slot 0 .. slot 15]  128-byte aligned
//!  | rbias  BIASED/REVOKING/PAUSED/OFF   |     row 1: [slot 0 .. slot 15]
//!  | drain         bit 0: a writer sleeps|     ...
//!  |               bits 1..: sequence    |     slot = address of the lock a reader holds, or 0
//!  | rebias_spin   learned bias wait     |
//!  +-------------------------------------+     per thread (no allocation): up to 8 deferred
//!  | inhibit_until no re-bias before (ns)|     read locks held, as (lock, slot, nesting
//!  | enabled_at    when bias last came on|     count); reads since the last write lock
//!  | backoff       revocation back-off   |
//!  | revoke_share  avg revocation share  |
//!  | reader_found  avg: a reader inside? |
//!  | revocations   count (1 in 8 timed)  |
//!  | cost_ns       avg revocation cost   |
//!  | reads_per_write, reading_writers    |
//!  | pause_ns      avg bias pause (ns)   |
//!  | pause_start   timed pause began (ns)|
//!  +-------------------------------------+
//!  | lock          RawRwLock (16 bytes)  |
//!  | spin          learned drain wait    |
//!  +- - - - - - - - - - - - - - - - - - -+
//!  | (BiasedRwLock: the data, same line) |
//!
//!  reader, BIASED:   slot: 0 -> L (CAS, own CPU's row); SC; still BIASED? enter : withdraw
//!  reader, not:      PAUSED? poll rbias until BIASED (learned budget), then try the table
//!                    again; BIASED again (a writer came and went)? try the table once more;
//!                    otherwise lock.lock_shared(), then: PAUSED and no writer waits, or OFF,
//!                    the back-off passed and no writer waits: rbias -> BIASED (CAS)
//!  reader unlock:    deferred? slot: L -> 0 (plain store); not BIASED? wake a napping writer
//!                    else lock.unlock_shared()
//!  writer:           if the underlying lock is busy: BIASED -> REVOKING (stop new deferred
//!                    readers while waiting), lock.lock_exclusive(); then if BIASED/REVOKING:
//!                    rbias -> PAUSED (if the bias pays) or OFF (backing off); SC; wait until
//!                    no slot names L (poll, then timed naps on `drain`); judge: the bias
//!                    pays? (else PAUSED -> OFF, back-off, inhibit_until)
//!  writer unlock:    PAUSED, or OFF with no back-off: another writer waits? leave it PAUSED
//!                    for that writer : rbias -> BIASED (Release); then lock.unlock_exclusive()
//! ```
//!
//! The two "SC" points pair as in Dekker's algorithm: a reader publishes its slot and then
//! reads `rbias`, a writer clears `rbias` and then reads the slots, so either the writer sees the
//! reader's slot (and waits for it) or the reader sees the bias gone (and withdraws). Leaving is
//! one plain store to the reader's own slot; a reader that withdraws, or leaves and sees a
//! revocation under way, wakes the writer if it announced a nap (a look at `drain` first, so
//! that it writes the lock's line only then). The writer's naps are timed, so a reader that
//! misses the revocation costs it latency, never progress.
//!
//! Invariant: while `rbias` is OFF or PAUSED and no revocation is in progress, no reader is
//! inside through a slot, so a writer that finds it OFF or PAUSED needs no scan. `rbias` becomes
//! OFF or PAUSED only under the underlying write lock, and BIASED from OFF or PAUSED only under
//! an underlying read lock or by the holder of the write lock as it unlocks (its writes are
//! done; the next writer acquires after that unlock and sees the bias). REVOKING (set by a
//! waiting writer, undone by a timed writer that gives up) only stops new deferred readers and
//! changes nothing about who may be inside. PAUSED differs from OFF only in what readers do:
//! they wait for the bias rather than queue on the underlying lock.
//!
//! Nesting: a thread that already holds a deferred read lock on `L` and reads it again only
//! bumps its nesting count, so that nested read never waits, not even behind a revoking writer
//! (who waits for that very thread). A nested plain `read` whose outer read went to the
//! underlying lock (bias off) is the classic deadlock behind a waiting writer, and debug builds
//! panic on it as [`RwLock`](crate::RwLock) does: nest with `read_recursive`.

use super::held;
use super::payoff::{self, ewma, MAX_READS_SAMPLE, MAX_SHARE_SAMPLE, READS_SHIFT, SHARE_SHIFT};
use super::table::{self, SLOTS};
use crate::rwlock::RawRwLock;
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::wait::{futex, now_ns, rotate_outside_wait, Deadline, SpinEstimate, Subject, Waiter};

/// Slots a reader tries in its row before it takes the slow path.
const PROBES: usize = if cfg!(loom) { 2 } else { 4 };
/// A back-off window is this many times the average revocation cost, times `2^backoff`.
const INHIBIT_FACTOR: u64 = 2;
/// One revocation in this many is timed (two clock reads, and one at the unlock before it).
const TIME_EVERY: u32 = if cfg!(loom) { 1 } else { 8 };
/// The largest back-off exponent: the bias stays off at most `2^10 x 2 x` the revocation cost.
const MAX_BACKOFF: u32 = 10;

/// `rbias`: readers may enter through the visible-readers table.
const BIASED: u32 = 1;
/// `rbias`: off, and no reader is inside through the table (unless the holder of the underlying
/// write lock is revoking right now).
const OFF: u32 = 0;
/// `rbias`: off, but readers may still be inside through the table: a writer waiting for the
/// underlying lock stopped new deferred readers early; it scans once it holds the lock.
const REVOKING: u32 = 2;
/// `rbias`: off for one writer's critical section only: the holder of the underlying write lock
/// revoked a bias that pays, and turns it back on as it unlocks. Readers wait for that by
/// reading `rbias`, without touching the underlying lock's line.
const PAUSED: u32 = 3;

/// First and longest timed nap of a writer waiting for deferred readers to leave.
const NAP_MIN_NS: u64 = 50_000;
const NAP_MAX_NS: u64 = 1_000_000;

/// How long a writer that revokes the bias waits for the deferred readers still inside.
#[derive(Clone, Copy)]
enum Patience<'a> {
    /// Until they leave (a write lock or an upgrade).
    Unbounded,
    /// Until they leave or the deadline passes (a timed try).
    Until(&'a Deadline),
    /// Not at all (a try): a reader inside fails it. The try records no wait in lockstat, as
    /// no failed try of any lock does.
    Never,
}

const DRAIN_SLEEPING: u32 = 1;
const DRAIN_STEP: u32 = 2;

/// How long a reader waits for a paused bias before it looks whether writers queue on the
/// underlying lock. If they do, the bias goes from writer to writer and none turns it back on,
/// while the underlying lock lets a reader in between two writers: the reader stops waiting.
/// Not looked at sooner: the look reads the lock word's line, which the writer is using, and
/// with one writer at a time the bias is back within a few hundred nanoseconds.
const QUEUE_CHECK_NS: u32 = 1_000;

/// The raw reader-biased rwlock: two cache lines and a 20-byte lock word (see the module docs
/// for why the data follows it), `const`-constructible, implementing lock_api's
/// `RawRwLock`, `RawRwLockTimed`, `RawRwLockDowngrade`, `RawRwLockRecursive`,
/// `RawRwLockRecursiveTimed`, `RawRwLockUpgrade`, `RawRwLockUpgradeDowngrade` and
/// `RawRwLockUpgradeTimed`.
///
/// ```
/// use lock_api::RawRwLock as _;
/// use scalelock::RawBiasedRwLock;
///
/// static RAW: RawBiasedRwLock = RawBiasedRwLock::INIT;
/// RAW.lock_shared(); // biased: touches only this CPU's row of the readers table
/// assert!(!RAW.try_lock_exclusive());
/// // SAFETY: read-locked just above by this thread.
/// unsafe { RAW.unlock_shared() };
/// RAW.lock_exclusive(); // revokes the bias
/// // SAFETY: write-locked just above.
/// unsafe { RAW.unlock_exclusive() };
/// assert_eq!(std::mem::size_of::<RawBiasedRwLock>(), 152);
/// ```
///
/// Its alignment is 8, so that lock_api's data can follow the lock word on its line: a
/// [`BiasedRwLock`](crate::BiasedRwLock) starts it on a cache line; a raw lock used on its own
/// (as above) keeps its lines apart from its neighbours' only if placed on a line (in a
/// `#[repr(align(64))]` struct, say).
#[repr(C)]
pub struct RawBiasedRwLock {
    /// 1 while readers may enter through the visible-readers table.
    rbias: AtomicU32,
    /// Revocation wake-ups: bit 0 = a writer sleeps, the rest a sequence readers bump.
    drain: AtomicU32,
    /// How long readers have had to wait for a writer to turn the bias back on (learned).
    rebias_spin: SpinEstimate,
    /// The rest of the bias's line: every reader reads it, only writers write it.
    _bias_line: Pad<BIAS_PAD>,
    /// What revoking writers keep, on a line of its own (see [`Book`]).
    book: Book,
    /// The underlying lock, last: the protected data follows it on the same line.
    lock: LockWord,
}

/// What revoking writers keep (written under the write lock, or by readers on the slow path,
/// who hold the underlying read lock), alone on a cache line: a revoking writer's stores here do
/// not pull the bias's line away from the readers waiting for the bias, nor the lock word's
/// line (which holds the data) from its readers.
#[repr(C)]
struct Book {
    /// `now_ns()` before which no reader re-enables the bias.
    inhibit_until: AtomicU64,
    /// `now_ns()` when the bias was last re-enabled.
    enabled_at: AtomicU64,
    /// Revocation back-off exponent (see the module docs).
    backoff: AtomicU32,
    /// Moving average of the time share revocations take: cost / (cost + bias lifetime), in
    /// units of `2^-SHARE_SHIFT`.
    revoke_share: AtomicU32,
    /// Moving average of whether a revocation found a deferred reader inside (1 or 0, in units
    /// of `2^-SHARE_SHIFT`); starts at one half.
    reader_found: AtomicU32,
    /// Revocations so far (wrapping); every [`TIME_EVERY`]th is timed.
    revocations: AtomicU32,
    /// Moving average of timed revocations' cost in ns.
    cost_ns: AtomicU32,
    /// Moving average of how many reads a writer that also reads did between two of its writes
    /// (units of `2^-READS_SHIFT`; revocations by writers that read only).
    reads_per_write: AtomicU32,
    /// Moving average of whether the revoking writer reads too (1 or 0, in units of
    /// `2^-SHARE_SHIFT`); starts at one half.
    reading_writers: AtomicU32,
    /// Moving average of how long timed revocations kept the bias off, in ns: from the
    /// revocation to the writer's unlock, which is what readers that find the bias paused wait.
    pause_ns: AtomicU32,
    /// `now_ns()` when the current holder of the write lock revoked the bias, if that
    /// revocation was timed; 0 otherwise.
    pause_start: AtomicU64,
    /// The rest of the line.
    _line: Pad<BOOK_PAD>,
}

/// The underlying [`RawRwLock`] and the writers' learned wait for deferred readers (20 bytes).
/// Last in the lock, so that the data of a [`BiasedRwLock`](crate::BiasedRwLock) (lock_api puts
/// it right after the raw lock) shares the lock word's cache line, as a [`RwLock`]'s does: with
/// the bias off (frequent writes), a reader or writer then moves one line, not two.
#[repr(C)]
struct LockWord {
    lock: RawRwLock,
    /// How long revoking writers have had to wait for deferred readers (learned spin budget).
    spin: SpinEstimate,
}

impl core::ops::Deref for LockWord {
    type Target = RawRwLock;
    #[inline]
    fn deref(&self) -> &RawRwLock {
        &self.lock
    }
}

/// Padding that completes a cache line (none under loom, whose atomics are larger).
type Pad<const N: usize> = [u8; N];
#[cfg(not(loom))]
const BIAS_PAD: usize = 64 - 12;
#[cfg(not(loom))]
const BOOK_PAD: usize = 64 - 56;
#[cfg(loom)]
const BIAS_PAD: usize = 0;
#[cfg(loom)]
const BOOK_PAD: usize = 0;

// The layout the docs promise: the bias, the bookkeeping and the lock word each start a line
// when the lock does (`BiasedRwLock` aligns it), and data of up to 40 bytes follows the lock
// word on its line.
#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(offset_of!(RawBiasedRwLock, book) == 64);
    assert!(offset_of!(RawBiasedRwLock, lock) == 128);
    assert!(size_of::<LockWord>() == 20);
    assert!(size_of::<RawBiasedRwLock>() == 152);
    assert!(align_of::<RawBiasedRwLock>() == 8);
};

/// The unlocked, biased state: one literal for the `const` and the loom constructor.
macro_rules! unlocked {
    () => {
        RawBiasedRwLock {
            rbias: AtomicU32::new(BIASED),
            drain: AtomicU32::new(0),
            rebias_spin: SpinEstimate::new(),
            _bias_line: [0; BIAS_PAD],
            book: Book {
                inhibit_until: AtomicU64::new(0),
                enabled_at: AtomicU64::new(0),
                backoff: AtomicU32::new(0),
                revoke_share: AtomicU32::new(0),
                reader_found: AtomicU32::new(1 << (SHARE_SHIFT - 1)),
                revocations: AtomicU32::new(0),
                cost_ns: AtomicU32::new(0),
                reads_per_write: AtomicU32::new(0),
                reading_writers: AtomicU32::new(1 << (SHARE_SHIFT - 1)),
                pause_ns: AtomicU32::new(0),
                pause_start: AtomicU64::new(0),
                _line: [0; BOOK_PAD],
            },
            lock: LockWord {
                lock: RawRwLock::new(),
                spin: SpinEstimate::new(),
            },
        }
    };
}

impl RawBiasedRwLock {
    /// An unlocked lock, biased towards readers.
    #[cfg(not(loom))]
    pub const fn new() -> RawBiasedRwLock {
        unlocked!()
    }

    /// An unlocked lock, biased towards readers (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> RawBiasedRwLock {
        unlocked!()
    }

    #[inline]
    fn key(&self) -> usize {
        self as *const RawBiasedRwLock as usize
    }

    /// Lockstat: the address this lock's statistics are kept under (its underlying
    /// [`RawRwLock`]'s, whose contended paths record there too).
    #[inline]
    pub(crate) fn stats_key(&self) -> usize {
        self.lock.stats_key()
    }

    // -----------------------------------------------------------------------------------------
    // Readers
    // -----------------------------------------------------------------------------------------

    /// Takes a read lock. While the bias is on this writes only the current CPU's row of the
    /// visible-readers table; otherwise it takes the underlying [`RawRwLock`]'s read lock.
    #[inline]
    pub fn lock_shared(&self) {
        // The two common cases inline: the bias on (through the table), and the bias off with
        // no deferred read lock held by this thread (which would have to nest), where the read
        // is the underlying lock's. The rest is out of line.
        if !held::holds_any() {
            match self.rbias.load(Ordering::Relaxed) {
                BIASED if self.enter_table(0) => return,
                OFF => {
                    self.lock.lock_shared();
                    self.maybe_rebias();
                    return;
                }
                _ => {}
            }
        }
        self.lock_shared_slow();
    }

    /// `lock_shared` past its inline cases: nesting, a paused bias, or a failed first try of
    /// the table.
    #[inline(never)]
    fn lock_shared_slow(&self) {
        if !self.try_deferred() && !self.retry_deferred() {
            self.lock.lock_shared();
            self.maybe_rebias();
        }
    }

    /// While the bias pays, a writer revokes it only for its own critical section and turns it
    /// back on as it unlocks. A reader that arrives meanwhile waits for that by *reading* the
    /// bias (for a learned time), instead of queueing on the underlying lock: queueing would
    /// write the lock's line twice (lock and unlock) and pull it away from the writer. Returns
    /// whether the reader then entered through the table.
    ///
    /// A reader that failed only because a writer came and went (it withdrew from the table,
    /// and the bias is back on) tries the table once more.
    #[inline]
    fn retry_deferred(&self) -> bool {
        match self.rbias.load(Ordering::Relaxed) {
            PAUSED => self.await_bias_slow(),
            BIASED => self.try_deferred(),
            _ => false,
        }
    }

    #[cold]
    fn await_bias_slow(&self) -> bool {
        // Both outcomes are sampled alike, so the learned wait sees them in their proportions.
        let record = held::sample_bias_wait();
        // The learned wait, without the wake-up latency floor of a lock's spin: giving up here
        // means taking the underlying lock, not sleeping.
        let mut w = Waiter::for_fallback(&self.rebias_spin, record);
        let mut queue_checked = false;
        while w.spin(true) {
            if self.rbias.load(Ordering::Relaxed) == BIASED {
                w.acquired(false);
                return self.try_deferred();
            }
            // See QUEUE_CHECK_NS.
            if !queue_checked && w.spun_ns() >= QUEUE_CHECK_NS {
                queue_checked = true;
                if self.lock.writers_waiting() {
                    return w.gave_up();
                }
            }
        }
        w.gave_up()
    }

    /// Takes a read lock if that needs no waiting.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        if self.try_deferred() {
            return true;
        }
        let ok = self.lock.try_lock_shared();
        if ok {
            self.maybe_rebias();
        }
        ok
    }

    /// Takes a read lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_shared_until(&self, deadline: &Deadline) -> bool {
        if self.try_deferred() {
            return true;
        }
        let ok = self.lock.try_lock_shared_until(deadline);
        if ok {
            self.maybe_rebias();
        }
        ok
    }

    /// Takes a read lock whenever no writer holds the lock, even while writers wait.
    #[inline]
    pub fn lock_shared_recursive(&self) {
        // The common nested read inline: this thread's first deferred read lock is on this
        // lock (`try_deferred` would find the same entry, through a call and a scan).
        if !held::nest_first(self.key()) {
            self.lock_shared_recursive_slow();
        }
    }

    /// `lock_shared_recursive` past a nested read of the thread's first deferred read lock.
    #[inline(never)]
    fn lock_shared_recursive_slow(&self) {
        if !self.try_deferred() && !self.retry_deferred() {
            self.lock.lock_shared_recursive();
            self.maybe_rebias();
        }
    }

    /// Takes a recursive read lock if no writer holds the lock.
    #[inline]
    pub fn try_lock_shared_recursive(&self) -> bool {
        if self.try_deferred() {
            return true;
        }
        let ok = self.lock.try_lock_shared_recursive();
        if ok {
            self.maybe_rebias();
        }
        ok
    }

    /// Takes a recursive read lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_shared_recursive_until(&self, deadline: &Deadline) -> bool {
        if self.try_deferred() {
            return true;
        }
        let ok = self.lock.try_lock_shared_recursive_until(deadline);
        if ok {
            self.maybe_rebias();
        }
        ok
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The calling thread must hold a read lock on this lock (taken on this thread: read guards
    /// are not `Send`).
    #[inline]
    pub unsafe fn unlock_shared(&self) {
        let key = self.key();
        match held::release(key) {
            Some(Some(slot)) => self.leave_slot(table::slot(slot)),
            Some(None) => {} // a nested deferred read: the outer one keeps the slot
            None => {
                // SAFETY: the caller holds a read lock and it is not a deferred one, so it is a
                // read lock on the underlying lock.
                unsafe { self.lock.unlock_shared() }
            }
        }
    }

    /// The fast path: enter through the visible-readers table if the bias is on (or nest in a
    /// deferred read lock this thread already holds). Returns false if the caller must take the
    /// underlying lock.
    #[inline(always)]
    fn try_deferred(&self) -> bool {
        // Two loads are inline (this thread's count of deferred locks, the bias); the table's
        // probing and the nesting look-up are not (too large to inline): with the bias off
        // (the path frequent writes leave) a read then costs what a plain `RwLock` read does
        // plus those loads, not a call; with it on, one call.
        if held::holds_any() {
            return self.try_deferred_holding();
        }
        self.rbias.load(Ordering::Relaxed) == BIASED && self.enter_table(0)
    }

    /// `try_deferred` for a thread that holds deferred read locks already: nests into its
    /// read of this lock, or records a new one in a free entry.
    #[inline(never)]
    fn try_deferred_holding(&self) -> bool {
        let entry = match held::nest(self.key()) {
            held::Nest::Nested => return true,
            held::Nest::Full => return false,
            held::Nest::Free(entry) => entry,
        };
        self.rbias.load(Ordering::Relaxed) == BIASED && self.enter_table(entry)
    }

    /// The body of `try_deferred`: publishes this reader in a free slot of its CPU's row, and
    /// records it in `entry` of the thread's held locks. The first probe is inline (the
    /// common case: this lock's slot in the row is free); the others are not.
    #[inline(always)]
    fn enter_table(&self, entry: usize) -> bool {
        let key = self.key();
        let row = table::my_row();
        // Locks hash to different starting slots, so that one thread's deferred locks spread over
        // its row. (Under loom, addresses vary between executions: start at 0 to stay
        // deterministic.)
        let start = if cfg!(loom) {
            0
        } else {
            (key >> 6) ^ (key >> 12)
        };
        match self.enter_slot(entry, row * SLOTS + start % SLOTS) {
            Some(entered) => entered,
            None => self.enter_table_probing(entry, row, start),
        }
    }

    /// `enter_table`'s other probes, once the first slot was taken.
    #[inline(never)]
    fn enter_table_probing(&self, entry: usize, row: usize, start: usize) -> bool {
        for probe in 1..PROBES {
            if let Some(entered) = self.enter_slot(entry, row * SLOTS + (start + probe) % SLOTS) {
                return entered;
            }
        }
        false
    }

    /// Tries to publish this reader in slot `id`: `None` if the slot is taken, else whether
    /// the reader entered (false: the bias was revoked meanwhile, and it withdrew).
    #[inline(always)]
    fn enter_slot(&self, entry: usize, id: usize) -> Option<bool> {
        let key = self.key();
        let slot = table::slot(id);
        if slot.load(Ordering::Relaxed) != 0
            || slot
                .compare_exchange(0, key, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        sc_fence();
        // Acquire (SeqCst): the reader that turned the bias on held the underlying read
        // lock, after the last writer's release; that orders us after that writer.
        if self.rbias.load(Ordering::SeqCst) == BIASED {
            held::record(entry, key, id);
            return Some(true);
        }
        self.withdraw(slot);
        Some(false)
    }

    /// A writer revoked the bias while this reader published its slot: withdraw, and wake the
    /// writer (it may be waiting for this slot).
    #[cold]
    fn withdraw(&self, slot: &AtomicUsize) {
        slot.store(0, Ordering::Release);
        self.wake_revoker();
    }

    /// A deferred reader leaves: one plain store to its own slot. If a revocation is under way
    /// it also wakes the writer; that wake-up is best effort (a Relaxed look at the bias), since
    /// the writer's sleep is a timed nap that re-checks the slots anyway.
    #[inline]
    fn leave_slot(&self, slot: &AtomicUsize) {
        // Release: the read section happens before the writer that sees the slot empty.
        slot.store(0, Ordering::Release);
        if self.rbias.load(Ordering::Relaxed) != BIASED {
            self.wake_revoker();
        }
    }

    #[cold]
    fn wake_revoker(&self) {
        // Best effort, like the rest of the revoker's wake-ups (its naps are timed): only a
        // writer that announced a nap is worth a write to the lock's line, which the revoker
        // and every reader are reading.
        if self.drain.load(Ordering::Relaxed) & DRAIN_SLEEPING == 0 {
            return;
        }
        // Changing the word makes a writer about to sleep re-check the slots; Release orders our
        // slot store before it.
        let d = self.drain.fetch_add(DRAIN_STEP, Ordering::Release);
        if d & DRAIN_SLEEPING != 0 {
            futex::wake(&self.drain, u32::MAX);
        }
    }

    /// Called with the underlying read lock held: turns the bias back on once the back-off has
    /// passed. Holding the read lock means no writer is revoking concurrently, and the next
    /// writer will see the bias (its lock acquisition follows our unlock).
    ///
    /// A PAUSED bias (left by a writer that handed the lock to another writer, see
    /// `resume_bias`) comes back on at once, unless a writer waits: no writer holds the lock
    /// now, so none is going to turn it on.
    #[inline]
    fn maybe_rebias(&self) {
        let clock_due = held::slow_read();
        match self.rbias.load(Ordering::Relaxed) {
            OFF if clock_due => self.rebias_slow(),
            PAUSED if !self.lock.writers_waiting() => {
                // Release: as in `rebias_slow`.
                let _ = self.rbias.compare_exchange(
                    PAUSED,
                    BIASED,
                    Ordering::Release,
                    Ordering::Relaxed,
                );
            }
            _ => {}
        }
    }

    #[cold]
    fn rebias_slow(&self) {
        let now = now_ns();
        // (Under loom the clock stands still: re-enable at once, to explore re-biasing.)
        // Not while a writer waits (REVOKING, or WRITERS_WAITING below): it would only have to
        // revoke again, and deferred readers, who never sleep, would keep the CPUs from the
        // threads it waits for.
        if (cfg!(loom) || now >= self.book.inhibit_until.load(Ordering::Relaxed))
            && !self.lock.writers_waiting()
        {
            self.book.enabled_at.store(now, Ordering::Relaxed);
            // Release: a reader that sees the bias on is ordered after our read lock's acquire,
            // hence after the last writer. A CAS from OFF: a waiting writer's REVOKING stays.
            let _ = self
                .rbias
                .compare_exchange(OFF, BIASED, Ordering::Release, Ordering::Relaxed);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Writers
    // -----------------------------------------------------------------------------------------

    /// Takes the write lock: the underlying write lock, then (if the bias is on) revokes it and
    /// waits for the deferred readers to leave.
    #[inline]
    pub fn lock_exclusive(&self) {
        // With the bias off (writes are frequent) this is the plain lock's write path plus one
        // load; with it on, a writer that must wait stops new deferred readers first. Before
        // that, the writer's thread rotates if it has kept its CPU too long: deferred readers
        // never wait, so a thread's writes are where it can give its CPU away (see
        // `wait::rotate_outside_wait`).
        if self.rbias.load(Ordering::Relaxed) != OFF {
            rotate_outside_wait();
        }
        let taken = self.rbias.load(Ordering::Relaxed) != OFF && self.lock.try_lock_exclusive();
        if !taken {
            self.stop_deferring();
            self.lock.lock_exclusive();
        }
        self.exclude_readers(Patience::Unbounded);
    }

    /// A timed writer that stopped deferred readers and gave up lets them back in (unless the
    /// holder of the underlying write lock has turned the bias OFF meanwhile: the CAS fails).
    #[cold]
    fn resume_deferring(&self) {
        let _ = self
            .rbias
            .compare_exchange(REVOKING, BIASED, Ordering::Release, Ordering::Relaxed);
    }

    /// A writer about to wait for the underlying lock turns the bias off early (`REVOKING`):
    /// new readers then queue on the underlying lock behind it, instead of entering through the
    /// table and keeping the CPUs from the readers it waits for. The revocation proper (and the
    /// scan) happens once it holds the underlying lock.
    #[inline]
    fn stop_deferring(&self) {
        if self.rbias.load(Ordering::Relaxed) == BIASED {
            let _ =
                self.rbias
                    .compare_exchange(BIASED, REVOKING, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Takes the write lock if no reader or writer holds it.
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        if !self.lock.try_lock_exclusive() {
            return false;
        }
        if !self.exclude_readers(Patience::Never) {
            // SAFETY: taken just above.
            unsafe { self.lock.unlock_exclusive() };
            return false;
        }
        true
    }

    /// Takes the write lock if it is free and the bias is off: a try that revokes nothing, so
    /// that its failure leaves the bias as it was (a failed [`try_lock_exclusive`] may have
    /// revoked it and turned it back on). Lockstat's quick attempt before a write that may
    /// wait.
    ///
    /// [`try_lock_exclusive`]: Self::try_lock_exclusive
    #[cfg(all(feature = "lockstat", not(loom)))]
    #[inline]
    pub(crate) fn try_lock_exclusive_unbiased(&self) -> bool {
        self.rbias.load(Ordering::Relaxed) == OFF && self.try_lock_exclusive()
    }

    /// Takes the write lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_exclusive_until(&self, deadline: &Deadline) -> bool {
        // As `lock_exclusive`, a writer that may wait rotates first.
        if self.rbias.load(Ordering::Relaxed) != OFF {
            rotate_outside_wait();
        }
        if !self.lock.try_lock_exclusive() {
            self.stop_deferring();
            if !self.lock.try_lock_exclusive_until(deadline) {
                self.resume_deferring();
                return false;
            }
        }
        if !self.exclude_readers(Patience::Until(deadline)) {
            // SAFETY: taken just above.
            unsafe { self.lock.unlock_exclusive() };
            return false;
        }
        true
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn unlock_exclusive(&self) {
        self.time_pause();
        let bias = self.rbias.load(Ordering::Relaxed);
        if bias == PAUSED || (bias == OFF && self.book.backoff.load(Ordering::Relaxed) == 0) {
            self.resume_bias();
        }
        // SAFETY: the caller holds the write lock, i.e. the underlying write lock.
        unsafe { self.lock.unlock_exclusive() }
    }

    /// The holder of the write lock, about to release it, after a revocation that paid (see
    /// `revoke`; `rbias` is PAUSED, or OFF with no back-off because this writer found the
    /// bias off already): it turns the bias back on, rather than leave that to the readers'
    /// slow path (every reader would take the underlying lock, passing its line around, until
    /// one of them looks at the clock). Its writes are done, so deferred readers may enter
    /// before the underlying lock is released; the next writer acquires after that release and
    /// sees the bias. Not while another writer waits: it would only revoke again. The bias is
    /// then left PAUSED for that writer, who needs no scan (no reader is inside through the
    /// table) and turns it back on in its turn; readers keep waiting for it by reading `rbias`,
    /// and a reader that gets the underlying read lock first turns it on (`maybe_rebias`).
    /// Plain stores: while we hold the write lock nobody else changes an OFF or PAUSED bias.
    #[inline]
    fn resume_bias(&self) {
        if self.lock.writers_waiting() {
            self.rbias.store(PAUSED, Ordering::Relaxed);
            return;
        }
        let next = self
            .book
            .revocations
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        // Release: this critical section happens before every reader that sees the bias.
        self.rbias.store(BIASED, Ordering::Release);
        if is_timed(next) {
            // The next revocation is timed: it needs to know when the bias came on. (Read
            // after the bias is on, so that waiting readers need not wait for the clock; the
            // next writer acquires after our unlock, so it sees this store.)
            self.book.enabled_at.store(now_ns(), Ordering::Relaxed);
        }
    }

    /// Called by the holder of the underlying write lock: revokes the bias if it is on, and
    /// waits for the deferred readers to leave, as `patience` allows. False if it ran out first
    /// (the bias is then back on).
    #[inline]
    fn exclude_readers(&self, patience: Patience<'_>) -> bool {
        if self.bias_to_revoke() {
            self.revoke(patience)
        } else {
            // Restart the count of this thread's reads between two writes (see `bias_pays`).
            held::take_reads();
            true
        }
    }

    /// Called by the holder of the underlying write lock: whether the bias is on (or being
    /// revoked early) and so must be revoked before the writer may proceed. A writer that finds
    /// it PAUSED (handed over by the previous writer) has nothing to revoke.
    #[inline]
    fn bias_to_revoke(&self) -> bool {
        matches!(self.rbias.load(Ordering::Relaxed), BIASED | REVOKING)
    }

    /// The holder of the write lock gives up writing without unlocking (a downgrade): a
    /// PAUSED bias becomes OFF, so that readers stop waiting for it and the slow-path readers
    /// turn it back on after the back-off, as usual. Plain store: see `resume_bias`.
    #[inline]
    fn end_pause(&self) {
        self.time_pause();
        if self.rbias.load(Ordering::Relaxed) == PAUSED {
            self.rbias.store(OFF, Ordering::Relaxed);
        }
    }

    /// The holder of the write lock is about to turn the bias back on, or leave it off: if its
    /// revocation was timed, averages how long the bias was off for it (see `bias_pays`). One
    /// sample moves the average by at most its own size plus 1 us, as for `cost_ns`.
    #[inline]
    fn time_pause(&self) {
        if cfg!(loom) {
            // The clock stands still under loom; the verdict there alternates anyway.
            return;
        }
        let start = self.book.pause_start.load(Ordering::Relaxed);
        if start != 0 {
            self.book.pause_start.store(0, Ordering::Relaxed);
            let lasted = now_ns().saturating_sub(start);
            let avg = u64::from(self.book.pause_ns.load(Ordering::Relaxed));
            ewma(&self.book.pause_ns, lasted.min(avg * 8 + 1000));
        }
    }

    /// Turns the write lock into a read lock (on the underlying lock) atomically.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn downgrade(&self) {
        self.end_pause();
        // SAFETY: the caller holds the underlying write lock. The read lock it becomes is not a
        // deferred one, so `unlock_shared` releases it on the underlying lock.
        unsafe { self.lock.downgrade() }
    }

    // -----------------------------------------------------------------------------------------
    // Upgradable readers (on the underlying lock: they exclude writers, not deferred readers)
    // -----------------------------------------------------------------------------------------

    /// Takes an upgradable read lock.
    #[inline]
    pub fn lock_upgradable(&self) {
        self.lock.lock_upgradable();
    }

    /// Takes an upgradable read lock if that needs no waiting.
    #[inline]
    pub fn try_lock_upgradable(&self) -> bool {
        self.lock.try_lock_upgradable()
    }

    /// Takes an upgradable read lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_upgradable_until(&self, deadline: &Deadline) -> bool {
        self.lock.try_lock_upgradable_until(deadline)
    }

    /// Releases an upgradable read lock.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    #[inline]
    pub unsafe fn unlock_upgradable(&self) {
        // SAFETY: forwarded contract.
        unsafe { self.lock.unlock_upgradable() }
    }

    /// Upgrades to the write lock: waits for the underlying readers, then revokes the bias and
    /// waits for the deferred readers.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    #[inline]
    pub unsafe fn upgrade(&self) {
        // SAFETY: forwarded contract.
        let upgraded = unsafe { self.try_upgrade_inner(Patience::Unbounded) };
        // Without a deadline nothing ends the wait early: the write lock is held now.
        debug_assert!(upgraded, "an upgrade without a deadline always completes");
    }

    /// Upgrades if no other reader holds the lock, without waiting.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    #[inline]
    pub unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.try_upgrade_inner(Patience::Never) }
    }

    /// Upgrades, giving up at `deadline` (the upgradable lock is kept then).
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    #[inline]
    pub unsafe fn try_upgrade_until(&self, deadline: &Deadline) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.try_upgrade_inner(Patience::Until(deadline)) }
    }

    /// Upgrades, waiting as `patience` allows; false if it ran out first (the caller keeps its
    /// upgradable lock then).
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    unsafe fn try_upgrade_inner(&self, patience: Patience<'_>) -> bool {
        let upgraded = match patience {
            // SAFETY (all three): the caller holds the upgradable lock (this function's
            // contract).
            Patience::Never => unsafe { self.lock.try_upgrade() },
            Patience::Until(deadline) => unsafe { self.lock.try_upgrade_until(deadline) },
            // As `lock_exclusive`, an upgrader that must wait stops new deferred readers first.
            Patience::Unbounded => {
                if !unsafe { self.lock.try_upgrade() } {
                    self.stop_deferring();
                    unsafe { self.lock.upgrade() };
                }
                true
            }
        };
        if !upgraded {
            return false;
        }
        if !self.exclude_readers(patience) {
            // SAFETY: upgraded just above; going back keeps the caller's upgradable lock.
            unsafe { self.lock.downgrade_to_upgradable() };
            return false;
        }
        true
    }

    /// Turns an upgradable read lock into a read lock.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock.
    #[inline]
    pub unsafe fn downgrade_upgradable(&self) {
        // SAFETY: forwarded contract; the resulting read lock is on the underlying lock.
        unsafe { self.lock.downgrade_upgradable() }
    }

    /// Turns the write lock into an upgradable read lock.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn downgrade_to_upgradable(&self) {
        self.end_pause();
        // SAFETY: forwarded contract.
        unsafe { self.lock.downgrade_to_upgradable() }
    }

    // -----------------------------------------------------------------------------------------
    // Queries
    // -----------------------------------------------------------------------------------------

    /// Whether the read bias is currently on (a racy snapshot).
    #[inline]
    pub fn is_biased(&self) -> bool {
        self.rbias.load(Ordering::Relaxed) == BIASED
    }

    /// Whether the write lock is held (a racy snapshot).
    #[inline]
    pub fn is_locked_exclusive(&self) -> bool {
        self.lock.is_locked_exclusive()
    }

    /// Whether any lock is held (a racy snapshot; scans the readers table while biased).
    pub fn is_locked(&self) -> bool {
        if self.lock.is_locked() {
            return true;
        }
        let key = self.key();
        (0..table::rows() * SLOTS).any(|id| table::slot(id).load(Ordering::Relaxed) == key)
    }

    /// Revokes the bias (the caller holds the underlying write lock) and waits until no deferred
    /// reader remains, as `patience` allows. If it runs out first, restores the bias and returns
    /// false (the deferred readers are still inside).
    #[cold]
    fn revoke(&self, patience: Patience<'_>) -> bool {
        let key = self.key();
        let n = self
            .book
            .revocations
            .load(Ordering::Relaxed)
            .wrapping_add(1);
        self.book.revocations.store(n, Ordering::Relaxed);
        // Reading the clock costs about as much as the rest of a revocation: time one in
        // TIME_EVERY (the writer that turned the bias on before it read the clock too), and
        // every one while the bias is backing off (revocations are rare then, and the average
        // must be able to recover at once when writes become rare again).
        let timed = is_timed(n) || self.book.backoff.load(Ordering::Relaxed) != 0;
        let start = if timed { now_ns() } else { 0 };
        // SeqCst store then SeqCst loads: the writer's side of the Dekker pair. PAUSED if the
        // bias has been paying (no back-off): readers then wait for this writer to turn it back
        // on; OFF if it has not (they queue on the underlying lock).
        let pausing = self.book.backoff.load(Ordering::Relaxed) == 0;
        self.rbias
            .store(if pausing { PAUSED } else { OFF }, Ordering::SeqCst);
        sc_fence();
        let mut drained = true;
        let mut found = false;
        // Time spent waiting for readers that were inside: any rwlock's writer waits for those,
        // so it is not a cost of the bias (and a preempted reader would make it look huge).
        let mut waited = 0;
        'scan: for id in 0..table::rows() * SLOTS {
            let slot = table::slot(id);
            if slot.load(Ordering::SeqCst) == key {
                found = true;
                let t0 = if timed { now_ns() } else { 0 };
                if !self.wait_drained(slot, key, patience) {
                    drained = false;
                    break 'scan;
                }
                if timed {
                    waited += now_ns().saturating_sub(t0);
                }
            }
        }
        if self.drain.load(Ordering::Relaxed) & DRAIN_SLEEPING != 0 {
            self.drain.fetch_and(!DRAIN_SLEEPING, Ordering::Relaxed);
        }
        if !drained {
            // We still hold the underlying write lock: nobody else can revoke or re-enable; the
            // readers still inside keep the bias's invariant valid once it is back on.
            self.rbias.store(BIASED, Ordering::Release);
            return false;
        }
        if timed && !cfg!(loom) {
            // The pause lasts until this writer unlocks (`time_pause`).
            self.book.pause_start.store(start.max(1), Ordering::Relaxed);
        }
        // Did the bias pay (see `bias_pays`)? If it did, the writer turns it back on as it
        // unlocks. If it did not, the bias stays off for a back-off window that doubles with
        // each such revocation, so it fades out as writes get frequent.
        let mut end = 0;
        if timed {
            end = now_ns();
            let cost = end.saturating_sub(start).saturating_sub(waited).max(1);
            // One sample moves the average cost by at most its own size plus 125 ns: a
            // revocation whose writer was preempted (or whose CPU the hypervisor took) must not
            // switch the bias off by itself.
            let avg = u64::from(self.book.cost_ns.load(Ordering::Relaxed));
            ewma(&self.book.cost_ns, cost.min(avg * 8 + 1000));
            let lived = start.saturating_sub(self.book.enabled_at.load(Ordering::Relaxed));
            // At most one half per sample, for the same reason.
            let share = (cost << SHARE_SHIFT) / cost.saturating_add(lived);
            ewma(&self.book.revoke_share, share.min(MAX_SHARE_SAMPLE));
        }
        let unpaid = !self.bias_pays(found, held::take_reads());
        let previous = self.book.backoff.load(Ordering::Relaxed);
        let backoff = if unpaid {
            (previous + 1).min(MAX_BACKOFF)
        } else {
            0
        };
        if backoff != previous {
            self.book.backoff.store(backoff, Ordering::Relaxed);
        }
        if pausing && unpaid {
            // Readers waiting for the bias stop, and queue on the underlying lock.
            self.rbias.store(OFF, Ordering::Relaxed);
        }

        if backoff != 0 {
            let cost = u64::from(self.book.cost_ns.load(Ordering::Relaxed).max(1));
            if end == 0 {
                end = now_ns();
            }
            self.book.inhibit_until.store(
                end.saturating_add(cost.saturating_mul(INHIBIT_FACTOR) << backoff),
                Ordering::Relaxed,
            );
        }
        true
    }

    /// Whether the bias pays for its revocations (see `payoff`); called by each revoking
    /// writer, with whether it found a deferred reader inside and how many reads (of biased
    /// locks, by this thread) it did since its last write. Moves the averages by this
    /// revocation's samples first.
    fn bias_pays(&self, found: bool, reads: u32) -> bool {
        if cfg!(loom) {
            // The verdict is a heuristic; either must be safe. Alternate, so that models with
            // two revocations explore both (PAUSED and handed over, and OFF with a back-off).
            return self.book.revocations.load(Ordering::Relaxed) % 2 == 1;
        }
        let book = &self.book;
        let reads_per_write = if reads > 0 {
            ewma(
                &book.reads_per_write,
                u64::from(reads.min(MAX_READS_SAMPLE)) << READS_SHIFT,
            )
        } else {
            u64::from(book.reads_per_write.load(Ordering::Relaxed))
        };
        payoff::pays(&payoff::Averages {
            reader_found: ewma(&book.reader_found, u64::from(found) << SHARE_SHIFT),
            reading_writers: ewma(&book.reading_writers, u64::from(reads > 0) << SHARE_SHIFT),
            reads_per_write,
            cost_ns: u64::from(book.cost_ns.load(Ordering::Relaxed)),
            pause_ns: u64::from(book.pause_ns.load(Ordering::Relaxed)),
            revoke_share: u64::from(book.revoke_share.load(Ordering::Relaxed)),
        })
    }

    /// Waits until `slot` no longer names this lock: spins, then naps on `drain`. Readers that
    /// leave or withdraw during a revocation bump `drain` and wake the writer if it announced a
    /// nap, but a leaving reader only looks at the bias with a Relaxed load (its unlock stays
    /// two plain memory operations), so it may miss the revocation: the nap is therefore timed
    /// (50 us, doubling up to 1 ms) and the slots are re-checked after it. Correctness never
    /// depends on a wake-up, only the writer's latency does. A writer with no patience
    /// ([`Patience::Never`]) only looks. Returns false if `patience` ran out first.
    fn wait_drained(&self, slot: &AtomicUsize, key: usize, patience: Patience<'_>) -> bool {
        let deadline = match patience {
            Patience::Unbounded => None,
            Patience::Until(d) => Some(d),
            Patience::Never => return slot.load(Ordering::Acquire) != key,
        };
        // Deferred readers leave after a read section: spin about as long as that has been
        // paying on this lock, then nap.
        let mut w = Waiter::polling(&self.lock.spin, deadline, Subject::Drain(self.stats_key()));
        let mut nap_ns = NAP_MIN_NS;
        loop {
            if slot.load(Ordering::Acquire) != key {
                return w.acquired(false);
            }
            if w.timed_out() {
                return w.gave_up();
            }
            if w.spin(true) {
                continue;
            }
            let d = self.drain.fetch_or(DRAIN_SLEEPING, Ordering::Acquire) | DRAIN_SLEEPING;
            if slot.load(Ordering::Acquire) != key {
                return w.acquired(false);
            }
            w.nap(
                &self.drain,
                d,
                &Deadline::after(core::time::Duration::from_nanos(nap_ns)),
            );
            nap_ns = (nap_ns * 2).min(NAP_MAX_NS);
            // Under loom a timed wait returns at once: let the reader run.
            #[cfg(loom)]
            loom::thread::yield_now();
        }
    }
}

/// Whether the `n`th revocation is timed (one in [`TIME_EVERY`]).
#[inline]
#[cfg_attr(loom, allow(clippy::modulo_one))] // under loom every revocation is timed
fn is_timed(n: u32) -> bool {
    n % TIME_EVERY == 0
}

/// Under loom, SeqCst accesses are modelled as AcqRel only; a SeqCst fence restores the
/// store-load order that the Dekker pairs above rely on (and that SeqCst accesses give in the
/// real build).
#[inline(always)]
fn sc_fence() {
    #[cfg(loom)]
    loom::sync::atomic::fence(Ordering::SeqCst);
}

impl Default for RawBiasedRwLock {
    fn default() -> RawBiasedRwLock {
        RawBiasedRwLock::new()
    }
}

impl core::fmt::Debug for RawBiasedRwLock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawBiasedRwLock")
            .field("biased", &self.is_biased())
            .field("backoff", &self.book.backoff.load(Ordering::Relaxed))
            .field("lock", &*self.lock)
            .finish()
    }
}
