//! The protocol of [`RawRwLock`]: its state word, its fast paths and its contended paths.
//!
//! # Design
//!
//! Four 32-bit words: the futex **state word**, a futex **writer sequence** that writers sleep
//! on, the lock's [`SpinEstimate`], and a count of the writers sleeping on the sequence (which
//! only spares wakers a system call when there is nobody to wake). Everything about who holds
//! the lock and who waits is in the state word, so every decision is one atomic operation on it:
//!
//! - an uncontended `read` is a load and one `fetch_add` (`count += 1`, then a look at what it
//!   found; a reader that may not enter takes itself out again) and its unlock one `fetch_sub`:
//!   the same two atomic operations as a [`Mutex`](crate::Mutex) lock + unlock, and neither
//!   fails when other readers come and go, as a compare-exchange would;
//! - an uncontended `write` is one compare-exchange (`0 -> WRITER`) and its unlock another.
//!
//! Only on conflict does a thread go to the wait layer: it spins (calibrated, learned budget,
//! like the mutex) while nobody sleeps, then sleeps on a futex. Readers and upgradable readers
//! sleep on the state word itself (so a change of the word can never be missed) and are woken all
//! at once; writers sleep on the writer sequence and are woken one at a time, so that the last
//! reader leaving does not wake a herd of readers to hand the lock to one writer.
//!
//! **Writers are not starved by readers**: a writer kept out by readers sets `DRAIN` as it goes
//! to sleep, and from then on new readers stay out; the readers inside drain and the last one
//! wakes a writer. A writer kept out by another *writer* sets only `WRITERS_WAITING` (wake one of
//! us on release): readers may still enter whenever no writer holds the lock, so a reader does
//! not have to sleep through a stream of writers that only queue behind each other. (When every
//! waiting writer kept readers out, each read of one reader among many looping writers slept
//! until a writer handed it a turn; `scalelock bench --workload reader-tail` measures that
//! cell.)
//! **Readers are not starved by writers**: a writer that unlocks while readers sleep gives them
//! the next turn instead of the next writer: it advances the 4-bit `TURN` counter, sets
//! `READ_TURN` (writers may not take the lock) and wakes them all. A reader that parked before the
//! counter moved is *entitled*: it enters even past `DRAIN` (only a writer *holding* the lock
//! keeps it out), and the reader that leaves last ends the turn and wakes a writer. Readers that
//! merely arrive during the turn are not entitled and queue behind a draining writer, so a turn
//! admits a bounded set of readers (each acquisition is entitled at most once per write phase):
//! every write phase is followed by a read phase with the readers that were waiting, and the
//! other way round (phase-fair). A writer that arrives during a read turn spins through it
//! (within its learned budget) rather than sleep at once: the turn's readers leave soon, and
//! sleeping set off a convoy of sleeps between one reader and one writer (see `wait_writer`).
//!
//! **A writer kept out by a writer yields before it sleeps.** Once it finds another writer
//! holding the lock, a waiting writer gives its CPU away a few times (the wait layer's
//! yields, see `Waiter::yield_from_now`; where no other thread wants the CPU a yield returns
//! at once) before it sets
//! `WRITERS_WAITING` and sleeps. A sleeping writer joins the writers woken one at a time,
//! each of which may wait milliseconds for a CPU on a loaded machine while `DRAIN` keeps
//! readers out behind it; a yielding one runs again within a scheduler's turn and takes the
//! lock when its holder has left. A yield changes nothing in the state word. Readers' and
//! writers' waits rotate in rounds (see `Waiter::rotating_in_rounds`): a thread that has kept
//! its CPU for longer than its stretch begins its wait with a yield, and the stretch shrinks
//! where the threads per CPU make rounds long, since no hand-off bounds a wait here.
//!
//! **One woken writer at a time.** A writer's release that wakes a writer marks it
//! `WRITER_WOKEN`; until that writer runs and takes the lock (or finds it held and sleeps again),
//! releases wake nobody. Without the mark, every release while writers sleep woke one more, so
//! with more writers than cores *all* of them ended up runnable, and any thread preempted by a
//! wake-up waited for a CPU behind all of them (a reader's unlock that ended its turn woke a
//! writer that then preempted it). Only a writer that a wake-up woke clears the mark (see
//! `futex::wait_outcome`): a writer whose wait returned because the sequence had moved is
//! not the one the mark stands for; while such returns cleared it too, each let one more writer
//! be woken, and again nearly all writers were runnable. A reader that ends a read turn while a
//! woken writer is on its way wakes nobody either, but a reader's wake-up does not set the
//! mark: a writer woken after a read turn that has to wait for a CPU would keep every other
//! sleeper waiting too (`read-write` at many threads lost against `std` when it did).
//!
//! **Recursive readers.** `read_recursive` enters whenever no writer *holds* the lock, even when
//! writers wait, so a thread that already reads can read again without deadlocking behind a
//! waiting writer (a thread that reads twice with plain `read` while a writer drains would wait
//! for the writer, which waits for the thread: a deadlock). Debug builds catch that mistake:
//! every thread keeps a small table of the read locks it holds, and a plain `read` taken while
//! writers wait by a thread that already reads the same lock panics and names `read_recursive` as
//! the fix, even if this time no writer drains yet (the deadlock needs only that one does). Release
//! builds keep no table and pay nothing.
//!
//! # State word
//!
//! ```text
//!   31                 11    10      9    8      5    4        3           2          1         0
//!  +--------------------+-----+--------+---------+--------+-----------+----------+----------+------+
//!  | READERS: read locks|DRAIN| WRITER_|  TURN   | WRITER | UPGRADABLE| READ_TURN| WRITERS_ |PARKED|
//!  | held (21 bits; an  |     | WOKEN  | (4 bits)|        |           |          | WAITING  |      |
//!  | upgradable counts; |     |        |         |        |           |          |          |      |
//!  | so does a reader   |     |        |         |        |           |          |          |      |
//!  | backing out)       |     |        |         |        |           |          |          |      |
//!  +--------------------+-----+--------+---------+--------+-----------+----------+----------+------+
//!
//!  PARKED           readers or upgradable readers may sleep on the state word: whoever makes the
//!                   lock available to them clears it and wakes them all
//!  WRITERS_WAITING  writers (or an upgrader) sleep on the writer sequence: the thread that frees
//!                   the lock wakes one (and clears the bit only if no writer was asleep)
//!  DRAIN            a sleeping writer (or upgrader) waits for the readers to leave: new plain
//!                   and upgradable readers stay out; the next writer to take the lock clears it
//!  READ_TURN        a write unlock handed the lock to the readers it woke: no writer may take it
//!                   until the reader count drops to zero
//!  UPGRADABLE       an upgradable reader holds the lock (it is also counted in READERS)
//!  WRITER           a writer holds the lock (READERS then counts only readers backing out)
//!  TURN             advanced (wrapping) whenever a writer hands the lock to parked readers
//!  WRITER_WOKEN     a release woke one writer, which has not yet taken the lock or gone back to
//!                   sleep: releases leave the lock to it and wake nobody; a writer back from
//!                   sleep clears it when it takes the lock, sleeps again or gives up
//!
//!  who                        may take the lock when
//!  read                       !WRITER && !DRAIN  (and READERS below READERS_CAP)
//!  read, entitled             !WRITER        (parked before TURN last moved: its turn)
//!  read_recursive             !WRITER
//!  upgradable_read            as read, and !UPGRADABLE
//!  write                      !WRITER && !UPGRADABLE && READERS == 0 && !READ_TURN
//!  upgrade (holds UPGRADABLE) READERS == 1
//!
//!  transitions (fast paths are single atomic operations on the word)
//!  s --------------------------> s + 1 reader            read, read_recursive (fetch_add); if
//!                                                        s keeps it out (WRITER, or DRAIN for
//!                                                        a plain read), back out at once (as
//!                                                        an unlock) and wait; others: CAS
//!  s --------------------------> s - 1 reader            read unlock (fetch_sub); if that was
//!                                                        the last reader and someone waits, the
//!                                                        leaver runs `wake_after_release`
//!  TURN ------------------------> TURN|WRITER           write (CAS)
//!  n readers|f -----------------> n readers|f|          a writer kept out by readers sleeps
//!                                WRITERS_WAITING|DRAIN  (by a writer: WRITERS_WAITING only);
//!                                                       one that never sleeps (policy
//!                                                       `always`) spins after setting them
//!  DRAIN|f ---------------------> f|WRITER              any writer taking the lock clears it
//!  TURN|WRITER -----------------> TURN                   write unlock (CAS), else:
//!  WRITER|PARKED|f ------------> TURN+1|READ_TURN|f,     write unlock with readers asleep
//!                                wake all readers        (their turn; f = WRITERS_WAITING)
//!  WRITER|WRITERS_WAITING -----> WRITERS_WAITING|        write unlock with only writers asleep
//!                                WRITER_WOKEN,           (the bits stay, DRAIN too;
//!                                wake 1 writer           no wake-up if WRITER_WOKEN was set)
//!  WRITER_WOKEN|f --------------> f|WRITER               the woken writer takes the lock, or
//!  WRITER_WOKEN|f --------------> f|WRITERS_WAITING      finds it held and sleeps again
//!  WRITER ---------------------> 1 reader (+UPGRADABLE)  downgrade; if readers are parked,
//!                                                        TURN+1 and wake them
//!  1 reader|UPGRADABLE --------> WRITER                  upgrade
//! ```
//!
//! `wake_after_release` runs when a release may have left the lock free with sleepers: if any
//! holder remains it does nothing (that holder's release will); otherwise it ends a `READ_TURN`;
//! if `WRITER_WOKEN` is set it stops there (the woken writer will take the lock, or sleep again
//! only after seeing it held, and then that holder's release wakes the next); else it wakes one
//! writer if `WRITERS_WAITING` (a writer's release sets `WRITER_WOKEN` first, and clears it
//! again if the wake-up found nobody, then wakes once more without it: releases that left their
//! wake-up to it meanwhile may have let writers fall asleep). It leaves `WRITERS_WAITING` and
//! `DRAIN` set: others may still sleep, and readers that `DRAIN` keeps out must not barge in
//! before the woken writer gets a CPU (under oversubscription that can take milliseconds). Only
//! if no writer was asleep does it clear both bits and wake the parked readers, and only if the
//! word has not changed since it found none asleep (a writer that slept after that wake-up saw
//! the lock held in between; a releaser preempted at this point once cleared the bit long after,
//! with writers asleep that nobody would wake again). A writer that has slept keeps
//! `WRITERS_WAITING` set when it takes the lock (others may still sleep), so its unlock passes
//! the wake-up on; a timed writer that gives up clears `WRITERS_WAITING` and `DRAIN` and wakes
//! every sleeper, which re-arm what they still need. That is what the loom models in
//! `tests/loom_rwlock.rs` check: no lost wake-up, no stranded sleeper (the preempted-releaser case
//! takes more threads than loom can explore; `tests/rwlock.rs` reproduces it within seconds when
//! broken). That a writer kept out by readers gets in at all (`DRAIN`) is checked by the stress
//! tests: loom cannot see starvation.

