//! scalelock's mutex: spin while spinning pays, then sleep; hand off to a starving waiter.
//!
//! # Design
//!
//! Two 32-bit words: the futex **state word** and the lock's [`SpinEstimate`]. An uncontended
//! `lock` is one compare-exchange (`0 -> LOCKED`), an uncontended `unlock` a read and another
//! (`LOCKED -> 0`, see `release_plain`); the unlock makes a system call only when a thread may
//! be asleep.
//!
//! A thread that finds the lock held spins (calibrated, re-reading the word in short steps; the
//! budget comes from the process-wide [`SpinPolicy`](crate::wait::SpinPolicy) and the lock's
//! learned estimate) as long as nobody sleeps on the lock, yields its CPU a few times (also while
//! others sleep: a yielder costs the holder nothing, where every sleeper costs an unlock a futex
//! wake; and when threads outnumber CPUs, the wait layer cuts the spin short and waits by
//! yielding), then sets `CONTENDED` and sleeps on the futex. `unlock` of a `CONTENDED` lock
//! releases it and wakes one sleeper. Releasing (rather than handing over) lets a running thread
//! take the lock at once, which is what keeps throughput up when threads outnumber cores; the price
//! is unfairness, which is bounded: a waiter that has been away from its CPU for longer than
//! [`STARVATION_NS`] (1 ms), yielding or asleep, sets `STARVING` and sleeps (again) in the
//! futex's *starving class* (see `futex::wait_outcome_in`).
//! From then on newcomers neither spin nor take the lock but queue on the futex, and `unlock`
//! *hands the lock over*: it keeps `LOCKED`, sets `HANDOFF`, and wakes the oldest sleeper of the
//! starving class, which takes ownership and ends starvation mode. If no starving thread sleeps (it
//! is on its way back, or gave up), `unlock` takes the hand-off back and releases as usual.
//!
//! Four things make the bound hold when threads outnumber CPUs, where wake-ups are slow, and a
//! fifth keeps what the bound costs down where nobody is passed over:
//! - *The class* makes the hand-off reach the thread that starved. The kernel's queue is FIFO,
//!   but a woken sleeper that lost the lock to a running thread goes to sleep again at its
//!   tail, so the oldest sleeper is seldom the one that starved; a hand-off to it left the
//!   starving thread to wait for the whole queue to be woken one by one.
//! - *No sleep outlasts the starvation mark.* An unlock wakes one sleeper, and the next wake
//!   comes only after that one has run (it took the lock and passes the wake-up on, or lost it
//!   and announced itself again), which takes milliseconds apiece on a busy machine; a sleeper
//!   deep in the queue could sleep many marks long before any wake-up reached it and it could
//!   say that it starves. So a sleeper sleeps at most until its mark (at least a sixteenth of
//!   it), and a starving one at most one more `STARVATION_NS` at a time (another starving
//!   thread's hand-off may have ended starvation mode meanwhile): it wakes by itself, with no
//!   wake-up to pass on, and announces `STARVING` again if the lock is still held. (A thread
//!   that re-takes the mutex after a condition variable's wait is the exception, see below.)
//! - *Yields count.* Where threads outnumber CPUs, each yield lasts a round of the threads
//!   runnable on the waiter's CPU (Linux's EEVDF scheduler puts a yielder behind the threads
//!   that have not run their slice), so a waiter's few yields can outlast the mark before it
//!   ever sleeps; counted from its first sleep, its wait was the yields plus one more mark.
//!   So the mark counts from the waiter's first yield or sleep, and a waiter past it stops
//!   yielding and starves.
//! - *A starving waiter keeps a vigil before it sleeps.* A hand-off leaves the lock held for
//!   a sleeper until that sleeper has a CPU again: a wake-up latency, longer where it waits
//!   behind other runnable threads. Once yields count, many waiters starve where threads
//!   outnumber CPUs, and those idle stretches cost the lock's throughput. So a starving waiter
//!   that finds `STARVING` clear raises it alone (newcomers stop spinning and barging; the
//!   unlock owes nobody a wake-up and just releases, clearing it) and polls the word for up
//!   to a wake-up latency (see `Waiter::vigil`): a running holder of a short hold releases
//!   within that time, and the waiter takes the lock at once; only a preempted holder, or a
//!   long hold, sends it to sleep for a hand-off. The vigil costs the waiter's CPU at most
//!   what the hand-off would have cost the lock, and a lock has one vigil at a time (only the
//!   waiter that raised the flag keeps it): vigils kept by every starving waiter at once took
//!   the CPUs from the holders they waited for. A release that the unlock hands to a starving
//!   sleeper (one that raised `STARVING` before, and sleeps for it) ends the vigil too, and
//!   the waiter sleeps: the release is not its to take. Where threads outnumber CPUs many
//!   times over, most waiters starve and most releases are hand-offs to sleepers, and a vigil
//!   that watched for a plain release alone polled on through the next holder's hold, up to
//!   a wake-up latency of a CPU that the lock's other threads needed, for a release that
//!   seldom came its way. The waiter leaves the hand-off even where it has slept, which would
//!   let it take the hand-off itself: the sleeper woken for it, the oldest starving one,
//!   would then find the lock taken and, unless it could keep the next vigil, sleep again
//!   behind every other starving sleeper.
//! - *A bound that finds nothing changed doubles.* A sleep that its bound ends on a word that
//!   nobody has changed since the sleeper announced itself says that the lock has not been
//!   released meanwhile (its holder is preempted, or holds long): nobody has been passed over,
//!   and there is nothing to announce. The sleeper sleeps on, and the lock's *quiet level*
//!   (kept in its spin estimate's word, see `SpinEstimate::quiet`) rises by one; every bound
//!   of the lock's sleepers is doubled as many times as the level says (up to 16 times
//!   `STARVATION_NS`), and a bound that ends on a changed word (or a refused sleep) sets the
//!   level back to 0, so a lock whose sleepers are passed over keeps the plain bounds. A
//!   wake-up by a timer is not free where threads outnumber CPUs: Linux charges it to
//!   whichever thread the timer's interrupt lands on, as if that thread had woken another,
//!   and threads that seem to wake many others are no longer placed next to the threads they
//!   wake (`wake_wide`). A server whose holders are often preempted (MariaDB under the preload
//!   library) had its sleepers' bounds end, one per starvation mark, on locks nobody had
//!   released, and its clients and connection threads, interrupted by those timers, ended up
//!   on different CPUs more often: every request then crossed CPUs, and a transaction cost
//!   more CPU time than under glibc's mutex, which never bounds a sleep.
//!
//! A waiter whose sleep is refused (it set `CONTENDED`, and before the kernel compared the word
//! the lock was released, clearing the flag, and taken again), or whose spin found the lock
//! released and re-taken by others under its eyes while the lock's recent waits all spun in
//! vain too (see the wait layer's `FUTILE_WAITS_DOZE`), or whose look found the lock just released
//! on a far CPU and re-taken there within the time a hand-off would take (see
//! `Waiter::declined`), dozes from then on: it sleeps for about a wake-up latency on a word of
//! its own, without announcing itself, and looks again (see `Waiter::doze`). A lock re-taken
//! that fast is one whose threads keep it busy without help; an announced sleeper would cost
//! each release a wake and be refused again, and a spinning or yielding one would keep pulling
//! the lock's line to its own CPU. A dozer changes no flag in the state word, so the drawing
//! below has no transition for it. It sleeps on the word again, announced, once it has waited
//! longer than [`STARVATION_NS`]: `STARVING` then ends the barging that kept it out.
//!
//! A thread that re-takes the mutex after a condition variable's wait (scalelock's `Condvar`,
//! or a caller's own through [`RawMutex::lock_woken`]) makes no yields: it spins while spinning
//! pays, then sleeps. It has just been woken, and the scheduler placed it for the time it spent
//! asleep (on Linux's EEVDF, ahead of threads that have used their share); a yield moves a
//! thread's deadline a time slice later, behind every runnable thread that has not run its
//! slice, and where threads outnumber CPUs each yield of such a waiter lasted milliseconds
//! (MariaDB's thread pool under the preload library: its workers' re-takes after their condvar
//! waits spent nearly all of their waiting in yields). A sleeper is woken by the release and
//! placed again. Its thread was off its CPU, so the yields' saving (no futex wake for a thread
//! that takes the lock again and again) does not apply to it.
//!
//! Nor does such a thread's sleep have a starvation bound: it sleeps until a release wakes it,
//! and only once it has been woken, found the lock taken and been away past its mark does it
//! starve, its sleeps then bounded as any starving waiter's. The notifier often holds the mutex
//! as it notifies, and the threads it woke queue behind it and behind each other; where
//! threads outnumber CPUs their waits outlast the mark, and bounds that ended them woke each by
//! a timer, which costs more than the wake-up (see the fifth point above): MariaDB's thread
//! pool, whose workers re-take its mutex after every wait for a task, had most of the timer
//! wake-ups that the bound caused.
//!
//! # State word
//!
//! ```text
//!   31                    5          4          3          2           1         0
//!  +----------------------+----------------+---------+----------+-----------+---------+
//!  |        unused        | MAYBE_SLEEPING | HANDOFF | STARVING | CONTENDED | LOCKED  |
//!  +----------------------+----------------+---------+----------+-----------+---------+
//!
//!  LOCKED          held (stays set across a hand-off)
//!  CONTENDED       a thread announced that it sleeps on the word: unlock must wake one, and
//!                  newcomers do not spin (they would only barge ahead of it)
//!  MAYBE_SLEEPING  a thread that was woken took the lock and cannot know whether others still
//!                  sleep: unlock must wake one, but newcomers may spin (nobody announced sleeping)
//!  STARVING        a waiter was away > 1 ms: no spinning, no barging, unlock hands off
//!  HANDOFF         ownership passed to "a thread that has slept"; the first such thread to see it
//!                  clears it and owns the lock (not a waiter whose vigil it ended: that one
//!                  sleeps first)
//!
//!  transitions                                      by
//!  0 ------------------------------> LOCKED          lock, fast path (CAS)
//!  LOCKED --------------------------> 0              unlock, fast path (CAS)
//!  s(!LOCKED) ----------------------> s|LOCKED       lock, slow path (a thread that has slept
//!                                                    also sets MAYBE_SLEEPING)
//!  s(LOCKED) -----------------------> s|CONTENDED    a waiter, before futex_wait(s|CONTENDED)
//!  s(LOCKED,CONTENDED) -------------> s|STARVING     a waiter away > 1 ms, before it sleeps
//!  s(LOCKED,!STARVING) -------------> s|STARVING     a waiter away > 1 ms, for its vigil: it
//!                                                    announces no sleep, so an unlock that
//!                                                    finds no other flag clears it with
//!                                                    LOCKED and wakes nobody
//!  s(CONTENDED or MAYBE_SLEEPING) --> s&!(LOCKED|CONTENDED|MAYBE_SLEEPING|STARVING), wake(1)
//!                                                    unlock, slow path
//!  s(STARVING or fair, either) -----> s|HANDOFF, wake(1) (STARVING: of the starving class)
//!                                                    unlock with hand-off; if nobody was
//!                                                    woken, it clears HANDOFF and releases
//!  s(HANDOFF) ----------------------> s&!(HANDOFF|STARVING)
//!                                                    a thread that has slept takes ownership
//! ```
//!
//! Every thread that returns from `futex_wait` either takes the lock with `MAYBE_SLEEPING` (or,
//! on a hand-off, `CONTENDED`) set or goes back to sleep with `CONTENDED` set, so the wake-up it
//! may have consumed is passed on; a timed waiter that gives up after sleeping sets
//! `MAYBE_SLEEPING` for the same reason. That is the invariant the loom models in
//! `tests/loom_mutex.rs` check: no lost wake-up, no stranded hand-off.

