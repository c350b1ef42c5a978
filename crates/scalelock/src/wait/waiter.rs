//! The [`Waiter`]: the one object a lock's contended path asks "spin once more?" and "sleep
//! now?".
//!
//! A waiter owns everything about one wait that is not the lock's protocol: the spinner and its
//! budget (from the process-wide policy and the lock's learned [`SpinEstimate`]), teaching that
//! estimate whether spinning paid, the deadline, the futex sleeps, and the lockstat record of the
//! wait. The lock's slow path keeps only its state word: it re-reads the word while
//! [`spin`](Waiter::spin) says so, checks [`timed_out`](Waiter::timed_out) before it announces a
//! sleep, sleeps through [`sleep`](Waiter::sleep), and ends with
//! [`acquired`](Waiter::acquired) or [`gave_up`](Waiter::gave_up).
//!
//! Policies, in one place:
//! - `Adaptive`, `Fixed`: spin while the lock's protocol allows it, the budget lasts and a
//!   spinning slot is free (below), then sleep; the first time spinning stops without the lock,
//!   the estimate learns that it did not pay; a wait that spun and then got the lock teaches it
//!   how long that took.
//! - `Never`: the budget is zero: sleep at once.
//! - `Always`: spin whatever the protocol says (sleepers or not), never sleep, but give up at the
//!   deadline like every other policy: a timed wait looks at its deadline while it spins, every
//!   [`DEADLINE_CHECK_EVERY`] steps, whatever the budget.
//!
//! **At most one spinner per CPU but one.** A spinning waiter needs a CPU, and so does the
//! thread it waits for: when runnable threads outnumber CPUs, every spinner beyond that keeps a
//! holder (or a thread with useful work) off a CPU, and spinners that bounce the lock's cache
//! line slow the holder down even when it runs. So the process keeps one count of the waiters
//! spinning right now, in every lock, and a waiter spins only if that count is below the
//! number of online CPUs minus one (at least one); otherwise it sleeps at once, as it would
//! once its budget ran out. That bounds the threads circulating over a contended lock to those
//! the CPUs can run (the holder and the spinners); the surplus sleeps on the futex, and the
//! locks' own wake-up and hand-off rules (the mutex's starvation hand-off, the rwlocks'
//! phase-fair turns) rotate it. `Always` (a pure spinlock, for comparison) ignores the bound.
//! Under loom the bound is off: whether a waiter spins is already explored both ways there.
//!
//! Layering: the waiter sits above `stats` (it records into lockstat), which sits above the
//! wait layer's clock (`deadline.rs`); the spinner, the estimate and the futex know nothing of
//! either.

use super::futex::{self, WaitOutcome};
use super::{now_ns, Deadline, SpinBudget, SpinEstimate, Spinner};
use crate::stats::{self, HoldSampled};
use crate::sync::AtomicU32;
use core::sync::atomic::{AtomicU32 as GlobalU32, Ordering};

/// Spin steps between two looks at the deadline while a timed waiter spins (a step is at most
/// a few hundred nanoseconds; a look is a clock read).
const DEADLINE_CHECK_EVERY: u32 = 16;

/// Whom a wait is recorded for in lockstat.
#[derive(Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// No record (a wait whose fallback is not the lock's own wait).
    Nobody,
    /// The lock at this address (its statistics key); a hand-off is counted as such.
    Lock(usize),
    /// A lock whose holds lockstat samples after a contended acquisition (the mutex).
    Held(&'a dyn HoldSampled),
    /// The lock at this address; the wait is recorded even if it neither spun nor slept (a
    /// writer that found a reader to drain has waited in any case).
    Drain(usize),
}