use crate::sync::{fence, AtomicU32, Ordering};
use crate::wait::{futex, Deadline, SpinEstimate, Subject, Waiter};

const PARKED: u32 = 1;
const WRITERS_WAITING: u32 = 1 << 1;
const READ_TURN: u32 = 1 << 2;
const UPGRADABLE: u32 = 1 << 3;
const WRITER: u32 = 1 << 4;
const TURN_ONE: u32 = 1 << 5;
const TURN_MASK: u32 = 0xf << 5;
const WRITER_WOKEN: u32 = 1 << 9;
const DRAIN: u32 = 1 << 10;
const ONE_READER: u32 = 1 << 11;
const READERS_MASK: u32 = !(ONE_READER - 1);

/// The bits that send a plain `read` to its slow path: a writer holds the lock or drains the
/// readers, and, in debug builds, writers wait (the slow path checks for a nested read first).
const READ_SLOW: u32 = if cfg!(all(debug_assertions, not(loom))) {
    WRITER | DRAIN | WRITERS_WAITING
} else {
    WRITER | DRAIN
};

/// How long a writer that only readers keep out spins before it sleeps and sets `DRAIN`, even
/// while other writers sleep (when it would not spin for a writer): about a short read section.
/// Without it, under a stream of writers, every writer that arrived while a reader read went to
/// sleep with `DRAIN` set, so the reader's next read waited for a read turn and its unlock woke
/// that writer (and lost its CPU to it). Longer grace spins cost `read-write` throughput (the
/// bench's `reader-tail` and `read-write` workloads measure both sides).
const DRAIN_SPIN_NS: u32 = 250;