use crate::stats;
use crate::sync::{AtomicU32, Ordering};
use crate::wait::{futex, Deadline, SpinEstimate, Subject, Waiter};

const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;
const STARVING: u32 = 4;
const HANDOFF: u32 = 8;
const MAYBE_SLEEPING: u32 = 16;
/// Either flag obliges `unlock` to wake a sleeper.
const WAKE_ON_UNLOCK: u32 = CONTENDED | MAYBE_SLEEPING;

/// Whether a starving waiter's vigil goes on, reading the state word `s`: while the lock is
/// held and not handed to a sleeper (see the module docs).
#[inline]
fn vigil_goes_on(s: u32) -> bool {
    s & (LOCKED | HANDOFF) == LOCKED
}

/// Vigils that ended at a hand-off to a starving sleeper (tests only; see the module docs).
#[cfg(all(test, not(loom)))]
static VIGIL_HAND_OFFS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The futex class (see `futex::wait_outcome_in`) a waiter sleeps in until it starves.
const SLEEPER_CLASS: u32 = 1;
/// The futex class a starving waiter sleeps in: the one a starvation hand-off wakes.
const STARVING_CLASS: u32 = 2;

/// How long a waiter may be away from its CPU (yielding or asleep) before it starves: it asks
/// for the lock to be handed to it (1 ms).
pub const STARVATION_NS: u64 = 1_000_000;