/// One wait of one thread for one lock. See the module docs.
pub(crate) struct Waiter<'a> {
    estimate: &'a SpinEstimate,
    spinner: Spinner,
    /// `SpinPolicy::Always`: spin even where the protocol would sleep.
    unbounded: bool,
    /// Whether the policy spins at all (its budget is not zero).
    spins: bool,
    /// The outcome of this wait's spin is still to be taught to the estimate.
    learn: bool,
    deadline: Option<&'a Deadline>,
    /// Steps spun since the deadline was last looked at.
    unchecked: u32,
    /// The bound on spinners this waiter counts in ([`SPIN_SLOTS`], but in tests).
    slots: &'static SpinSlots,
    /// Whether this waiter holds one of its slots.
    slot: bool,
    /// A second, fixed spin after the learned one ran out (see [`Waiter::grace`]).
    grace: Option<Spinner>,
    /// When this waiter first slept (monotonic ns; 0: not yet).
    slept_at: u64,
    subject: Subject<'a>,
    rec: stats::Recorder,
}

impl<'a> Waiter<'a> {
    /// A waiter for a lock that waiters write (compare-and-swap): backoff between its looks.
    #[inline]
    pub(crate) fn new(
        estimate: &'a SpinEstimate,
        deadline: Option<&'a Deadline>,
        subject: Subject<'a>,
    ) -> Waiter<'a> {
        Waiter::with_spinner(estimate, estimate.budget(), false, deadline, subject)
    }

    /// A waiter that only reads the word it waits on: short steps (see [`Spinner::polling`]).
    #[inline]
    pub(crate) fn polling(
        estimate: &'a SpinEstimate,
        deadline: Option<&'a Deadline>,
        subject: Subject<'a>,
    ) -> Waiter<'a> {
        Waiter::with_spinner(estimate, estimate.budget(), true, deadline, subject)
    }

    /// A polling waiter whose fallback is a slower way in rather than a sleep (see
    /// [`SpinEstimate::fallback_budget`]); it teaches the estimate only if `learn` (a caller that
    /// samples its waits), and is not recorded in lockstat.
    #[inline]
    pub(crate) fn for_fallback(estimate: &'a SpinEstimate, learn: bool) -> Waiter<'a> {
        let mut w = Waiter::with_spinner(
            estimate,
            estimate.fallback_budget(),
            true,
            None,
            Subject::Nobody,
        );
        w.learn = learn;
        w
    }

    /// A waiter whose budget comes from `policy` rather than the process-wide policy (for
    /// tests, which must not change what other tests' locks do).
    /// Its spinners count against `slots`.
    #[cfg(test)]
    pub(crate) fn under(
        policy: super::SpinPolicy,
        estimate: &'a SpinEstimate,
        deadline: Option<&'a Deadline>,
        slots: &'static SpinSlots,
    ) -> Waiter<'a> {
        let mut w = Waiter::with_spinner(
            estimate,
            estimate.budget_under(policy, 0),
            false,
            deadline,
            Subject::Nobody,
        );
        w.slots = slots;
        w
    }

    #[inline]
    fn with_spinner(
        estimate: &'a SpinEstimate,
        budget: SpinBudget,
        polling: bool,
        deadline: Option<&'a Deadline>,
        subject: Subject<'a>,
    ) -> Waiter<'a> {
        Waiter {
            estimate,
            spinner: if polling {
                Spinner::polling(budget)
            } else {
                Spinner::new(budget)
            },
            unbounded: budget == SpinBudget::Unbounded,
            spins: budget != SpinBudget::Nanos(0),
            learn: true,
            deadline,
            unchecked: 0,
            slots: &SPIN_SLOTS,
            slot: false,
            grace: None,
            slept_at: 0,
            rec: if matches!(subject, Subject::Nobody) {
                stats::Recorder::none()
            } else {
                stats::Recorder::begin() // lockstat: one relaxed load while off
            },
            subject,
        }
    }

    /// Adds a grace spin of `ns`, for [`spin_grace`](Self::spin_grace): a short, fixed spin the
    /// protocol may allow after the learned budget ran out (not under `SpinPolicy::Never`).
    #[inline]
    pub(crate) fn grace(mut self, ns: u32) -> Waiter<'a> {
        self.grace = Some(Spinner::new(SpinBudget::Nanos(ns)));
        self
    }

    /// Spin once more? `allowed`: the lock's protocol allows spinning now (nobody it would barge
    /// ahead of sleeps, say); `SpinPolicy::Always` spins regardless. Returns true after one
    /// backoff step (the caller re-reads its word); false once the budget is spent, the deadline
    /// has passed or spinning is not allowed. The first false after spinning teaches the
    /// estimate that spinning did not pay this time.
    #[inline]
    pub(crate) fn spin(&mut self, allowed: bool) -> bool {
        if (self.unbounded || allowed) && self.in_time() && self.take_slot() && self.spinner.spin()
        {
            return true;
        }
        self.give_back_slot();
        if self.learn && self.spinner.has_spun() {
            self.estimate.record(false, 0);
            self.learn = false;
        }
        false
    }

    /// Whether this waiter may spin now as far as the bound on spinners goes: it holds a slot,
    /// takes a free one, or needs none (`Always`, loom).
    #[inline]
    fn take_slot(&mut self) -> bool {
        if self.slot || self.unbounded || cfg!(loom) {
            return true;
        }
        self.slot = self.slots.try_take();
        self.slot
    }

    #[inline]
    fn give_back_slot(&mut self) {
        if self.slot {
            self.slot = false;
            self.slots.give_back();
        }
    }

    /// After [`spin`](Self::spin) said no: spin one step of the grace spin, if there is one, the
    /// policy spins at all, `allowed`, and it is not spent. Not learned from.
    #[inline]
    pub(crate) fn spin_grace(&mut self, allowed: bool) -> bool {
        if !(self.spins && allowed && self.in_time()) {
            return false;
        }
        self.grace.as_mut().is_some_and(Spinner::spin)
    }

    /// Whether a timed waiter may spin one more step: looks at the deadline once every
    /// [`DEADLINE_CHECK_EVERY`] steps. (A short spin never looks: `timed_out` does, before the
    /// waiter sleeps. Under loom, where one step spends the whole budget, that keeps the models
    /// free of a look that changes nothing.)
    #[inline]
    fn in_time(&mut self) -> bool {
        let Some(d) = self.deadline else { return true };
        self.unchecked += 1;
        if self.unchecked >= DEADLINE_CHECK_EVERY {
            self.unchecked = 0;
            if d.has_passed() {
                return false;
            }
        }
        true
    }

    /// Whether this wait's deadline has passed (never, without one): check before sleeping.
    #[inline]
    pub(crate) fn timed_out(&self) -> bool {
        self.deadline.is_some_and(Deadline::has_passed)
    }

    /// Sleeps on `word` while it holds `expected`, until woken or the deadline; false only if
    /// the deadline passed (see [`futex::wait`]).
    #[inline]
    pub(crate) fn sleep(&mut self, word: &AtomicU32, expected: u32) -> bool {
        self.sleep_outcome(word, expected) != WaitOutcome::TimedOut
    }

    /// [`sleep`](Self::sleep), telling a wake-up from a return without one (see
    /// [`futex::wait_outcome`]).
    #[inline]
    pub(crate) fn sleep_outcome(&mut self, word: &AtomicU32, expected: u32) -> WaitOutcome {
        self.before_sleep();
        futex::wait_outcome(word, expected, self.deadline)
    }

    /// Naps on `word` while it holds `expected`, for `nap` at most (and not past the deadline):
    /// for a waiter that re-checks on its own schedule, not one that relies on a wake-up.
    #[inline]
    pub(crate) fn nap(&mut self, word: &AtomicU32, expected: u32, nap: &Deadline) {
        self.before_sleep();
        let until = match self.deadline {
            Some(d) if d.is_before(nap) => d,
            _ => nap,
        };
        futex::wait(word, expected, Some(until));
    }

    #[inline]
    fn before_sleep(&mut self) {
        if self.slept_at == 0 {
            self.slept_at = now_ns();
        }
        self.rec.sleep();
    }

    /// How long ago this waiter first slept, in ns (0 if it has not slept).
    #[inline]
    pub(crate) fn asleep_ns(&self) -> u64 {
        if self.slept_at == 0 {
            0
        } else {
            now_ns().saturating_sub(self.slept_at)
        }
    }

    /// Nanoseconds spun so far.
    #[inline]
    pub(crate) fn spun_ns(&self) -> u32 {
        self.spinner.spent_ns()
    }

    /// The wait ends with the lock taken; `handoff`: handed over by its releaser (such a waiter
    /// has slept, so its spin is not learned from). Teaches the estimate how long a spin that
    /// paid took, records the wait, and returns true.
    #[inline]
    pub(crate) fn acquired(self, handoff: bool) -> bool {
        if self.learn && !handoff && self.spinner.has_spun() {
            self.estimate.record(true, self.spinner.spent_ns());
        }
        self.finish(true, handoff)
    }

    /// The wait ends without the lock (the deadline passed, or the caller stops waiting for a
    /// faster way in): a spin not yet learned from did not pay. Records the wait, returns false.
    #[inline]
    pub(crate) fn gave_up(self) -> bool {
        if self.learn && self.spinner.has_spun() {
            self.estimate.record(false, 0);
        }
        self.finish(false, false)
    }

    /// The wait of a timed waiter that gave up ends with `got` (it may still have taken the
    /// lock on its way out); nothing is learned. Returns `got`.
    #[inline]
    pub(crate) fn ended(self, got: bool) -> bool {
        self.finish(got, false)
    }

    #[inline]
    fn finish(self, ok: bool, handoff: bool) -> bool {
        let spun = self.spinner.spent_ns();
        match self.subject {
            Subject::Nobody => ok,
            Subject::Lock(key) => self.rec.done_at(key, ok, spun, handoff),
            Subject::Held(lock) => self.rec.done(lock, ok, spun, handoff),
            Subject::Drain(key) => self.rec.done_waited(key, ok, spun),
        }
    }
}