/// The reader count of a state word.
#[inline]
fn readers(s: u32) -> u32 {
    s >> 11
}

/// The turn counter of a state word.
#[inline]
fn turn(s: u32) -> u32 {
    s & TURN_MASK
}

/// `s` with its turn counter advanced (wrapping within its four bits).
#[inline]
fn next_turn(s: u32) -> u32 {
    (s & !TURN_MASK) | (s.wrapping_add(TURN_ONE) & TURN_MASK)
}

/// The most read locks the lock admits at once: half what the count can hold. A reader's fast
/// path adds itself to the count before it looks (see `count_in`), and backs out if the count
/// was at the cap: the half above the cap holds those passing readers, so the count cannot wrap
/// around unless 2^20 threads are between their add and their back-out at the same moment.
const READERS_CAP: u32 = 1 << 20;

/// True if the count has reached its cap (only reachable with leaked guards): one more reader
/// must wait for one to leave.
#[inline]
fn readers_full(s: u32) -> bool {
    readers(s) >= READERS_CAP
}

/// The raw reader-writer lock: 16 bytes, `const`-constructible, implementing every lock_api
/// rwlock trait (`RawRwLock`, `RawRwLockDowngrade`, `RawRwLockTimed`, `RawRwLockRecursive`,
/// `RawRwLockRecursiveTimed`, `RawRwLockUpgrade`, `RawRwLockUpgradeDowngrade`,
/// `RawRwLockUpgradeTimed`, `RawRwLockFair`, `RawRwLockUpgradeFair`).
///
/// Use it through [`RwLock`](crate::RwLock), or directly where a guard does not fit.
///
/// ```
/// use lock_api::RawRwLock as _;
/// use scalelock::RawRwLock;
///
/// static RAW: RawRwLock = RawRwLock::INIT;
/// RAW.lock_shared();
/// RAW.lock_shared();
/// assert!(!RAW.try_lock_exclusive());
/// // SAFETY: two read locks taken just above by this thread.
/// unsafe {
///     RAW.unlock_shared();
///     RAW.unlock_shared();
/// }
/// assert!(RAW.try_lock_exclusive());
/// // SAFETY: locked exclusively just above.
/// unsafe { RAW.unlock_exclusive() };
/// assert_eq!(std::mem::size_of::<RawRwLock>(), 16);
/// ```
pub struct RawRwLock {
    state: AtomicU32,
    /// Bumped (then woken) whenever a writer is to be woken; writers sleep on it.
    writer_seq: AtomicU32,
    spin: SpinEstimate,
    /// Writers (and upgraders) from just before their last look at the state word until their
    /// sleep on `writer_seq` ends (a wake-up uncounts those it wakes): a waker that finds none
    /// skips the wake-up system call (see `wake_writers`).
    writer_sleepers: AtomicU32,
}

impl RawRwLock {
    /// An unlocked rwlock.
    #[cfg(not(loom))]
    pub const fn new() -> RawRwLock {
        RawRwLock {
            state: AtomicU32::new(0),
            writer_seq: AtomicU32::new(0),
            spin: SpinEstimate::new(),
            writer_sleepers: AtomicU32::new(0),
        }
    }

    /// An unlocked rwlock.
    #[cfg(loom)]
    pub fn new() -> RawRwLock {
        RawRwLock {
            state: AtomicU32::new(0),
            writer_seq: AtomicU32::new(0),
            spin: SpinEstimate::new(),
            writer_sleepers: AtomicU32::new(0),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Shared (read) locks
    // -----------------------------------------------------------------------------------------

    /// Takes a read lock, waiting while a writer holds the lock or waits for it.
    ///
    /// In debug builds, panics if this thread already holds a read lock on this lock and a writer
    /// waits: that would deadlock; use [`lock_shared_recursive`](Self::lock_shared_recursive).
    #[inline]
    pub fn lock_shared(&self) {
        if !self.count_in(READ_SLOW) {
            self.wait_parked(None, read_admits, true);
        }
        super::held::note_acquire(self);
    }

    /// Takes a read lock if that needs no waiting.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        self.acquire_shared(read_admits, Wait::No, true)
    }

    /// Takes a read lock, giving up at `deadline`; returns whether it was taken.
    #[inline]
    pub fn try_lock_shared_until(&self, deadline: &Deadline) -> bool {
        self.acquire_shared(read_admits, Wait::Until(deadline), true)
    }

    /// Takes a read lock whenever no writer *holds* the lock, even while writers wait: a thread
    /// that already reads may always read again.
    #[inline]
    pub fn lock_shared_recursive(&self) {
        if !self.count_in(WRITER) {
            self.wait_parked(None, recursive_admits, false);
        }
        super::held::note_acquire(self);
    }

    /// Takes a recursive read lock if no writer holds the lock.
    #[inline]
    pub fn try_lock_shared_recursive(&self) -> bool {
        self.acquire_shared(recursive_admits, Wait::No, false)
    }

    /// Takes a recursive read lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_shared_recursive_until(&self, deadline: &Deadline) -> bool {
        self.acquire_shared(recursive_admits, Wait::Until(deadline), false)
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The calling context must hold a read lock (not an upgradable one) on this lock.
    #[inline]
    pub unsafe fn unlock_shared(&self) {
        super::held::note_release(self);
        // Release: the reader's accesses happen before the next writer's (which acquires the word).
        let prev = self.state.fetch_sub(ONE_READER, Ordering::Release);
        if prev & (PARKED | WRITERS_WAITING | READ_TURN) != 0 {
            self.after_reader_left(prev - ONE_READER, readers_full(prev));
        }
    }

    // -----------------------------------------------------------------------------------------
    // Exclusive (write) locks
    // -----------------------------------------------------------------------------------------

    /// Takes the write lock, waiting for readers and writers to leave.
    #[inline]
    pub fn lock_exclusive(&self) {
        let s = self.state.load(Ordering::Relaxed);
        if s & !TURN_MASK != 0
            || self
                .state
                .compare_exchange_weak(s, s | WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            self.wait_writer(None, write_takes);
        }
    }

    /// Takes the write lock if it is free.
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        self.try_take(|s| write_takes(s, false))
    }