/// The raw mutex: 8 bytes, `const`-constructible, implementing lock_api's `RawMutex`,
/// `RawMutexFair` and `RawMutexTimed`.
///
/// Use it through [`Mutex`](crate::Mutex), or directly where a guard does not fit (the preload
/// library does).
///
/// ```
/// use lock_api::RawMutex as _;
/// use scalelock::RawMutex;
///
/// static RAW: RawMutex = RawMutex::INIT;
/// RAW.lock();
/// assert!(!RAW.try_lock());
/// // SAFETY: locked just above by this thread.
/// unsafe { RAW.unlock() };
/// assert_eq!(std::mem::size_of::<RawMutex>(), 8);
/// ```
pub struct RawMutex {
    state: AtomicU32,
    spin: SpinEstimate,
}

impl RawMutex {
    /// An unlocked mutex.
    #[cfg(not(loom))]
    pub const fn new() -> RawMutex {
        RawMutex {
            state: AtomicU32::new(0),
            spin: SpinEstimate::new(),
        }
    }

    /// An unlocked mutex.
    #[cfg(loom)]
    pub fn new() -> RawMutex {
        RawMutex {
            state: AtomicU32::new(0),
            spin: SpinEstimate::new(),
        }
    }

    /// Acquires the mutex, spinning then sleeping while another thread holds it.
    #[inline]
    pub fn lock(&self) {
        if self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow(None, false, false);
        }
    }

    /// Acquires the mutex if it is free, without waiting.
    ///
    /// It looks before it writes: on a held lock it only reads the state word, so a thread that
    /// polls `try_lock` does not take the holder's cache line away on every poll.
    #[inline]
    pub fn try_lock(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & LOCKED != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s | LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(current) => s = current,
            }
        }
    }

    /// Acquires the mutex if it is idle (free, with no waiter flag set), with a single
    /// compare-exchange and no look first; false in every other state, including a free lock
    /// that a woken thread has marked.
    ///
    /// It is the first step of a caller that waits when it fails (as [`lock`](Self::lock)'s own
    /// fast path): there the write a failed compare-exchange makes costs nothing extra. A thread
    /// that polls should call [`try_lock`](Self::try_lock), which reads a held lock without
    /// writing it.
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    /// use scalelock::RawMutex;
    ///
    /// static RAW: RawMutex = RawMutex::INIT;
    /// if !RAW.try_lock_idle() {
    ///     RAW.lock(); // the waiting path
    /// }
    /// assert!(!RAW.try_lock_idle());
    /// // SAFETY: locked just above by this thread.
    /// unsafe { RAW.unlock() };
    /// ```
    #[inline]
    pub fn try_lock_idle(&self) -> bool {
        self.state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Acquires the mutex, giving up at `deadline`; returns whether it was acquired.
    #[inline]
    pub fn try_lock_until(&self, deadline: &Deadline) -> bool {
        self.state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.lock_slow(Some(deadline), false, false)
    }

    /// Releases the mutex.
    ///
    /// # Safety
    /// The calling context must hold the mutex.
    #[inline]
    pub unsafe fn unlock(&self) {
        if !self.release_plain() {
            self.unlock_slow(false);
        }
    }

    /// Releases the mutex and, if a thread sleeps on it, hands the lock directly to one.
    ///
    /// # Safety
    /// The calling context must hold the mutex.
    #[inline]
    pub unsafe fn unlock_fair(&self) {
        if !self.release_plain() {
            self.unlock_slow(true);
        }
    }

    /// Releases the mutex if its word is plain `LOCKED` (nobody to wake, nothing to hand
    /// over) and returns whether it did; otherwise leaves the word to `unlock_slow`.
    ///
    /// The word is read before the compare-exchange, and the read decides: a word with a flag
    /// set goes to the slow path without a compare-exchange bound to fail. The read is there
    /// for the hand-over's sake too. A locked instruction (x86's; here the compare-exchange)
    /// waits until every earlier store has left the store buffer, and only then asks for its
    /// cache line. Under contention both are slow: a critical section's stores often go to
    /// lines another CPU wrote last, and a waiter on another CPU has read the word's line, so
    /// the two fetches came back to back, and the waiter saw the release that much later. A
    /// plain load is not held back by earlier stores to other lines: it fetches the word's
    /// line while they drain. (glibc's unlock reads and writes the mutex's line before its
    /// exchange too.) What the read costs: a hold with no stores gains nothing from it, and
    /// where nothing lies between `lock` and `unlock` the read waits for the lock's
    /// compare-exchange.
    #[inline]
    fn release_plain(&self) -> bool {
        self.state.load(Ordering::Relaxed) == LOCKED
            && self
                .state
                .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether the mutex is held by some thread (a racy snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCKED != 0
    }

    /// Whether a thread may be sleeping on the mutex (a racy snapshot).
    #[inline]
    pub fn is_contended(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WAKE_ON_UNLOCK != 0
    }

    /// The lock's learned spin estimate in nanoseconds.
    pub fn spin_estimate_ns(&self) -> u32 {
        self.spin.get()
    }

    /// Acquires the mutex as a thread that has already slept (a condvar waiter that may have been
    /// requeued onto this mutex): it may take a hand-off, leaves `MAYBE_SLEEPING` set, makes no
    /// yields, and sleeps until a release wakes it; once it starves, its sleeps are bounded
    /// (see the module docs).
    #[inline]
    pub(crate) fn lock_after_wake(&self) {
        self.lock_slow(None, true, true);
    }

    /// Acquires the mutex for a thread just woken from a wait on something else (a condition
    /// variable the caller implements itself): as [`lock`](Self::lock), but a contended wait
    /// spins while spinning pays and then sleeps, without yielding its CPU, until a release
    /// wakes it (no starvation bound ends its sleep until it has been woken into a taken lock
    /// past its mark; see the module docs).
    ///
    /// ```
    /// use lock_api::RawMutex as _;
    /// use scalelock::RawMutex;
    ///
    /// static RAW: RawMutex = RawMutex::INIT;
    /// RAW.lock_woken();
    /// assert!(RAW.is_locked());
    /// // SAFETY: locked just above by this thread.
    /// unsafe { RAW.unlock() };
    /// ```
    #[inline]
    pub fn lock_woken(&self) {
        if !self.try_lock_idle() {
            self.lock_slow(None, false, true);
        }
    }

    /// The futex word, the target of a condvar's requeue.
    pub(crate) fn futex_word(&self) -> &AtomicU32 {
        &self.state
    }

    /// The contended path of `lock`. `slept` is true for a thread that has already slept (see
    /// `lock_after_wake`); `retake` is true for a thread re-taking the mutex after a condition
    /// variable's wait, which makes no yields and sleeps until a release wakes it; once it
    /// starves, its sleeps are bounded (see the module docs). Returns false only if `deadline`
    /// passed first.
    #[cold]
    fn lock_slow(&self, deadline: Option<&Deadline>, mut slept: bool, retake: bool) -> bool {
        // The waiter polls in short steps (see Spinner::polling): while the lock is held it
        // only reads the word, which costs the holder nothing until the holder writes it, and
        // it writes the word only once it has read it free (or to announce a sleep). Backoff
        // steps, which keep waiters off a word they keep writing, would let a short hold's
        // release pass unseen whenever the releaser's next acquisition follows within a step:
        // the bench's mutex-short lost throughput that way.
        let mut w = Waiter::polling(&self.spin, deadline, Subject::Held(self));
        if !retake {
            w = w.yielding();
        }
        let mut w = w.rotating();
        let mut starving = false;
        // This starving waiter has kept its vigil since it last slept (see the module docs).
        let mut vigil_kept = false;
        // Its vigil ended at a hand-off to a starving sleeper, which it leaves to that
        // sleeper until it has slept again (see the module docs).
        let mut handed_elsewhere = false;
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            // Free: take it. A thread that has slept cannot know whether others still sleep, so it
            // sets MAYBE_SLEEPING, passing on any wake-up it consumed: its unlock wakes one more.
            // (Not CONTENDED: nobody announced sleeping, so newcomers may still spin. Were it
            // CONTENDED, the next contender would sleep at once, be woken, take the lock with the
            // flag again, and so on: a sleep/wake chain with a futex call on every unlock.)
            if s & LOCKED == 0 {
                let new = s | LOCKED | if slept { MAYBE_SLEEPING } else { 0 };
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

            // Handed off: a thread that has slept takes ownership (LOCKED stays set) and ends
            // starvation mode: each starving sleeper earns one hand-off, not a FIFO era (which
            // would leave the lock idle for a wake-up latency on every acquisition).
            if s & HANDOFF != 0 && slept && !handed_elsewhere {
                let new = (s & !(HANDOFF | STARVING)) | CONTENDED;
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => return w.acquired(true),
                    Err(current) => {
                        s = current;
                        continue;
                    }
                }
            }

            // Spin while the holder may release soon: never once a thread has announced that it
            // sleeps (CONTENDED: spinning would only barge ahead of it) or in starvation mode.
            // A thread woken from sleep may spin too. Yielding is allowed while others sleep
            // (a yielder costs the holder nothing and keeps the unlock path free of wake-ups),
            // but not in starvation mode, which bounds what it barges ahead of. A waiter whose
            // yields have kept it away for longer than STARVATION_NS starves: it neither spins
            // nor yields any more, but watches and sleeps as a starving waiter (see the module
            // docs).
            if !starving && w.away_when_back_ns() > STARVATION_NS {
                starving = true;
                w.starves();
            }
            if !starving && w.spin_or_yield(s & (CONTENDED | STARVING) == 0, s & STARVING == 0) {
                // Looks that find the lock re-taken since the previous one (a few in one wait,
                // see RETAKES_FUTILE) tell the waiter that spinning does not catch this lock
                // (see Waiter::look).
                s = w.look(&self.state, |s| s & LOCKED != 0);
                // A free lock released on a far CPU is left to that CPU's threads (see
                // Waiter::declined): doze, then look again.
                if w.declines() {
                    w.doze();
                    s = self.state.load(Ordering::Relaxed);
                }
                continue;
            }

            if w.timed_out() {
                let got = slept && self.give_up_after_sleep();
                return w.ended(got);
            }

            // A waiter away (yielding, asleep or dozing) for longer than STARVATION_NS starves.
            if !starving && w.away_ns() > STARVATION_NS {
                starving = true;
            }

            // Doze, once a sleep was refused or spinning proved futile (see Waiter::dozing):
            // the lock is being released and re-taken faster than this waiter catches it, or
            // than a sleeper gets into the kernel, so announcing a sleep would only make each
            // release pay a wake. The doze leaves the word alone and ends by itself; a starving
            // waiter sleeps on the word instead, which stops the barging.
            if w.dozing() && !starving {
                w.doze();
                s = self.state.load(Ordering::Relaxed);
                continue;
            }

            // A starving waiter keeps a vigil before it sleeps (see the module docs): it raises
            // STARVING alone, which stops newcomers' spinning and barging but asks the unlock
            // for no wake-up, and watches the word for the release, or for a hand-off to a
            // starving sleeper, which it leaves to that sleeper: it sleeps next. Only the
            // waiter that raised the flag watches: a lock has one vigil at a time.
            if starving && !vigil_kept && s & STARVING == 0 && w.keeps_vigil() {
                if let Err(current) = self.state.compare_exchange_weak(
                    s,
                    s | STARVING,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    s = current;
                    continue;
                }
                vigil_kept = true;
                s = w.vigil(&self.state, s | STARVING, vigil_goes_on);
                if s & HANDOFF != 0 {
                    handed_elsewhere = true;
                    #[cfg(all(test, not(loom)))]
                    VIGIL_HAND_OFFS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                }
                continue;
            }

            // Sleep. CONTENDED makes the unlocker wake us; STARVING asks it to hand off.
            let mut want = s | CONTENDED;
            if starving {
                want |= STARVING;
            }
            if want != s {
                if let Err(current) =
                    self.state
                        .compare_exchange_weak(s, want, Ordering::Relaxed, Ordering::Relaxed)
                {
                    s = current;
                    continue;
                }
                s = want;
            }
            // A sleeper looks again by its starvation mark at the latest, and a starving one
            // every STARVATION_NS, whether or not anyone wakes it: bounds that the lock's
            // quiet level doubles, as many times over as it says; a re-take after a condition
            // variable's wait sleeps until a release wakes it; once it starves, its sleeps are
            // bounded (see the module docs).
            let (class, bound) = if starving {
                (STARVING_CLASS, STARVATION_NS)
            } else {
                (
                    SLEEPER_CLASS,
                    STARVATION_NS
                        .saturating_sub(w.away_ns())
                        .max(STARVATION_NS / 16),
                )
            };
            let outcome = if retake && !starving {
                w.sleep_outcome_in(&self.state, s, class)
            } else {
                let mut quiet = self.spin.quiet();
                loop {
                    let outcome = w.sleep_outcome_for(&self.state, s, class, bound << quiet);
                    // Under loom the bound is left out (see Waiter::sleep_outcome_for).
                    if outcome != futex::WaitOutcome::NotWoken || cfg!(loom) {
                        break outcome;
                    }
                    // Ended by its bound (or refused): on a word nobody changed meanwhile, the
                    // lock was not released, nobody has been passed over, and it sleeps on.
                    let unchanged = self.state.load(Ordering::Relaxed) == s;
                    quiet = self.spin.bound_ended(unchanged);
                    if !unchanged {
                        break outcome;
                    }
                }
            };
            slept = true;
            vigil_kept = false;
            handed_elsewhere = false;
            if outcome == futex::WaitOutcome::TimedOut {
                let got = self.give_up_after_sleep();
                return w.ended(got);
            }
            s = self.state.load(Ordering::Relaxed);
            // The announcement came too late: before the kernel looked, the lock was released
            // (which cleared CONTENDED and woke any other sleeper) and taken again. Nobody woke
            // this thread, so it holds no wake-up to pass on. (It slept on a word with
            // CONTENDED set, so a word without it has changed. A sleep that its bound ended
            // also returns NotWoken, but such a sleeper has reached its starvation mark, and a
            // starving waiter sleeps on the word whether or not it dozes.)
            if outcome == futex::WaitOutcome::NotWoken && s & (LOCKED | CONTENDED) == LOCKED {
                w.refused();
            }
        }
    }

    /// A timed waiter that has slept gives up. It may have consumed the wake-up meant to pass the
    /// lock on, so it must not simply leave: it takes a free or handed-off lock (returns true), or
    /// makes sure the holder's unlock will wake the next sleeper (MAYBE_SLEEPING).
    #[cold]
    fn give_up_after_sleep(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let (new, acquired) = if s & LOCKED == 0 {
                (s | LOCKED | MAYBE_SLEEPING, true)
            } else if s & HANDOFF != 0 {
                ((s & !(HANDOFF | STARVING)) | CONTENDED, true)
            } else if s & WAKE_ON_UNLOCK == 0 {
                (s | MAYBE_SLEEPING, false)
            } else {
                return false;
            };
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return acquired,
                Err(current) => s = current,
            }
        }
    }

    /// The contended path of `unlock`: wake a sleeper, or hand the lock over to one.
    #[cold]
    fn unlock_slow(&self, fair: bool) {
        stats::released(self as *const RawMutex as usize); // lockstat: ends a sampled hold
        let mut s = self.state.load(Ordering::Relaxed);
        let mut hand_off = fair;
        loop {
            if (hand_off || s & STARVING != 0) && s & WAKE_ON_UNLOCK != 0 {
                if let Err(current) = self.state.compare_exchange_weak(
                    s,
                    s | HANDOFF,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    s = current;
                    continue;
                }
                // A fair unlock hands the lock to any sleeper; starvation, to a starving one
                // (see the module docs).
                let class = if hand_off {
                    futex::ANY_CLASS
                } else {
                    STARVING_CLASS
                };
                if futex::wake_in(&self.state, 1, class) > 0 {
                    return;
                }
                // Nobody of that class was asleep. Take the hand-off back, unless a thread that
                // has slept took it meanwhile, and release normally (which wakes a sleeper of
                // any class, and anyone who fell asleep since).
                s = self.state.load(Ordering::Relaxed);
                loop {
                    if s & HANDOFF == 0 {
                        return;
                    }
                    let new = s & !(HANDOFF | STARVING);
                    match self.state.compare_exchange_weak(
                        s,
                        new,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            s = new;
                            break;
                        }
                        Err(current) => s = current,
                    }
                }
                hand_off = false;
                continue;
            }
            match self.state.compare_exchange_weak(
                s,
                s & !(LOCKED | WAKE_ON_UNLOCK | STARVING),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if s & WAKE_ON_UNLOCK != 0 {
                        futex::wake(&self.state, 1);
                    }
                    return;
                }
                Err(current) => s = current,
            }
        }
    }
}