impl Drop for Waiter<'_> {
    /// A waiter that ends (or unwinds: a debug-build deadlock check may panic) while it spins
    /// gives its slot back.
    #[inline]
    fn drop(&mut self) {
        self.give_back_slot();
    }
}

/// A bound on how many threads spin at once (see the module docs): a count of the slots in
/// use and its limit.
pub(crate) struct SpinSlots {
    busy: GlobalU32,
    /// The limit; 0 until first used (then the online CPUs minus one, at least one).
    limit: GlobalU32,
}

/// The process's spinning slots, shared by every lock.
pub(crate) static SPIN_SLOTS: SpinSlots = SpinSlots::new();

impl SpinSlots {
    /// A bound of online CPUs minus one (fixed at first use).
    pub(crate) const fn new() -> SpinSlots {
        SpinSlots {
            busy: GlobalU32::new(0),
            limit: GlobalU32::new(0),
        }
    }

    /// A bound of `limit` slots (for tests).
    #[cfg(test)]
    pub(crate) const fn with_limit(limit: u32) -> SpinSlots {
        SpinSlots {
            busy: GlobalU32::new(0),
            limit: GlobalU32::new(limit),
        }
    }

    /// The number of slots.
    #[inline]
    pub(crate) fn limit(&self) -> u32 {
        let l = self.limit.load(Ordering::Relaxed);
        if l != 0 {
            l
        } else {
            self.count_cpus()
        }
    }

    #[cold]
    fn count_cpus(&self) -> u32 {
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let l = (cpus.clamp(1, 1 << 16) as u32).saturating_sub(1).max(1);
        self.limit.store(l, Ordering::Relaxed);
        l
    }

    /// Takes a slot if one is free. A look first, so that waiters turned away do not write the
    /// count's line; the increment may overshoot the limit for a moment when several waiters
    /// look at once, and gives the slot back if it did.
    #[inline]
    pub(crate) fn try_take(&self) -> bool {
        let limit = self.limit();
        if self.busy.load(Ordering::Relaxed) >= limit {
            return false;
        }
        if self.busy.fetch_add(1, Ordering::Relaxed) < limit {
            return true;
        }
        self.give_back();
        false
    }

    /// Gives a slot back.
    #[inline]
    pub(crate) fn give_back(&self) {
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    /// Slots in use (a racy snapshot; may exceed the limit for a moment, see `try_take`).
    #[cfg(test)]
    pub(crate) fn busy(&self) -> u32 {
        self.busy.load(Ordering::Relaxed)
    }
}