    /// Takes the write lock, giving up at `deadline`; returns whether it was taken.
    #[inline]
    pub fn try_lock_exclusive_until(&self, deadline: &Deadline) -> bool {
        self.try_take(|s| write_takes(s, false)) || self.wait_writer(Some(deadline), write_takes)
    }

    /// Releases the write lock. Readers that were waiting get the next turn; otherwise one
    /// waiting writer is woken.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn unlock_exclusive(&self) {
        let s = self.state.load(Ordering::Relaxed);
        if s & !TURN_MASK != WRITER
            || self
                .state
                .compare_exchange(s, s & TURN_MASK, Ordering::Release, Ordering::Relaxed)
                .is_err()
        {
            self.unlock_exclusive_slow();
        }
    }

    /// Turns the write lock into a read lock without letting a writer in between; wakes the
    /// readers that were waiting.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn downgrade(&self) {
        self.downgrade_to(ONE_READER);
        super::held::note_acquire(self);
    }

    // -----------------------------------------------------------------------------------------
    // Upgradable read locks
    // -----------------------------------------------------------------------------------------

    /// Takes an upgradable read lock: shared with readers, exclusive with writers and other
    /// upgradable readers.
    #[inline]
    pub fn lock_upgradable(&self) {
        self.acquire_shared(upgradable_admits, Wait::Forever, true);
    }

    /// Takes an upgradable read lock if that needs no waiting.
    #[inline]
    pub fn try_lock_upgradable(&self) -> bool {
        self.acquire_shared(upgradable_admits, Wait::No, true)
    }

    /// Takes an upgradable read lock, giving up at `deadline`.
    #[inline]
    pub fn try_lock_upgradable_until(&self, deadline: &Deadline) -> bool {
        self.acquire_shared(upgradable_admits, Wait::Until(deadline), true)
    }

    /// Releases an upgradable read lock.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock on this lock.
    #[inline]
    pub unsafe fn unlock_upgradable(&self) {
        super::held::note_release(self);
        let prev = self
            .state
            .fetch_sub(ONE_READER + UPGRADABLE, Ordering::Release);
        if prev & (PARKED | WRITERS_WAITING | READ_TURN) != 0 {
            let now = prev - ONE_READER - UPGRADABLE;
            if readers(now) == 0 {
                self.wake_after_release(false);
            } else if now & PARKED != 0 {
                // Other readers remain; upgradable readers may be parked waiting for us.
                self.wake_parked();
            }
        }
    }

    /// Turns an upgradable read lock into the write lock, waiting for the other readers to
    /// leave (new readers stay out meanwhile).
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock on this lock.
    #[inline]
    pub unsafe fn upgrade(&self) {
        super::held::note_release(self);
        if !self.try_take(upgrade_takes) {
            self.wait_writer(None, |s, slept| {
                upgrade_takes(s).map(|n| keep_waiting(n, slept))
            });
        }
    }

    /// Upgrades if no other reader holds the lock, without waiting.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock on this lock.
    #[inline]
    pub unsafe fn try_upgrade(&self) -> bool {
        let ok = self.try_take(upgrade_takes);
        if ok {
            super::held::note_release(self);
        }
        ok
    }

    /// Upgrades, giving up at `deadline` (the upgradable read lock is kept then).
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock on this lock.
    #[inline]
    pub unsafe fn try_upgrade_until(&self, deadline: &Deadline) -> bool {
        let ok = self.try_take(upgrade_takes)
            || self.wait_writer(Some(deadline), |s, slept| {
                upgrade_takes(s).map(|n| keep_waiting(n, slept))
            });
        if ok {
            super::held::note_release(self);
        }
        ok
    }

    /// Turns an upgradable read lock into a plain read lock.
    ///
    /// # Safety
    /// The calling context must hold an upgradable read lock on this lock.
    #[inline]
    pub unsafe fn downgrade_upgradable(&self) {
        let prev = self.state.fetch_sub(UPGRADABLE, Ordering::Release);
        if prev & PARKED != 0 {
            // An upgradable reader may be parked waiting for UPGRADABLE to clear.
            self.wake_parked();
        }
    }

    /// Turns the write lock into an upgradable read lock; wakes the readers that were waiting.
    ///
    /// # Safety
    /// The calling context must hold the write lock.
    #[inline]
    pub unsafe fn downgrade_to_upgradable(&self) {
        self.downgrade_to(ONE_READER + UPGRADABLE);
        super::held::note_acquire(self);
    }

    /// Replaces WRITER with `held` (one reader, perhaps upgradable) in one step. Readers parked
    /// during the write phase get their turn: the turn counter advances and they are woken.
    #[inline]
    fn downgrade_to(&self, held: u32) {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let mut new = s - WRITER + held;
            if s & PARKED != 0 {
                new = next_turn(new & !PARKED);
            }
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(current) => s = current,
            }
        }
        if s & PARKED != 0 {
            futex::wake(&self.state, u32::MAX);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Queries
    // -----------------------------------------------------------------------------------------

    /// Whether any lock (read, upgradable or write) is held (a racy snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & (WRITER | READERS_MASK) != 0
    }

    /// Whether the write lock is held (a racy snapshot).
    #[inline]
    pub fn is_locked_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }

    /// Whether some thread waits for the lock (a racy snapshot).
    #[inline]
    pub fn has_waiters(&self) -> bool {
        self.state.load(Ordering::Relaxed) & (PARKED | WRITERS_WAITING) != 0
    }

    /// Whether a writer (or an upgrader) waits for the lock (a racy snapshot).
    #[inline]
    pub(crate) fn writers_waiting(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITERS_WAITING != 0
    }

    /// The lock's learned spin estimate in nanoseconds.
    pub fn spin_estimate_ns(&self) -> u32 {
        self.spin.get()
    }

    /// Lockstat: the address this lock's statistics are kept under.
    #[inline]
    pub(crate) fn stats_key(&self) -> usize {
        self as *const RawRwLock as usize
    }

    // -----------------------------------------------------------------------------------------
    // Slow paths
    // -----------------------------------------------------------------------------------------

    /// A shared acquisition (plain, recursive or upgradable read): `take(s, entitled)` (as in
    /// `wait_parked`) first without waiting, then on the slow path as far as `wait` allows;
    /// notes the lock in the debug builds' table of held read locks if taken. `plain` marks a
    /// non-recursive read (see `wait_parked`).
    #[inline]
    fn acquire_shared(
        &self,
        take: impl Fn(u32, bool) -> Option<u32> + Copy,
        wait: Wait<'_>,
        plain: bool,
    ) -> bool {
        let ok = self.try_take(|s| take(s, false))
            || match wait {
                Wait::No => false,
                Wait::Until(deadline) => self.wait_parked(Some(deadline), take, plain),
                Wait::Forever => self.wait_parked(None, take, plain),
            };
        if ok {
            super::held::note_acquire(self);
        }
        ok
    }

    /// One attempt loop without waiting: applies `take` (the new state, if the lock may be taken
    /// from `s`) with compare-exchange until it succeeds or refuses.
    #[inline]
    fn try_take(&self, take: impl Fn(u32) -> Option<u32>) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let Some(new) = take(s) else { return false };
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(current) => s = current,
            }
        }
    }

    /// The contended path of readers and upgradable readers, who sleep on the state word.
    /// `take(s, entitled)` gives the new state if the lock may be taken from `s` by a thread
    /// that is (or is not) entitled to its turn. `plain` marks a non-recursive read, subject to
    /// the debug-build deadlock check. Returns false only if `deadline` passed first.
    #[cold]
    fn wait_parked(
        &self,
        deadline: Option<&Deadline>,
        take: impl Fn(u32, bool) -> Option<u32>,
        plain: bool,
    ) -> bool {
        // Polling (short steps): while it spins a reader only loads the word, and tries its
        // compare-exchange only when the word says it may enter; a writer looping on the lock
        // leaves it free for moments that a backed-off reader would miss.
        let mut w = Waiter::polling(&self.spin, deadline, Subject::Lock(self.stats_key()))
            .rotating_in_rounds();
        // The turn counter when this thread first parked; once a writer has released the lock
        // to parked readers since then (the counter moved), this thread is `entitled`: it may
        // enter past waiting writers. Each acquisition is entitled at most once per write phase,
        // which bounds how long entitled readers can hold a writer up.
        let mut parked_turn = None;
        let mut entitled = false;
        let mut checked = !plain;
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if !checked {
                checked = true;
                if s & (WRITER | WRITERS_WAITING) == WRITERS_WAITING {
                    // Writers wait: once one drains the readers, a nested read waits for it, and
                    // it for the outer read: a deadlock, so debug builds stop here even if this
                    // read would get in now.
                    super::held::check_not_reading(self);
                }
            }
            if !entitled {
                entitled = parked_turn.is_some_and(|t| t != turn(s));
            }
            if let Some(new) = take(s, entitled) {
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return w.acquired(false),
                    Err(current) => {
                        s = current;
                        continue;
                    }
                }
            }
            // Spin unless readers sleep or a writer drains: a writer about to leave, even with
            // other writers asleep, leaves the lock free for a moment.
            if w.spin(s & (PARKED | DRAIN) == 0) {
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            if w.timed_out() {
                // Sleepers are woken all at once, so giving up strands nobody; a stale PARKED
                // only costs the next unlock a futile wake.
                return w.gave_up();
            }
            if s & PARKED == 0 {
                if let Err(current) = self.state.compare_exchange_weak(
                    s,
                    s | PARKED,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    s = current;
                    continue;
                }
                s |= PARKED;
            }
            parked_turn.get_or_insert(turn(s));
            if !w.sleep(&self.state, s) {
                return w.gave_up();
            }
            s = self.state.load(Ordering::Relaxed);
        }
    }

    /// The contended path of writers and upgraders, who sleep on the writer sequence.
    /// `take(s, waited)`: the new state if the lock may be taken from `s` by a thread that has
    /// (or has not) set `WRITERS_WAITING`. Returns false only if `deadline` passed first.
    #[cold]
    fn wait_writer(
        &self,
        deadline: Option<&Deadline>,
        take: impl Fn(u32, bool) -> Option<u32>,
    ) -> bool {
        // After the learned spin, a short grace spin while only readers keep it out (see
        // DRAIN_SPIN_NS).
        let mut w = Waiter::new(&self.spin, deadline, Subject::Lock(self.stats_key()))
            .grace(DRAIN_SPIN_NS)
            .rotating_in_rounds();
        // Whether this thread has set WRITERS_WAITING (and so may have been woken for others).
        let mut waited = false;
        // Whether a wake-up has ended this thread's sleep: it may be the writer WRITER_WOKEN
        // stands for, so it clears the mark when it takes the lock or sleeps again (if it was
        // not that writer, clearing costs one extra wake-up). A wait that returned without a
        // wake-up does not count (see below).
        let mut awoke = false;
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if let Some(new) = take(s, waited) {
                let new = if awoke { new & !WRITER_WOKEN } else { new };
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return w.acquired(false),
                    Err(current) => {
                        s = current;
                        continue;
                    }
                }
            }
            // A writer that never sleeps (`SpinPolicy::Always`) announces itself while it spins,
            // where readers keep it out: without DRAIN, readers whose holds overlap could keep
            // it out for ever. (Kept out by a writer, it does not: its mark would only cost
            // that writer's release a wake-up for nobody.)
            if w.never_sleeps() && writer_wants(s) & DRAIN != 0 {
                match self.announce_writer(s, awoke) {
                    Ok(now) => {
                        waited = true;
                        s = now;
                    }
                    Err(current) => {
                        s = current;
                        continue;
                    }
                }
            }
            // Spin unless readers or writers sleep; but through a read turn (READ_TURN) even
            // while writers sleep: its readers are entering and leave soon (at its end this
            // writer may beat the sleeper it wakes to the lock, costing a wasted wake-up). When a
            // read turn stopped the spin, one reader against one writer fell into a convoy: the
            // writer slept through every read turn with DRAIN set, so the reader's next read
            // found DRAIN and slept too, and the writer's release handed it the next turn. The
            // writer's own WRITERS_WAITING, which stays set after its wake-up, kept the convoy
            // going too; so the writer spins through the turn whatever WRITERS_WAITING says.
            let spin_ok = s & PARKED == 0 && (s & WRITERS_WAITING == 0 || s & READ_TURN != 0);
            // Kept out by another writer: yield before sleeping (see the wait layer's docs).
            if s & WRITER != 0 {
                w.yield_from_now();
            }
            if w.spin(spin_ok) {
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            // Only readers in the way, none asleep, no writer draining them yet: they may be
            // about to leave (see DRAIN_SPIN_NS).
            let only_readers =
                s & (WRITER | UPGRADABLE | READ_TURN | PARKED | DRAIN) == 0 && readers(s) != 0;
            if w.spin_grace(only_readers) {
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            if w.timed_out() {
                if waited {
                    self.writer_gives_up();
                }
                return w.gave_up();
            }
            // Announce the wait; if readers keep us out, new readers must stay out (DRAIN) or
            // they could keep us out for ever. A woken writer going back to sleep also drops the
            // mark, so the holder's release wakes a writer again.
            if let Err(current) = self.announce_writer(s, awoke) {
                s = current;
                continue;
            }
            waited = true;
            // Read the sequence before re-checking the word: a waker changes the word, then bumps
            // the sequence (Release), so either we see its change here or our wait fails.
            let seq = self.writer_seq.load(Ordering::Acquire);
            // Count this thread among the sleepers before that last look at the word. A waker
            // changes the word, bumps the sequence and only then reads the count, with a fence
            // between, as here: either it counts us and wakes, or our look sees its change.
            self.writer_sleepers.fetch_add(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            s = self.state.load(Ordering::Relaxed);
            if take(s, true).is_some() || s & WRITERS_WAITING == 0 {
                self.writer_sleepers.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            let outcome = w.sleep_outcome(&self.writer_seq, seq);
            if outcome != futex::WaitOutcome::Woken {
                // A wake-up uncounts the writers it wakes (`wake_writers`); others leave alone.
                self.writer_sleepers.fetch_sub(1, Ordering::Relaxed);
            }
            match outcome {
                futex::WaitOutcome::TimedOut => {
                    self.writer_gives_up();
                    return w.gave_up();
                }
                // Only a wake-up makes this thread the writer WRITER_WOKEN may stand for. A
                // return because the sequence moved before the kernel compared it (frequent
                // under a stream of releases) is not one: when such returns cleared the mark,
                // each let the next release wake one more writer, until nearly all were
                // runnable and a reader among them hardly ever ran.
                futex::WaitOutcome::Woken => awoke = true,
                futex::WaitOutcome::NotWoken => {}
            }
            s = self.state.load(Ordering::Relaxed);
        }
    }

    /// Announces a waiting writer in the word, which held `s`: sets `writer_wants(s)`, and
    /// drops `WRITER_WOKEN` if this writer was woken (`awoke`, see `wait_writer`). Returns the
    /// word as it now is, or, if it changed meanwhile, as it was found.
    #[inline]
    fn announce_writer(&self, s: u32, awoke: bool) -> Result<u32, u32> {
        let want = writer_wants(s);
        let dropped = if awoke { WRITER_WOKEN } else { 0 };
        if s & want == want && s & dropped == 0 {
            return Ok(s);
        }
        let new = (s | want) & !dropped;
        self.state
            .compare_exchange_weak(s, new, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| new)
    }

    /// A writer or upgrader that set `WRITERS_WAITING` gives up. It may have consumed the
    /// wake-up that was to pass the lock on, and cannot tell whether other writers still sleep:
    /// it clears the bit and wakes every writer and every parked reader; those who still must
    /// wait re-arm what they need.
    #[cold]
    fn writer_gives_up(&self) {
        self.state
            .fetch_and(!(WRITERS_WAITING | WRITER_WOKEN | DRAIN), Ordering::Relaxed);
        self.wake_writers(u32::MAX);
        self.wake_parked();
    }

    /// Wakes up to `n` writers sleeping on the writer sequence; returns how many were woken.
    ///
    /// If no writer is asleep or on its way into a sleep (`writer_sleepers`), it skips the
    /// system call and returns 0, as the call would have. `WRITERS_WAITING` stays set after the
    /// writers that set it have gone (a woken writer cannot tell whether others still sleep),
    /// so under a stream of writers most releases used to call the kernel for nobody.
    ///
    /// The writers it wakes are uncounted here, not by themselves: a woken writer may wait
    /// milliseconds for a CPU before it runs, and while it still counted, every release called
    /// the kernel for nobody again. The kernel's count of
    /// woken writers is exact: a sleeper's wait returns `Woken` exactly when a wake-up took it
    /// off the queue, so each writer is uncounted once, by itself or by its waker.
    #[inline]
    fn wake_writers(&self, n: u32) -> u32 {
        // Release: a writer that reads the new sequence also sees the state change made before.
        self.writer_seq.fetch_add(1, Ordering::Release);
        // Pairs with the fence in `wait_writer` (a store-buffering pair): either that writer's
        // look at the word sees our change, or this load sees it counted.
        fence(Ordering::SeqCst);
        if self.writer_sleepers.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let woken = futex::wake(&self.writer_seq, n);
        if woken > 0 {
            self.writer_sleepers.fetch_sub(woken, Ordering::Relaxed);
        }
        woken
    }

    /// Clears `PARKED` and wakes every thread sleeping on the state word.
    #[inline]
    fn wake_parked(&self) {
        if self.state.fetch_and(!PARKED, Ordering::Relaxed) & PARKED != 0 {
            futex::wake(&self.state, u32::MAX);
        }
    }

    /// The fast path of `read` and `read_recursive`: one fetch_add, which cannot fail as a
    /// compare-exchange does when other readers come and go. If a look at the word finds any
    /// of `blocked` set (a writer holds or drains the lock) or the count at its cap, the reader
    /// goes to wait without touching the word (a reader's add would take the line from the
    /// writer, which needs it for its release). Otherwise it counts itself in and then looks at
    /// what it found: if the word changed to keep it out, it backs out, as a reader leaving
    /// would, and returns false. Meanwhile it only looks like one more reader about to leave.
    #[inline]
    fn count_in(&self, blocked: u32) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        if s & blocked != 0 || readers_full(s) {
            return false;
        }
        let prev = self.state.fetch_add(ONE_READER, Ordering::Acquire);
        if prev & blocked == 0 && !readers_full(prev) {
            return true;
        }
        self.back_out_reader();
        false
    }

    /// A reader's fast path counted itself in where it may not enter: it leaves again,
    /// exactly as a reader's unlock does (it read nothing, so Relaxed suffices: the writer that
    /// waits for the count acquires the releases of the readers that did read).
    #[cold]
    fn back_out_reader(&self) {
        let prev = self.state.fetch_sub(ONE_READER, Ordering::Relaxed);
        if prev & (PARKED | WRITERS_WAITING | READ_TURN) != 0 {
            self.after_reader_left(prev - ONE_READER, readers_full(prev));
        }
    }

    /// A reader left; `now` is the state its `fetch_sub` produced. `was_full`: the count had
    /// reached its cap, so readers may be parked on the count itself.
    #[cold]
    fn after_reader_left(&self, now: u32, was_full: bool) {
        if readers(now) == 0 {
            self.wake_after_release(false);
        } else if readers(now) == 1 && now & UPGRADABLE != 0 && now & WRITERS_WAITING != 0 {
            // Only the upgradable reader is left, and it may be waiting to upgrade among the
            // writers on the sequence: wake them all, the upgrader takes the lock, the others
            // re-arm WRITERS_WAITING and sleep again.
            self.wake_writers(u32::MAX);
        } else if was_full && now & PARKED != 0 {
            self.wake_parked();
        }
    }

    /// A release may have left the lock free while threads sleep. Unless a holder remains (its
    /// release will come back here), end a read turn, then, unless a woken writer is on its way,
    /// wake one writer, or, if no writer was asleep, every parked reader. `mark_woken`: mark the
    /// writer woken (`WRITER_WOKEN`), so that releases until it runs wake nobody; writers'
    /// releases do, readers' do not (see the module docs).
    #[cold]
    fn wake_after_release(&self, mark_woken: bool) {
        let mut s = self.state.load(Ordering::Relaxed);
        // The state word when a writer wake-up found nobody asleep. WRITERS_WAITING is stale
        // only while the word still holds exactly that value: a writer that went to sleep after
        // that wake-up saw the lock held, so the word changed in between (and the holder's
        // release, or the end of the read turn it handed over, owes that writer a wake-up; a
        // waker that was preempted here must not clear the bit from under it).
        let mut no_writer_asleep_at = None;
        let mut mark = mark_woken;
        loop {
            if s & (WRITER | UPGRADABLE | READERS_MASK) != 0 {
                return;
            }
            let new = if s & READ_TURN != 0 {
                s & !READ_TURN
            } else if s & WRITERS_WAITING != 0 {
                if s & WRITER_WOKEN != 0 {
                    // A woken writer is on its way: it takes the lock, or finds it held and
                    // sleeps again, and then that holder's release wakes the next.
                    return;
                }
                if mark {
                    if let Err(current) = self.state.compare_exchange_weak(
                        s,
                        s | WRITER_WOKEN,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        s = current;
                        continue;
                    }
                    mark = false;
                    if self.wake_writers(1) > 0 {
                        return;
                    }
                    // Nobody was asleep. Releases that came by meanwhile saw the mark and left
                    // their wake-up to us, and a writer may have fallen asleep since: clear the
                    // mark and wake once more, without it.
                    s = self.state.fetch_and(!WRITER_WOKEN, Ordering::Relaxed) & !WRITER_WOKEN;
                    continue;
                }
                if no_writer_asleep_at != Some(s) {
                    // WRITERS_WAITING (and DRAIN, if set) stay: readers that DRAIN keeps out
                    // wait until the woken writer runs and takes the lock (it may be a while on
                    // a loaded machine).
                    if self.wake_writers(1) > 0 {
                        return;
                    }
                    no_writer_asleep_at = Some(s);
                    s = self.state.load(Ordering::Relaxed);
                    continue;
                }
                s & !(WRITERS_WAITING | DRAIN)
            } else if s & PARKED != 0 {
                s & !PARKED
            } else {
                return;
            };
            if let Err(current) =
                self.state
                    .compare_exchange_weak(s, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                s = current;
                continue;
            }
            if s & PARKED != 0 && new & PARKED == 0 {
                futex::wake(&self.state, u32::MAX);
                return;
            }
            s = new;
        }
    }

    /// The contended path of `unlock_exclusive`.
    #[cold]
    fn unlock_exclusive_slow(&self) {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & PARKED != 0 {
                // Readers sleep: their turn. Writers may not take the lock until they are done.
                let new = next_turn(s & !(WRITER | PARKED)) | READ_TURN;
                if let Err(current) =
                    self.state
                        .compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed)
                {
                    s = current;
                    continue;
                }
                if futex::wake(&self.state, u32::MAX) == 0 {
                    // Nobody was asleep after all (a timed reader left): end the turn now.
                    self.wake_after_release(true);
                }
                return;
            }
            let new = s & !(WRITER | READ_TURN);
            if let Err(current) =
                self.state
                    .compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed)
            {
                s = current;
                continue;
            }
            if s & WRITERS_WAITING != 0 {
                // Wake a writer (WRITERS_WAITING stays set), or, if none sleeps, whoever does.
                self.wake_after_release(true);
            }
            return;
        }
    }
}