impl stats::HoldSampled for RawMutex {
    fn stats_key(&self) -> usize {
        self as *const RawMutex as usize
    }

    /// Lockstat: sets `MAYBE_SLEEPING` while the caller holds the mutex, so that its unlock takes
    /// the contended path, where a sampled hold time ends. Safe for the protocol: at worst that
    /// unlock makes one futex wake that finds nobody, and a waiter arriving meanwhile sleeps at
    /// once.
    fn mark_contended(&self) {
        self.state.fetch_or(MAYBE_SLEEPING, Ordering::Relaxed);
    }
}

impl Drop for RawMutex {
    /// Lockstat: the mutex's rows are folded into the row of the dropped locks created at the
    /// same site (or of the same name), and its entries freed (see
    /// [`stats::raw::destroyed`]), so that a lock created later at this address starts from
    /// nothing. One relaxed load where lockstat has never been on.
    ///
    /// ```
    /// use scalelock::{stats, Mutex};
    /// stats::enable();
    /// let m = Box::new(Mutex::new(0));
    /// *m.lock() += 1;
    /// drop(m);
    /// # #[cfg(feature = "lockstat")]
    /// assert!(stats::report().locks.iter().any(|l| l.lock.name == Some("(destroyed)")));
    /// stats::disable();
    /// ```
    #[inline]
    fn drop(&mut self) {
        stats::raw::destroyed(self as *const RawMutex as usize);
    }
}