/// New state for a reader taking the lock from `s`, if it may: `privileged` readers (recursive,
/// or entitled to their turn) only need no writer to hold it.
#[inline]
fn read_admits(s: u32, privileged: bool) -> Option<u32> {
    let blocked = if privileged { WRITER } else { WRITER | DRAIN };
    if s & blocked == 0 && !readers_full(s) {
        Some(s + ONE_READER)
    } else {
        None
    }
}

/// New state for a recursive reader taking the lock from `s`, if it may: whenever no writer
/// holds it, entitled or not.
#[inline]
fn recursive_admits(s: u32, _entitled: bool) -> Option<u32> {
    read_admits(s, true)
}

/// How far a shared acquisition may wait (see `RawRwLock::acquire_shared`).
#[derive(Clone, Copy)]
enum Wait<'a> {
    /// Not at all: a `try_` acquisition.
    No,
    /// Until the deadline passes.
    Until(&'a Deadline),
    /// Until it gets the lock.
    Forever,
}

/// New state for an upgradable reader taking the lock from `s`, if it may.
#[inline]
fn upgradable_admits(s: u32, entitled: bool) -> Option<u32> {
    let blocked = if entitled {
        WRITER | UPGRADABLE
    } else {
        WRITER | UPGRADABLE | DRAIN
    };
    if s & blocked == 0 && !readers_full(s) {
        Some(s + ONE_READER + UPGRADABLE)
    } else {
        None
    }
}