impl Default for RawMutex {
    fn default() -> RawMutex {
        RawMutex::new()
    }
}

impl core::fmt::Debug for RawMutex {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawMutex")
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("spin_estimate_ns", &self.spin.get())
            .finish()
    }
}

#[cfg(not(loom))]
mod api {
    use super::RawMutex;
    use crate::wait::Deadline;
    use core::num::NonZeroUsize;
    use std::time::{Duration, Instant};

    // SAFETY: `lock`/`try_lock` only return (true) once the state word's LOCKED bit was set by
    // this thread's successful Acquire CAS (or a hand-off CAS), and it is cleared (or handed on)
    // only by `unlock`, so at most one owner exists at a time.
    unsafe impl lock_api::RawMutex for RawMutex {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: RawMutex = RawMutex::new();
        type GuardMarker = lock_api::GuardSend;

        #[inline]
        fn lock(&self) {
            RawMutex::lock(self)
        }

        #[inline]
        fn try_lock(&self) -> bool {
            RawMutex::try_lock(self)
        }

        #[inline]
        unsafe fn unlock(&self) {
            // SAFETY: lock_api's contract: the caller holds the lock.
            unsafe { RawMutex::unlock(self) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            RawMutex::is_locked(self)
        }
    }

    // SAFETY: `unlock_fair` releases exactly like `unlock`, only handing ownership to a sleeper.
    unsafe impl lock_api::RawMutexFair for RawMutex {
        #[inline]
        unsafe fn unlock_fair(&self) {
            // SAFETY: lock_api's contract: the caller holds the lock.
            unsafe { RawMutex::unlock_fair(self) }
        }

        #[inline]
        unsafe fn bump(&self) {
            if self.is_contended() {
                // SAFETY: the caller holds the lock (lock_api's contract); it is re-taken at once.
                unsafe { RawMutex::unlock_fair(self) };
                RawMutex::lock(self);
            }
        }
    }

    // SAFETY: timed acquisition has the same exclusion argument as `lock`.
    unsafe impl lock_api::RawMutexTimed for RawMutex {
        type Duration = Duration;
        type Instant = Instant;

        #[inline]
        fn try_lock_for(&self, timeout: Duration) -> bool {
            self.try_lock() || self.try_lock_until(&Deadline::after(timeout))
        }

        #[inline]
        fn try_lock_until(&self, timeout: Instant) -> bool {
            self.try_lock() || RawMutex::try_lock_until(self, &Deadline::at(timeout))
        }
    }

    /// Identifies the current thread for [`ReentrantMutex`](super::ReentrantMutex): the address of
    /// a thread-local, unique among live threads.
    pub struct RawThreadId;

    // SAFETY: two live threads never share a thread-local's address, and the address is non-zero.
    unsafe impl lock_api::GetThreadId for RawThreadId {
        const INIT: RawThreadId = RawThreadId;

        fn nonzero_thread_id(&self) -> NonZeroUsize {
            thread_local!(static ANCHOR: u8 = const { 0 });
            ANCHOR.with(|a| NonZeroUsize::new(a as *const u8 as usize).unwrap_or(NonZeroUsize::MIN))
        }
    }
}

#[cfg(not(loom))]
pub use api::RawThreadId;

/// The guard of a [`Mutex`](crate::Mutex): the lock is held while it lives.
///
/// ```
/// let m = scalelock::Mutex::new(vec![1]);
/// let mut g: scalelock::MutexGuard<'_, Vec<i32>> = m.lock();
/// g.push(2);
/// ```
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;

/// A [`MutexGuard`] mapped to a part of the protected data.
///
/// ```
/// let m = scalelock::Mutex::new((1, 2));
/// let second = scalelock::MutexGuard::map(m.lock(), |p| &mut p.1);
/// assert_eq!(*second, 2);
/// ```
#[cfg(not(loom))]
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// A mutex the owning thread may lock again; it is released when every guard is gone.
///
/// ```
/// let m = scalelock::ReentrantMutex::new(5);
/// let a = m.lock();
/// let b = m.lock(); // same thread: no deadlock
/// assert_eq!(*a + *b, 10);
/// ```
#[cfg(not(loom))]
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;

/// The guard of a [`ReentrantMutex`].
///
/// ```
/// let m = scalelock::ReentrantMutex::new(());
/// let _g: scalelock::ReentrantMutexGuard<'_, ()> = m.lock();
/// ```
#[cfg(not(loom))]
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::RawMutex;
    use crate::wait::{all_far, looks_are_timed, spin_policy, SpinPolicy, DECLINES};
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::time::{Duration, Instant};