/// The bits a writer kept out of the lock in state `s` announces itself with: `WRITERS_WAITING`,
/// and `DRAIN` where readers keep it out (new readers must stay out, or they could keep it out
/// for ever).
#[inline]
fn writer_wants(s: u32) -> u32 {
    if readers(s) != 0 || s & READ_TURN != 0 {
        WRITERS_WAITING | DRAIN
    } else {
        WRITERS_WAITING
    }
}

/// New state for a writer taking the lock from `s`, if it may. A writer that has waited keeps
/// `WRITERS_WAITING` set: others may still sleep, and its unlock must wake one.
#[inline]
fn write_takes(s: u32, waited: bool) -> Option<u32> {
    if s & (WRITER | UPGRADABLE | READERS_MASK | READ_TURN) == 0 {
        Some(keep_waiting(s | WRITER, waited) & !DRAIN)
    } else {
        None
    }
}

/// New state for the upgradable reader upgrading from `s`, if no other reader holds the lock.
/// A pending read turn ends: the upgrader was admitted already and cannot wait for it.
#[inline]
fn upgrade_takes(s: u32) -> Option<u32> {
    if readers(s) == 1 {
        Some((s - ONE_READER - UPGRADABLE + WRITER) & !(READ_TURN | DRAIN))
    } else {
        None
    }
}