    struct Shared {
        lock: RawMutex,
        inside: AtomicBool,
        count: UnsafeCell<u64>,
    }
    // SAFETY: `count` is only touched with `lock` held.
    unsafe impl Sync for Shared {}

    #[test]
    fn a_vigil_goes_on_while_the_lock_is_held_and_ends_at_a_release_or_a_hand_off() {
        use super::{vigil_goes_on, CONTENDED, HANDOFF, LOCKED, MAYBE_SLEEPING, STARVING};
        for others in [0, CONTENDED, MAYBE_SLEEPING, CONTENDED | MAYBE_SLEEPING] {
            assert!(
                vigil_goes_on(LOCKED | STARVING | others),
                "held: {others:#x}"
            );
            assert!(!vigil_goes_on(others), "released: {others:#x}");
            assert!(
                !vigil_goes_on(LOCKED | HANDOFF | others),
                "handed to a sleeper: {others:#x}"
            );
            assert!(
                !vigil_goes_on(LOCKED | STARVING | HANDOFF | others),
                "handed to a starving sleeper: {others:#x}"
            );
        }
    }

    /// Runs rounds of `threads` threads, each taking a fresh lock `iters` times and holding it
    /// for `hold` (busy) each time, until `enough()` says so after a round or `rounds` have
    /// run; checks after each round that the lock admitted one thread at a time and counted
    /// exactly, and that all rounds took less than a minute. Returns whether `enough()` was
    /// reached.
    fn count_in_rounds(
        threads: usize,
        iters: u64,
        hold: Duration,
        rounds: usize,
        enough: impl Fn() -> bool,
    ) -> bool {
        let start = Instant::now();
        let mut reached = false;
        for _ in 0..rounds {
            let shared = Shared {
                lock: RawMutex::new(),
                inside: AtomicBool::new(false),
                count: UnsafeCell::new(0),
            };
            std::thread::scope(|s| {
                let shared = &shared;
                for _ in 0..threads {
                    s.spawn(move || {
                        for _ in 0..iters {
                            shared.lock.lock();
                            assert!(!shared.inside.swap(true, Relaxed), "two threads inside");
                            if !hold.is_zero() {
                                let t0 = Instant::now();
                                while t0.elapsed() < hold {
                                    std::hint::spin_loop();
                                }
                            }
                            // SAFETY: the lock is held.
                            unsafe { *shared.count.get() += 1 };
                            shared.inside.store(false, Relaxed);
                            // SAFETY: locked just above by this thread.
                            unsafe { shared.lock.unlock() };
                        }
                    });
                }
            });
            // SAFETY: every thread has been joined.
            assert_eq!(unsafe { *shared.count.get() }, threads as u64 * iters);
            if enough() {
                reached = true;
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "took {:?}",
            start.elapsed()
        );
        reached
    }

    #[test]
    fn stress_vigils_that_end_at_a_hand_off_lose_no_count_and_all_finish() {
        // Sixteen threads on a lock held for 50 us at a time: on a machine with fewer than
        // sixteen CPUs, waits outlast the starvation mark, most waiters starve, and a
        // starving waiter keeping its vigil often sees the unlock hand the lock to a starving
        // sleeper: its vigil ends, and it sleeps (see the module docs). The lock must still
        // count exactly, admit one thread at a time and let every thread finish. Whether a
        // round has such a vigil depends on how the threads overlap: rounds go on until one
        // has (a few at most). A policy that never spins keeps no vigil, and under one that
        // always spins no waiter starves (it spins until it has the lock).
        use super::VIGIL_HAND_OFFS;
        let before = VIGIL_HAND_OFFS.load(Relaxed);
        let vigils = matches!(spin_policy(), SpinPolicy::Adaptive | SpinPolicy::Fixed(_));
        let seen = count_in_rounds(16, 200, Duration::from_micros(50), 10, || {
            !vigils || VIGIL_HAND_OFFS.load(Relaxed) > before
        });
        assert!(seen, "no vigil ended at a hand-off in 10 rounds");
    }

    #[test]
    fn stress_waiters_that_decline_far_locks_lose_no_count_and_all_finish() {
        // Every moved line reads as far, so waiters decline whenever the releaser takes the
        // lock back within a hand-off's time: a waiter leaves a free lock and dozes, and the
        // lock must still count exactly, admit one thread at a time and let every thread finish
        // (a dozer that keeps missing the lock starves into a hand-off). Whether a round has
        // waiters that decline at all depends on how the threads overlap, which a busy machine
        // decides: rounds go on until one has (a few at most). Only a yielding waiter watches
        // (`SpinPolicy::Adaptive`), and only where looks are timed.
        let _far = all_far();
        let declines_before = DECLINES.load(Relaxed);
        let declines = looks_are_timed() && spin_policy() == SpinPolicy::Adaptive;
        let seen = count_in_rounds(8, 100_000, Duration::ZERO, 10, || {
            !declines || DECLINES.load(Relaxed) > declines_before
        });
        assert!(
            seen,
            "no waiter declined the lock in 10 rounds: the far path did not run"
        );
    }
}