#[inline]
fn keep_waiting(s: u32, waited: bool) -> u32 {
    if waited {
        s | WRITERS_WAITING
    } else {
        s
    }
}

impl Drop for RawRwLock {
    /// Lockstat: the lock's rows are folded into the row of the dropped locks created at the
    /// same site (or of the same name), and its entries freed (see
    /// [`stats::raw::destroyed`](crate::stats::raw::destroyed)); a
    /// [`RawBiasedRwLock`](crate::RawBiasedRwLock) keeps its rows under the `RawRwLock` it
    /// holds, and so is retired with it. One relaxed load where lockstat has never been on.
    ///
    /// ```
    /// use scalelock::{stats, RwLock};
    /// stats::enable();
    /// let l = Box::new(RwLock::with_name("schema", 0));
    /// *l.write() += 1;
    /// drop(l);
    /// # #[cfg(feature = "lockstat")]
    /// assert!(stats::report().locks.iter().any(|l| l.lock.to_string() == "schema (destroyed)"));
    /// stats::disable();
    /// ```
    #[inline]
    fn drop(&mut self) {
        crate::stats::raw::destroyed(self.stats_key());
    }
}

impl Default for RawRwLock {
    fn default() -> RawRwLock {
        RawRwLock::new()
    }
}

impl core::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.state.load(Ordering::Relaxed);
        f.debug_struct("RawRwLock")
            .field("readers", &readers(s))
            .field("writer", &(s & WRITER != 0))
            .field("upgradable", &(s & UPGRADABLE != 0))
            .field("writers_waiting", &(s & WRITERS_WAITING != 0))
            .field("parked", &(s & PARKED != 0))
            .field("read_turn", &(s & READ_TURN != 0))
            .field("writer_woken", &(s & WRITER_WOKEN != 0))
            .field("drain", &(s & DRAIN != 0))
            .field("spin_estimate_ns", &self.spin.get())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
