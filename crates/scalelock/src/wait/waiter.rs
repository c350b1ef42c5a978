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
//! - `Adaptive`: spin while the lock's protocol allows it and the budget lasts, then sleep; a
//!   waiter made [`yielding`](Waiter::yielding) (the mutex's) *yields* the CPU a few times
//!   before it sleeps. After spinning [`PROBE_FACTOR`] times as long as a spin that paid has
//!   taken on this lock (its estimate, at least a short probe), the waiter yields once and
//!   times the yield: one that returns at once ran nobody else (no other thread wants this CPU: spinning
//!   is free, and the waiter spins out its learned budget, four times the lock's estimate); one
//!   that took longer handed the CPU to another runnable thread, so threads outnumber CPUs here,
//!   and the waiter spins only about as long as a spin that paid has taken on this lock (twice
//!   the estimate): a longer spin burns the CPU a preempted holder, or a thread with work,
//!   needs, and drags the lock's cache line away from the CPU that is using it; a holder that is
//!   running and about to release is still caught. Then its wait goes on as yields: a yield
//!   costs the waiter a system call but costs the lock's holder nothing, where a sleep costs the
//!   unlocker a futex wake, so a hot lock keeps running at the speed of its uncontended path on
//!   one CPU while waiters cycle through the other. Only after [`YIELDS`] yields without the
//!   lock does the waiter sleep. A waiter that finds, on one of its [`look`](Waiter::look)s,
//!   that the lock's word came from another CPU's cache and the lock is held (the lock was
//!   released and re-taken, or marked, by others since its previous look) stops spinning after
//!   [`RETAKES_FUTILE`] such looks and goes on to its yields: a lock that changes hands faster
//!   than the waiter catches it (a thread re-taking it with nothing between) is one whose line
//!   the spinner only pulls away from the threads using it, where a long hold leaves the line
//!   in the waiter's cache and its waiter spins on. Such a waiter times its yields, and the
//!   first one that ran nobody (no other thread wanted its CPU, so yielding is spinning by
//!   another name) ends them: it sleeps, leaving the lock to the threads using it until an
//!   unlock wakes it (see [`yielded`](Waiter::yielded)). But where the lock's last
//!   [`FUTILE_WAITS_DOZE`] waits all spun in vain too, the lock is the bottleneck: its
//!   threads re-take it faster than any waiter catches it, wait after wait, with little work
//!   between acquisitions to run in parallel. Then the waiter whose spinning proved futile
//!   *dozes* instead of yielding (see [`doze`](Waiter::doze)): a yield keeps it runnable (it
//!   comes back at once where nobody else wants the CPU, or hands the CPU to another thread
//!   that may be a waiter of the same lock), and either way the lock keeps moving between
//!   CPUs, paying a cache-line transfer each time; a dozer is off its CPU for about a wake-up
//!   latency and touches nothing, so the lock stays with the CPU whose threads use it (the
//!   surplus of a Malthusian lock, without a queue) and no release owes it a wake-up. Where
//!   spins still pay now and then (threads have work between acquisitions), the waiter yields
//!   and stays runnable: that work runs in parallel on the other CPUs. A protocol may allow
//!   yields where it forbids spinning (the mutex: while sleepers are announced, see
//!   [`spin_or_yield`](Waiter::spin_or_yield)).
//!   A re-take seen once does not tell the two kinds of lock apart, though: a lock whose users
//!   leave it free for a while between acquisitions (work outside the lock, which runs in
//!   parallel on the waiter's CPU once the waiter has the lock) is seen re-taken as often as
//!   one taken back at once, whenever the waiter looks during a hold. So a look that finds the
//!   lock re-taken may first make a *catch test* (see [`catch_test`]): the waiter polls the
//!   word for up to [`CATCH_ROUND_TRIPS`] of the line's round trips (as that look took it) for
//!   the release, then leaves the word alone as long again and reads it once more: free then,
//!   the lock's users leave it longer than a hand-off takes, and the test passed. A lock keeps
//!   its waiters' results in a catch score (`SpinEstimate::caught`: a pass adds one, a failure
//!   takes three off, so only a lock whose tests pass more than three times in four keeps a
//!   score). Once the score has reached [`CATCH_TAKE_SCORE`], a passed test ends the look
//!   as a plain one: the waiter has not seen a re-take, and the slow path takes the free
//!   lock; a wait that ends so is no verdict, and the lock's watch cycle moves on, so most of
//!   the waits of a lock whose tests keep passing read its word plainly, as waiters do on
//!   locks where looks find nothing. Until then, and on a failed test, the look counts as a
//!   re-take (the [`RETAKES_FUTILE`]th stops the waiter's spinning, and its wait restarts
//!   the watch cycle), though it returns the last value the test read, which the slow path
//!   takes if it is free, as it would any value it reads. Where the score is 0, one re-take
//!   look in [`CATCH_TEST_EVERY`] is tested (a coin from the look's clock reading), so a lock whose
//!   users change their ways is found out. The test must not take a lock that its users
//!   re-take at once: on such a lock a waiter's read often lands between a release and the
//!   next acquisition, so half its tests may pass; were those waits to end as no verdict,
//!   the watch cycle would move on, unwatched waiters would spin and take the lock from the
//!   CPU its threads run on, and the lock's traffic would move between CPUs, breaking the
//!   arrangement that re-take verdicts buy (one CPU's threads use the lock while the others
//!   doze). The score's threshold keeps such a lock's waits verdicts.
//!   A watching waiter whose look finds the lock *free*, its line fetched from a *far* CPU
//!   (one that shares no cache level with the waiter's: the load took longer than one from
//!   memory, see `look`), does not take it at once. A hand-off there moves the lock's line,
//!   and the data it guards, across that boundary, and back when the releaser's CPU takes the
//!   lock next: two transfers on the lock's critical path for every acquisition, where the
//!   releaser's own next acquisition is a hit in its cache. Whether that pays depends on how
//!   long the releaser leaves the lock, which the waiter tests: it waits, without looking, as
//!   long as the two transfers take, and looks again. A lock still free is taken (its users
//!   leave it longer than a hand-off costs, so moving it lets their work run in parallel); a
//!   lock taken again meanwhile is *declined* (see [`declined`](Waiter::declined)): its threads
//!   re-take it faster than it could cross, and it runs faster where it is, so the waiter dozes
//!   as a futile spinner does. The test is made only where the lock's holds are shorter than
//!   a hand-off (this waiter watched it held for less than the two transfers take, and spins
//!   that paid on this lock took less, its estimate): there a hand-off costs more than the
//!   hold it moves. Where holds are longer, a hand-off is cheap next to the work it lets run
//!   in parallel, and the test would only leave the lock idle for its length: the waiter takes
//!   the lock at once. NUMA-aware locks (lock cohorting, CNA) keep a lock within a node for
//!   the same reason; here the waiter measures the boundary rather than being told the
//!   machine's layout, and the releaser's behaviour decides, not a rule.
//!   A waiter whose sleep was *refused* (it announced itself on the lock's word, and before the
//!   kernel compared the word the lock had been released and taken again, see
//!   [`refused`](Waiter::refused)) *dozes* from then on instead of sleeping on the word: a
//!   timed sleep of about one wake-up latency that nobody has to end (see
//!   [`doze`](Waiter::doze)). The lock changes hands faster than a thread gets into the kernel;
//!   an announced sleeper would make each release pay a futex wake for a thread that is not
//!   asleep yet, and be refused again, while a dozer leaves the word alone, so the threads using
//!   the lock keep to their fast paths. The lock's protocol bounds the doze as it bounds every
//!   sleep: a waiter away for longer than its starvation bound sleeps on the word again, to
//!   have the lock handed over (the mutex's `STARVING`).
//!   Timing a look costs two reads of the CPU's time-stamp counter, which a lock that changes
//!   hands every few hundred nanoseconds notices, while on many locks the looks find nothing
//!   to act on. So a lock's waiters watch (time their looks) in a cycle, kept in the lock's
//!   estimate word (see `SpinEstimate::watch_turn`): the first `WATCHED_PER_CYCLE` waits of
//!   every `WATCH_CYCLE` watch, the others read the word plainly and spin as a waiter does
//!   where looks are not timed; a watched wait that finds the lock re-taken, or declines it,
//!   restarts the cycle, so a lock whose looks keep finding something is watched on every
//!   wait.
//!   The rwlock's writers yield once they find another *writer* holding the lock (see
//!   [`yield_from_now`](Waiter::yield_from_now)): when threads outnumber CPUs, a writer that
//!   slept there went to the back of a line of writers woken one at a time, each of which
//!   could wait milliseconds for a CPU while the readers behind it waited too, where a
//!   yielding writer hands its CPU to runnable threads (the holder among them) and is back
//!   at the lock in a scheduler's turn. Readers, and writers that only drain readers, do not
//!   yield: they wait for a release that comes within a spin, and a yield there handed the CPU
//!   to a reader that kept it for a time slice (the bench's `read-mostly`, `recursive-read`
//!   and `rwlock-hammer` lost throughput and tail both when every writer yielded).
//!   Yields are for threads that wait often (see `cadence`): at its first yield, a waiter asks
//!   whether its thread has run for more than `SELDOM_NS` (a round, see `cadence`) of CPU time per
//!   wait it began lately; if so, it makes no yields, and spins its learned budget and sleeps as a
//!   waiter that may not yield does. A yield can cost its waiter a round of the other threads
//!   runnable on its CPU (Linux's EEVDF scheduler moves a yielder's deadline a time slice later,
//!   behind the threads that had not run their slice yet; kernels that make a yield forfeit the
//!   rest of the slice, as Linux does since 2025, also count the slice given away as run, so that
//!   the yielder's later turns come later too, where a sleeper's do not) and saves, against a
//!   sleep, the unlocker's futex wake and the waiter's wake-up. A thread that waits again and again
//!   on a hot lock saves that on every wait, and its rounds are short: the other runnable threads
//!   are mostly the lock's users and waiters, which soon yield, sleep, or take the lock and leave
//!   it. A thread that waits seldom, between stretches of other work (a server's thread, on a lock
//!   that most of its acquisitions find free), saves little, and the threads it would yield to are
//!   working too, each for up to a whole time slice: the round becomes its wait's latency, where a
//!   sleeper is woken by the release and placed by the scheduler for the time it spent off its CPU,
//!   not behind everyone. CPU time, not time: a thread that waits often but was preempted between
//!   two waits (threads outnumber CPUs) has done no other work meanwhile. A wait that ends within
//!   its spin never asks.
//!   A thread that keeps taking a hot lock, waiting only within its spin, keeps its CPU until
//!   its time slice runs out, while the lock's waiters that yielded, and threads preempted,
//!   are runnable behind it: each of them is back at the lock only after the slices of the
//!   threads ahead of it, and the longest a thread goes without the lock grows with the
//!   number of threads per CPU times a slice. So a waiter made [`rotating`](Waiter::rotating)
//!   (the mutex's, and the rwlock's readers and writers) whose thread has kept its CPU for
//!   longer than `cadence::ROTATE_NS` since it last gave the CPU away (a yield or a sleep,
//!   a condvar's too) begins its wait with a yield, the *rotation* (see `cadence`): the
//!   threads behind it get a turn about that often, and the lock goes round them. Where
//!   the thread's yields lately ran nobody (no thread was runnable behind it), its rotation
//!   waits longer, up to about a scheduler's slice: there is nobody to hand the CPU to (the
//!   *lone* stretch, see `cadence`). A yielding waiter's rotation is one of its yields and
//!   stands for its probe yield, which tells the same thing (whether other threads want this
//!   CPU). A yield's length is a round of the threads runnable ahead of it, each keeping the
//!   CPU for its stretch, so a fixed stretch makes rounds grow with the threads per CPU. The
//!   rwlock's waits, which nothing else bounds (no hand-off to a starving waiter), rotate
//!   [`in rounds`](Waiter::rotating_in_rounds): each yield of a wait tells `cadence` how long
//!   it took, and the thread's stretch scales so that a round lasts about `cadence::ROUND_NS`
//!   (never shorter than `cadence::ROTATE_MIN_NS`). The mutex keeps the fixed stretch:
//!   rotating more often cost its lock-bound cells the switches (the bench's `mutex-short`
//!   and `log-append`, by how much depending on the machine's phase: the scaled stretch
//!   shortened their longest stalls where threads outnumber CPUs, but the throughput it cost
//!   went from nothing to a fifth from one hour to the next). Its starvation bound does not
//!   bound its waiters' yields: a waiter looks at the mark only when a yield returns, and
//!   where threads per CPU are many one yield can outlast the mark many times; what keeps a
//!   yield short there is that the threads ahead of it rotate on time. So a thread's clock
//!   is read by time, not by count: a few times per stretch, however far apart its waits lie
//!   (see `cadence`); where each of its waits came tens of microseconds after the last
//!   (`mutex-long`), one reading in sixteen waits let it keep its CPU for several stretches.
//!   Nothing rotates where the thread waits seldom, nor a yielding waiter whose lock's waits
//!   keep spinning in vain: it dozes, and the lock's flow there is one CPU's threads (see
//!   above). Readers of a `BiasedRwLock` that take their slots never wait, and so never
//!   rotate; their threads rotate at their writes instead, which begin no wait (see
//!   [`rotate_outside_wait`]).
//!   The first time spinning stops without the lock, the estimate learns that it did not pay;
//!   a wait that spun and then got the lock teaches it how long that took. A yielding
//!   waiter's spin whose budget the probe yield's cap ended teaches nothing: the cap, not the
//!   lock, ended it, at twice the estimate (a spin that the protocol or re-takes ended still
//!   teaches a failure, and counts toward `FUTILE_WAITS_DOZE`). Learning from such spins
//!   taught the estimate to shrink whenever the lock came back later than that, and with the
//!   estimate the next waiter's cap, until most waits ended in yields: the bench's
//!   `mutex-short` then ran in one of two states from run to run, in the slower of which a
//!   CPU often had no waiter spinning when the lock was released on the other, so that the
//!   releaser's CPU took it back and the two CPUs took turns less.
//! - `Fixed`: spin while the protocol allows it and the budget lasts, then sleep (no yields:
//!   the fixed spin is the whole policy).
//! - `Never`: the budget is zero: sleep at once.
//! - `Always`: spin whatever the protocol says (sleepers or not), never sleep, but give up at the
//!   deadline like every other policy: a timed wait looks at its deadline while it spins, every
//!   [`DEADLINE_CHECK_EVERY`] steps, whatever the budget.
//!
//! Layering: the waiter sits above `stats` (it records into lockstat), which sits above the
//! wait layer's clock (`deadline.rs`); the spinner, the estimate, the timed look and the futex
//! know nothing of the waiter or of `stats` (the spinner and the look read the clock only to
//! calibrate themselves).

use super::cadence::{self, QUICK_YIELD_NS};
use super::futex::{self, WaitOutcome};
use super::look::{look, ticks_ns};
use super::spin::{yield_cpu, DEADLINE_CHECK_EVERY, MIN_PROBE_NS};
use super::{now_ns, Deadline, SpinBudget, SpinEstimate, Spinner};
use crate::stats::{self, HoldSampled};
use crate::sync::{AtomicU32, Ordering};

/// Yields an `Adaptive` waiter makes, at most, between its spin and its sleep (with the probe
/// yield). parking_lot's waiters also yield a handful of times before they park; more would
/// keep a long-waiting thread runnable (and competing for a CPU) for longer than a sleep costs.
pub(crate) const YIELDS: u32 = if cfg!(loom) { 1 } else { 7 };

/// The probe yield comes after this many times the lock's estimate of spinning (at least
/// `MIN_PROBE_NS`): the estimate is learned from waits that ended within the spin, so a probe at
/// the estimate itself would cut short every wait longer than it, and the estimate, learning
/// only from the shorter ones, would shrink below the lock's hold time.
pub(crate) const PROBE_FACTOR: u32 = 4;

/// Looks at which the lock had been released and re-taken by other threads since this waiter's
/// previous look (see [`Waiter::look`]) after which its spinning is futile: two. One such look
/// does not tell a lock re-taken at once from one whose users leave it free between holds: a
/// release is missed whenever the lock's free gap falls between two of the waiter's looks
/// (a spin step, a yield, a clock read), and a waiter that then stopped spinning went on
/// to yields and, where a yield ran nobody, to a sleep, which left the lock to one CPU while
/// the work between its holds could have run in parallel. A lock re-taken at once is seen
/// re-taken again at the next look; that second look costs its threads one more cache-line
/// transfer, once per wait, and such a lock's waits are few (its threads keep it on one CPU
/// while the waiters doze).
pub(crate) const RETAKES_FUTILE: u32 = 2;

/// A catch test (see the module docs) polls for the lock's release for up to this many
/// round trips of its line, then leaves the lock alone as long again before it looks: a lock
/// still free after that is left free longer than a hand-off takes.
pub(crate) const CATCH_ROUND_TRIPS: u32 = 2;

/// A passed catch test ends the look with the free lock only once the lock's catch score
/// (see `SpinEstimate::catch_score`) has reached this: a few passes in a row with at most
/// the odd failure between, which a lock whose tests pass half the time does not reach.
pub(crate) const CATCH_TAKE_SCORE: u32 = 4;
const _: () = assert!(CATCH_TAKE_SCORE <= super::spin::CATCH_SCORE_MAX);

/// Where a lock's catch score is 0, one re-take look in this many makes a catch test: often
/// enough to find out a lock whose users began to leave it free, rarely enough that the
/// tests cost a lock whose users re-take it at once little of its time.
pub(crate) const CATCH_TEST_EVERY: u64 = 16;

/// A waiter whose spinning proved futile dozes instead of yielding when at least this many of
/// its lock's waits in a row spun without the lock before it began (see the module docs): one
/// futile spin is a hand-off race lost; a run of them is a lock re-taken faster than waiters
/// catch it, wait after wait. Less than [`EXPLORE_EVERY`](super::spin::EXPLORE_EVERY), where
/// the lock's estimate restarts its count.
pub(crate) const FUTILE_WAITS_DOZE: u32 = 6;
const _: () = assert!(FUTILE_WAITS_DOZE < super::spin::EXPLORE_EVERY);

/// The shortest doze (see [`Waiter::doze`]): below it a doze costs the waiter more in its own
/// timer and system calls than it leaves the lock to the threads using it.
pub(crate) const DOZE_MIN_NS: u64 = 10_000;

/// The longest doze: a lock that its users stop re-taking while a waiter dozes stays free until
/// the doze ends, so a doze is kept short against the mutex's 1 ms starvation bound.
pub(crate) const DOZE_MAX_NS: u64 = 100_000;
const _: () = assert!(DOZE_MIN_NS <= DOZE_MAX_NS);

/// Locks declined so far in this process (tests only; see [`Waiter::declined`]).
#[cfg(test)]
pub(crate) static DECLINES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

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
    /// A second, fixed spin after the learned one ran out (see [`Waiter::grace`]).
    grace: Option<Spinner>,
    /// When this waiter first gave its CPU away: yielded, slept or dozed (monotonic ns; 0:
    /// not yet; see [`Waiter::away_ns`]).
    away_at: u64,
    /// When its last yield returned (monotonic ns; 0: not yet).
    back_at: u64,
    /// Nanoseconds of its [`vigil`](Waiter::vigil)s: spun, for lockstat, not for the
    /// estimate.
    vigil_ns: u32,
    /// Yields left before the waiter must sleep (0 for policies other than `Adaptive`).
    yields: u32,
    /// The probe yield has been made (see the module docs).
    probed: bool,
    /// The probe yield capped the spin of this yielding waiter: a budget run out under the
    /// cap teaches the estimate nothing.
    capped: bool,
    /// Nanoseconds of spinning before the probe yield: [`PROBE_FACTOR`] times as long as a spin
    /// that paid has taken on this lock (its estimate), at least `MIN_PROBE_NS`.
    probe_at: u32,
    /// Looks that found the lock released and re-taken without this waiter (see
    /// [`look`](Waiter::look)).
    retakes: u32,
    /// Waits on this lock in a row whose spin did not pay, when this one began (see
    /// [`FUTILE_WAITS_DOZE`]).
    futile_waits: u32,
    /// A sleep of this waiter was refused, its spinning proved futile on a lock whose waits
    /// keep spinning in vain, or it declined a free lock released on a far CPU: it dozes from
    /// now on (see [`Waiter::dozing`]).
    dozing: bool,
    /// Its last look declined a free lock (see [`Waiter::declines`]).
    declined: bool,
    /// A yielding waiter (see [`Waiter::yielding`]): its lock's watch cycle moves on when it
    /// ends.
    yielder: bool,
    /// Its protocol let it yield during the wait (see [`Waiter::yield_from_now`]), once.
    yields_granted: bool,
    /// Whether this waiter's thread waits seldom (see [`cadence`]); asked at its first yield
    /// (`None`: not yet).
    seldom: Option<bool>,
    /// This waiter times its looks when it watches (see [`Waiter::watches`]): its lock's
    /// watch cycle says so (see `SpinEstimate::watch_turn`).
    watch: bool,
    subject: Subject<'a>,
    rec: stats::Recorder,
}

/// The rotation (see the module docs) for a thread that is not waiting but is about to do
/// something that may keep the lock's other threads waiting: a `BiasedRwLock` writer about to
/// revoke the bias. Readers that take their slots never wait, so their threads never rotate,
/// and each keeps its CPU for whole time slices while the threads behind it on that CPU wait
/// their turns; their writes are where they can give the CPU away. As a wait that rotates in
/// rounds would: under `SpinPolicy::Adaptive`, where this thread's ask says to read the clock
/// (see `cadence::rotation_ask`), it has kept its CPU for longer than its stretch, and it does
/// not wait seldom, it yields. It begins no wait (`cadence::wait_begins`): counted as waits,
/// these rotations cost the bench's `read-mostly` cells throughput (not through their own
/// switches, which were few; the likely path is that a thread that begins more waits is taken
/// to wait often, and its real waits then yield where they would sleep). Never under loom or
/// Miri, whose threads never ask.
#[inline]
pub(crate) fn rotate_outside_wait() {
    rotate_outside_wait_under(super::spin_policy());
}

/// [`rotate_outside_wait`], under `policy`: only `Adaptive` rotates.
#[inline]
pub(crate) fn rotate_outside_wait_under(policy: super::SpinPolicy) {
    if policy == super::SpinPolicy::Adaptive && cadence::rotation_ask() {
        rotate_now();
    }
}

/// The clock-reading part of [`rotate_outside_wait`]; out of line, as `Waiter::rotate`.
#[cold]
#[inline(never)]
fn rotate_now() {
    if cadence::rotation_due(true) && !cadence::waits_seldom() {
        yield_for_a_round(now_ns());
    }
}

/// Yields the CPU, begun at `t0_ns`, and tells `cadence` how long the round took (see
/// `cadence::yield_took`): every yield a wait makes, and a rotation outside a wait. Returns
/// when the yield returned (monotonic ns).
#[inline]
fn yield_for_a_round(t0_ns: u64) -> u64 {
    let back = yield_cpu();
    cadence::yield_took(back.saturating_sub(t0_ns));
    back
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

    /// A waiter that only reads the word it waits on while it spins (it may write the word
    /// once it has read a value it can act on, as the mutex's waiter takes a lock it read
    /// free): short steps (see [`Spinner::polling`]).
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
    #[cfg(test)]
    pub(crate) fn under(
        policy: super::SpinPolicy,
        estimate: &'a SpinEstimate,
        deadline: Option<&'a Deadline>,
    ) -> Waiter<'a> {
        Waiter::under_with_floor(policy, estimate, deadline, 0)
    }

    /// [`under`](Self::under), with a floor under an `Adaptive` budget (as a lock's half a
    /// wake-up latency).
    #[cfg(test)]
    pub(crate) fn under_with_floor(
        policy: super::SpinPolicy,
        estimate: &'a SpinEstimate,
        deadline: Option<&'a Deadline>,
        floor: u32,
    ) -> Waiter<'a> {
        Waiter::with_spinner(
            estimate,
            estimate.budget_under(policy, floor),
            false,
            deadline,
            Subject::Nobody,
        )
        .yielding_under(policy)
        .thread_waits_seldom(false)
    }

    /// This waiter as one whose thread waits `seldom` or not (see [`cadence`]), instead of
    /// asking at its first yield (tests only; a test's thread waits as the test runner lets it).
    #[cfg(test)]
    pub(crate) fn thread_waits_seldom(mut self, seldom: bool) -> Waiter<'a> {
        self.seldom = Some(seldom);
        self
    }

    /// This waiter as one not made yielding (as the rwlock's): it yields only once
    /// [`yield_from_now_under`](Self::yield_from_now_under) lets it (tests only).
    #[cfg(test)]
    pub(crate) fn not_yielding(mut self) -> Waiter<'a> {
        self.yields = 0;
        self.yielder = false;
        self.watch = false;
        self
    }

    #[inline]
    fn with_spinner(
        estimate: &'a SpinEstimate,
        budget: SpinBudget,
        polling: bool,
        deadline: Option<&'a Deadline>,
        subject: Subject<'a>,
    ) -> Waiter<'a> {
        cadence::wait_begins();
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
            grace: None,
            away_at: 0,
            back_at: 0,
            vigil_ns: 0,
            yields: 0,
            probed: false,
            capped: false,
            probe_at: estimate
                .get()
                .saturating_mul(PROBE_FACTOR)
                .max(MIN_PROBE_NS),
            retakes: 0,
            futile_waits: estimate.futile_waits(),
            dozing: false,
            declined: false,
            yielder: false,
            yields_granted: false,
            seldom: None,
            watch: true,
            rec: if matches!(subject, Subject::Nobody) {
                stats::Recorder::none()
            } else {
                stats::Recorder::begin() // lockstat: one relaxed load while off
            },
            subject,
        }
    }

    /// Lets this waiter yield under `SpinPolicy::Adaptive`: a probe yield once it has spun a few
    /// times as long as a spin that paid takes on its lock, and up to [`YIELDS`] yields in all before
    /// it sleeps (see the module docs). A lock opts in where
    /// its waiters are better off giving their CPU away than spinning for it when threads
    /// outnumber CPUs.
    #[inline]
    pub(crate) fn yielding(self) -> Waiter<'a> {
        self.yielding_under(super::spin_policy())
    }

    /// Begins this waiter's wait with the *rotation* yield, under `SpinPolicy::Adaptive`, if
    /// its thread has kept its CPU for longer than `cadence::ROTATE_NS` (or its lone stretch,
    /// see `cadence`) since it last gave the CPU away (see the module docs). Make it yielding
    /// first, if it is to be.
    #[inline]
    pub(crate) fn rotating(self) -> Waiter<'a> {
        self.rotating_under(super::spin_policy(), false)
    }

    /// [`rotating`](Self::rotating), where the thread's CPU time is measured against its
    /// stretch scaled to its rounds (`cadence::ROUND_NS`, see `cadence::yield_took`) rather
    /// than the fixed `cadence::ROTATE_NS`: for a lock whose waits nothing else bounds (the
    /// rwlock's, which has no hand-off to a starving waiter; see the module docs).
    #[inline]
    pub(crate) fn rotating_in_rounds(self) -> Waiter<'a> {
        self.rotating_under(super::spin_policy(), true)
    }

    /// [`rotating`](Self::rotating), or [`rotating_in_rounds`](Self::rotating_in_rounds) if
    /// `in_rounds`, under `policy`: only `Adaptive` rotates. Some waits ask whether it is due
    /// (see `cadence::rotation_ask`: a few per stretch, one in `cadence::ROTATE_ASK_EVERY` at
    /// most; never under loom, whose models explore the yields). Not a yielding waiter whose
    /// lock's waits keep spinning in vain: it dozes instead, and the lock's flow is one CPU's
    /// threads (see the module docs).
    #[inline]
    pub(crate) fn rotating_under(
        mut self,
        policy: super::SpinPolicy,
        in_rounds: bool,
    ) -> Waiter<'a> {
        if policy == super::SpinPolicy::Adaptive
            && !(self.yielder && self.futile_waits >= FUTILE_WAITS_DOZE)
            && cadence::rotation_ask()
        {
            self.rotate(in_rounds);
        }
        self
    }

    /// Lets this waiter yield from now on, as [`yielding`](Self::yielding) does, for a protocol
    /// that finds out during the wait that yielding pays (the rwlock's writer, once another
    /// writer holds the lock; see the module docs). Unlike a waiter made yielding, it does not
    /// take part in its lock's watch cycle: its slow path takes no timed looks. Only the first
    /// call counts (the yields it grants are not granted again once spent), and a waiter made
    /// yielding is left as it is.
    #[inline]
    pub(crate) fn yield_from_now(&mut self) {
        self.yield_from_now_under(super::spin_policy());
    }

    /// [`yield_from_now`](Self::yield_from_now), under `policy`: only `Adaptive` yields.
    #[inline]
    pub(crate) fn yield_from_now_under(&mut self, policy: super::SpinPolicy) {
        if !self.yielder && !self.yields_granted {
            self.yields_granted = true;
            self.yields = yields_under(policy);
            // Looks are not timed: the slow path reads its word plainly.
            self.watch = false;
        }
    }

    /// [`yielding`](Self::yielding), under `policy`: only `Adaptive` yields. A yielding waiter
    /// watches its lock (times its looks) when the lock's watch cycle says so (see
    /// `SpinEstimate::watch_turn`), and moves the cycle on when its wait ends.
    #[inline]
    fn yielding_under(mut self, policy: super::SpinPolicy) -> Waiter<'a> {
        self.yields = yields_under(policy);
        self.yielder = self.yields > 0;
        // Under loom looks are never timed: reading the cycle would only add to the models.
        self.watch = cfg!(loom) || self.estimate.watch_turn();
        self
    }

    /// Makes the rotation yield if this waiter's thread has kept its CPU for longer than
    /// `cadence::ROTATE_NS` (its scaled stretch, if `in_rounds`) since it last gave the CPU
    /// away (see `cadence::rotation_due`) and does not wait seldom. A yielding waiter's
    /// rotation is one of its yields and stands for its probe yield: it tells the same thing,
    /// whether other threads want this CPU. Out of line: where a thread's waits lie close
    /// together, one in `cadence::ROTATE_ASK_EVERY` comes here.
    #[cold]
    #[inline(never)]
    fn rotate(&mut self, in_rounds: bool) {
        if !cadence::rotation_due(in_rounds) || !self.may_yield() {
            return;
        }
        if self.yields == 0 {
            self.yield_timed();
        } else {
            self.probe_yield();
        }
    }

    /// Makes the probe yield (see the module docs), one of this waiter's yields, which it may
    /// make: a yield that ran another thread means another thread wanted this CPU, so the
    /// waiter spins only about as long as a spin that paid took on this lock (twice the
    /// estimate, so that it can still grow), not the margin an idle CPU affords; the rest of
    /// its wait is yields.
    #[inline]
    fn probe_yield(&mut self) {
        self.probed = true;
        self.yields -= 1;
        let took = self.yield_timed();
        self.probe_took(took);
    }

    /// The probe yield took `took_ns`: one that ran another thread (longer than
    /// [`QUICK_YIELD_NS`]) caps the spin at twice the estimate, and, for a waiter made
    /// [`yielding`](Self::yielding), a spin whose budget the cap ends is not learned from (see
    /// the module docs).
    #[inline]
    pub(crate) fn probe_took(&mut self, took_ns: u64) {
        if took_ns > QUICK_YIELD_NS {
            self.spinner.cap_ns(self.estimate.get().saturating_mul(2));
            // Only a waiter made yielding (the mutex's): the rwlock's writers share their
            // lock's estimate with its readers, and are left as they were.
            self.capped = self.yielder;
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
    /// backoff step or one yield (the caller re-reads its word); false once the budget and the
    /// yields are spent, the deadline has passed or waiting awake is not allowed. The first
    /// time spinning stops, the estimate learns that it did not pay this time.
    #[inline]
    pub(crate) fn spin(&mut self, allowed: bool) -> bool {
        self.spin_or_yield(allowed, allowed)
    }

    /// [`spin`](Self::spin), for a protocol that allows yielding (`yield_ok`) where it forbids
    /// spinning (`spin_ok`): a yielding waiter that finds the lock free may take it ahead of a
    /// sleeper, which a protocol without a hand-off for starving sleepers must not allow.
    #[inline]
    pub(crate) fn spin_or_yield(&mut self, spin_ok: bool, yield_ok: bool) -> bool {
        if (self.unbounded || spin_ok) && self.retakes < RETAKES_FUTILE && self.in_time() {
            if !self.probed && self.yields > 0 && self.spinner.spent_ns() >= self.probe_at {
                self.probed = true;
                if self.may_yield() {
                    self.probe_yield();
                    return true;
                }
            }
            if self.spinner.spin() {
                return true;
            }
            // The budget ran out: under the probe's cap, that is no verdict (see the module
            // docs); a spin ended by the lock's protocol or by re-takes still is.
            if self.capped {
                self.learn = false;
            }
        }
        if self.learn && self.spinner.has_spun() {
            self.estimate.record(false, 0);
            self.learn = false;
        }
        // Under loom a yield is modelled only where it adds a path a spin step has not: a waiter
        // awake while the protocol forbids spinning.
        let modelled = !cfg!(loom) || !spin_ok;
        // Futile spinning on a lock whose waits keep spinning in vain: doze from now on
        // instead of yielding (see the module docs). Re-takes are counted only while the
        // waiter may still yield.
        if self.retakes >= RETAKES_FUTILE
            && self.yields > 0
            && self.futile_waits >= FUTILE_WAITS_DOZE
        {
            self.yields = 0;
            self.dozing = true;
        }
        if yield_ok && modelled && self.yields > 0 && !self.timed_out() && self.may_yield() {
            self.yields -= 1;
            let took = self.yield_timed();
            if self.retakes >= RETAKES_FUTILE {
                self.yielded(took);
            }
            return true;
        }
        false
    }

    /// Whether this waiter, granted a yield, may make it: asks once, at its first yield,
    /// whether its thread waits seldom (see [`cadence`]); one that does makes no yields.
    #[inline]
    fn may_yield(&mut self) -> bool {
        let seldom = *self.seldom.get_or_insert_with(cadence::waits_seldom);
        if seldom {
            self.yields = 0;
        }
        !seldom
    }

    /// A yield made after this waiter's spinning was found futile took `took_ns`. One that came
    /// back sooner than [`QUICK_YIELD_NS`] ran no other thread: nobody wants this CPU, so a
    /// yield is only a spin by another name (the waiter stays on its CPU and looks again), and
    /// its spinning was futile; its yields end and it sleeps next, which leaves the lock to the
    /// threads using it until an unlock wakes it. One that ran another thread gave the CPU to
    /// work, and the yields go on.
    #[inline]
    pub(crate) fn yielded(&mut self, took_ns: u64) {
        if took_ns <= QUICK_YIELD_NS && self.retakes >= RETAKES_FUTILE {
            self.yields = 0;
        }
    }

    /// Reads the lock's `word` for the lock's slow path, between two spin steps, and returns it. A
    /// yielding waiter that still spins, on its lock's watch turn (see the module docs), times the
    /// read (see [`look`]): if the word's line came from another CPU and the lock is still `held`
    /// by the value read, the lock was released and re-taken (or marked) by other threads since
    /// this waiter's previous look (unless a catch test, made where the lock's catch score
    /// asks for one, finds that its users leave it free for longer than a hand-off; see the
    /// module docs and [`catch_test`]), and after [`RETAKES_FUTILE`] such looks the waiter stops
    /// spinning and goes on to its yields (then its sleep). The lock is changing hands at a rate
    /// this waiter does not catch (a thread that re-takes it at once, with nothing between), and
    /// each look takes its cache line away from the threads that use it. A long hold leaves the
    /// line where the waiter read it last, so its waiter spins on, about as long as a spin that
    /// paid has taken on the lock. A look that finds the lock free on a line fetched from a far
    /// CPU, where the lock's holds are shorter than a hand-off (the spin so far and the lock's
    /// estimate both are), waits (at most [`DOZE_MIN_NS`], and without looking) as long as a
    /// hand-off would take, looks again, and returns what that second look read; if the lock was
    /// taken meanwhile, the waiter has [`declined`](Self::declined) it. Other waiters, and every
    /// waiter where looks are not timed, read the word plainly.
    #[inline]
    pub(crate) fn look(&mut self, word: &AtomicU32, held: impl Fn(u32) -> bool) -> u32 {
        if !self.watches() {
            return word.load(Ordering::Relaxed);
        }
        let l = look(word);
        if !l.moved {
            return l.value;
        }
        if held(l.value) {
            return match self.catch(word, &held, &l) {
                Ok(free) => free,
                Err(value) => {
                    self.retaken();
                    value
                }
            };
        }
        if !l.far {
            return l.value;
        }
        // Released on a far CPU: give its threads the time of a hand-off (the line there and
        // back) to take the lock again, without looking meanwhile, then look once more.
        let hand_off = ticks_ns(l.took).saturating_mul(2).min(DOZE_MIN_NS) as u32;
        if !holds_shorter_than(self.estimate.get(), self.spinner.spent_ns(), hand_off) {
            return l.value;
        }
        stay_away(hand_off);
        let again = look(word);
        if held(again.value) {
            self.declined();
        }
        again.value
    }

    /// A look `l` found the lock re-taken: makes a catch test if the lock's catch score is
    /// above 0, or one time in [`CATCH_TEST_EVERY`] where it is 0, and moves the score (see
    /// the module docs). `Ok` with the free value read if the test passed and the score has
    /// reached [`CATCH_TAKE_SCORE`]: the look was a plain one. Otherwise `Err` with the last
    /// value read (the look's own where no test was made): the look counts as a re-take.
    #[inline]
    pub(crate) fn catch(
        &self,
        word: &AtomicU32,
        held: &impl Fn(u32) -> bool,
        l: &super::look::Look,
    ) -> Result<u32, u32> {
        if self.estimate.catch_score() == 0 && (l.at >> 4) % CATCH_TEST_EVERY != 0 {
            return Err(l.value);
        }
        let round_trip = ticks_ns(l.took).min(DOZE_MIN_NS) as u32;
        let (free, value) = catch_test(word, held, round_trip.saturating_mul(CATCH_ROUND_TRIPS));
        let score = self.estimate.caught(free);
        if free && score >= CATCH_TAKE_SCORE {
            Ok(value)
        } else {
            Err(value)
        }
    }

    /// A look found the lock free, released by a thread on a far CPU (one that shares no cache
    /// level with this one; see `look`), and taken again within the time a hand-off would have
    /// taken: this waiter leaves the lock to that CPU's threads. It stops spinning (its spin
    /// would have paid, and the estimate learns so) and dozes from now on; the lock's slow path
    /// asks [`declines`](Self::declines) after each look.
    #[inline]
    pub(crate) fn declined(&mut self) {
        #[cfg(test)]
        DECLINES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        if self.learn {
            self.estimate.record(true, self.spinner.spent_ns());
            self.learn = false;
        }
        self.retakes = RETAKES_FUTILE;
        self.yields = 0;
        self.dozing = true;
        self.declined = true;
    }

    /// Whether this waiter's last [`look`](Self::look) declined to take a free lock (see
    /// [`declined`](Self::declined)); asking clears it. The lock's slow path then
    /// [`doze`](Self::doze)s instead of taking the lock, and looks at it again afterwards.
    #[inline]
    pub(crate) fn declines(&mut self) -> bool {
        core::mem::take(&mut self.declined)
    }

    /// Whether this waiter's looks are timed: only a yielding waiter that still spins, on its
    /// lock's watch turn, times them.
    #[inline]
    pub(crate) fn watches(&self) -> bool {
        self.watch && self.yields > 0 && self.retakes < RETAKES_FUTILE
    }

    /// The lock was released and re-taken by other threads since this waiter's previous look
    /// (see [`look`](Self::look)).
    #[inline]
    pub(crate) fn retaken(&mut self) {
        self.retakes += 1;
    }

    /// Yields this waiter may still make before it sleeps.
    #[cfg(test)]
    pub(crate) fn yields_left(&self) -> u32 {
        self.yields
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
        self.sleep_outcome_in(word, expected, futex::ANY_CLASS)
    }

    /// [`sleep_outcome`](Self::sleep_outcome), sleeping in `class` (see
    /// [`futex::wait_outcome_in`]: a wake-up that names a class wakes this waiter only if the
    /// classes share a bit) for `at_most_ns` at the longest: a sleep that lasts that long ends
    /// by itself and returns [`NotWoken`](WaitOutcome::NotWoken) (no wake-up picked this
    /// waiter), so that a lock whose sleepers must act on how long they have waited (the
    /// mutex's starvation bound) hears from them in time, whether or not anyone wakes them.
    /// [`TimedOut`](WaitOutcome::TimedOut) still means the wait's own deadline passed (a
    /// deadline on another clock than the monotonic one leaves the bound out). Under
    /// loom the bound is left out (the sleep lasts until woken or the deadline), so that a
    /// lost wake-up still shows in the models as every thread blocked, instead of being
    /// healed by the sleeper looking again on its own.
    #[inline]
    pub(crate) fn sleep_outcome_for(
        &mut self,
        word: &AtomicU32,
        expected: u32,
        class: u32,
        at_most_ns: u64,
    ) -> WaitOutcome {
        self.before_sleep();
        if cfg!(loom) {
            return futex::wait_outcome_in(word, expected, self.deadline, class);
        }
        let bound = Deadline::after(core::time::Duration::from_nanos(at_most_ns));
        match self.deadline {
            // The wait's own deadline comes first, or is on another clock, which cannot be
            // compared with the bound: the bound is left out rather than risk sleeping past
            // the deadline.
            Some(d) if !bound.is_before(d) || d.clock() != bound.clock() => {
                futex::wait_outcome_in(word, expected, Some(d), class)
            }
            _ => match futex::wait_outcome_in(word, expected, Some(&bound), class) {
                WaitOutcome::TimedOut => WaitOutcome::NotWoken,
                outcome => outcome,
            },
        }
    }

    /// [`sleep_outcome`](Self::sleep_outcome), sleeping in `class` (see
    /// [`futex::wait_outcome_in`]) until woken or the deadline, with no bound of its own (the
    /// mutex's re-take after a condition variable's wait, see its docs).
    #[inline]
    pub(crate) fn sleep_outcome_in(
        &mut self,
        word: &AtomicU32,
        expected: u32,
        class: u32,
    ) -> WaitOutcome {
        self.before_sleep();
        futex::wait_outcome_in(word, expected, self.deadline, class)
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

    /// This waiter's sleep on its lock's word was refused: it announced the sleep, and the word
    /// changed before the kernel compared it (the sleep returned
    /// [`NotWoken`](WaitOutcome::NotWoken)), with the lock held again. The lock was released
    /// and re-taken in the time it takes to enter the kernel: its users take it back faster
    /// than a sleeper can be told. From now on the waiter [`doze`](Self::doze)s instead of
    /// sleeping on the word.
    #[inline]
    pub(crate) fn refused(&mut self) {
        self.dozing = true;
    }

    /// Whether this waiter dozes instead of sleeping on its lock's word (a sleep was
    /// [`refused`](Self::refused), its spinning proved futile on a lock whose waits keep
    /// spinning in vain, see [`FUTILE_WAITS_DOZE`], or it [`declined`](Self::declined) a lock).
    #[inline]
    pub(crate) fn dozing(&self) -> bool {
        self.dozing
    }

    /// Sleeps for about one wake-up latency (as measured on this machine, within
    /// [`DOZE_MIN_NS`]..=[`DOZE_MAX_NS`]), and not past the deadline, on a word of its own that
    /// no other thread knows: no lock has to wake it, so its lock's releases stay on their
    /// fast path. A doze keeps the lock waiting no longer than a wake-up would have taken to
    /// bring the waiter back. Counts as time away (see [`away_ns`](Self::away_ns)). The
    /// caller looks at its lock again afterwards.
    #[inline]
    pub(crate) fn doze(&mut self) {
        let own = AtomicU32::new(0);
        let ns = doze_ns();
        self.nap(
            &own,
            0,
            &Deadline::after(core::time::Duration::from_nanos(ns)),
        );
    }

    /// Whether this waiter never sleeps (`SpinPolicy::Always`): a protocol that announces a
    /// waiter only on its way to sleep announces this one while it spins, where the waiter
    /// needs others to stay out.
    #[inline]
    pub(crate) fn never_sleeps(&self) -> bool {
        self.unbounded
    }

    /// Whether this waiter keeps a starving waiter's [`vigil`](Self::vigil): not under
    /// `SpinPolicy::Never`, which never spins.
    #[inline]
    pub(crate) fn keeps_vigil(&self) -> bool {
        self.spins
    }

    /// A starving waiter's vigil before it sleeps (see the mutex): from `seen`, the value the
    /// caller read last, polls `word` until it reads not `held`, for about a wake-up latency
    /// at most (as long as a [`doze`](Self::doze)) and not past the deadline, whatever the
    /// lock's protocol would allow a spin, and returns the last value read. A hand-off to a
    /// sleeper leaves the lock idle for a wake-up latency; the vigil takes a release at once,
    /// and lasts no longer than that latency, so it costs its CPU at most what a hand-off
    /// would have cost the lock. Returns `seen` without reading under `SpinPolicy::Never`
    /// (see [`keeps_vigil`](Self::keeps_vigil)) and under loom (the models explore the
    /// protocol's flag and the sleep that follows; reads here add no path a protocol could
    /// take).
    #[inline]
    pub(crate) fn vigil(&mut self, word: &AtomicU32, seen: u32, held: impl Fn(u32) -> bool) -> u32 {
        let mut value = seen;
        if !self.spins || cfg!(loom) {
            return value;
        }
        let mut poll = Spinner::polling(SpinBudget::Nanos(doze_ns() as u32));
        value = poll_while_held(word, value, &held, &mut poll, || self.in_time());
        self.vigil_ns = self.vigil_ns.saturating_add(poll.spent_ns());
        value
    }

    /// This waiter starves (see the mutex): it neither spins nor yields any more. A spin it
    /// had not finished (its probe yield, say, kept it away past the lock's starvation bound)
    /// ended for that reason, not the lock's: it teaches the estimate nothing.
    #[inline]
    pub(crate) fn starves(&mut self) {
        self.learn = false;
    }

    /// Gives the CPU away (see `spin::yield_cpu`), records the yield in lockstat, and returns
    /// how long it took, in ns (see [`QUICK_YIELD_NS`]). Every yield of a wait goes through
    /// here; one clock read more than the yield's own is nothing next to its system call. The
    /// first yield of a wait starts its time away (see [`away_ns`](Self::away_ns)), except
    /// under loom, whose models explore a long time away after a sleep only (see there).
    #[inline]
    fn yield_timed(&mut self) -> u64 {
        let t0 = now_ns();
        if self.away_at == 0 && !cfg!(loom) {
            self.away_at = t0.max(1);
        }
        let back = yield_for_a_round(t0);
        self.back_at = back;
        let took = back.saturating_sub(t0);
        self.rec.yielded(took);
        took
    }

    #[inline]
    fn before_sleep(&mut self) {
        if self.away_at == 0 {
            // Never 0 once slept (the clock reads 0 under loom).
            self.away_at = now_ns().max(1);
        }
        self.rec.sleep();
    }

    /// How long ago this waiter first gave its CPU away for this wait, in ns: its first yield,
    /// sleep or doze (0 if it has done none). A yielder is off its CPU as a sleeper is, for a
    /// round of the threads runnable there: where threads outnumber CPUs, a wait of yields
    /// lasts as long as a sleep (the mutex counts both toward its starvation bound). Under
    /// loom, whose clock does not move, a waiter that has slept has been away for ever: every
    /// model of a lock that asks (the mutex, for its starvation bound) explores what follows a
    /// long sleep on every sleep after the first.
    #[inline]
    pub(crate) fn away_ns(&self) -> u64 {
        if self.away_at == 0 {
            0
        } else if cfg!(loom) {
            u64::MAX
        } else {
            now_ns().saturating_sub(self.away_at)
        }
    }

    /// How long this waiter had been away (see [`away_ns`](Self::away_ns)) when its last yield
    /// returned, in ns (0 if it has not yielded): no clock is read, so a slow path may ask
    /// between any two spin steps.
    #[inline]
    pub(crate) fn away_when_back_ns(&self) -> u64 {
        self.back_at.saturating_sub(self.away_at)
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
        let spun = self.spinner.spent_ns().saturating_add(self.vigil_ns);
        // Under loom looks are never timed (as above).
        if self.yielder && self.spinner.has_spun() && !cfg!(loom) {
            self.estimate.watched(self.retakes > 0);
        }
        match self.subject {
            Subject::Nobody => ok,
            Subject::Lock(key) => self.rec.done_at(key, ok, spun, handoff),
            Subject::Held(lock) => self.rec.done(lock, ok, spun, handoff),
            Subject::Drain(key) => self.rec.done_waited(key, ok, spun),
        }
    }
}

/// Whether a lock's holds are shorter than a hand-off of `hand_off_ns`, judged by the two
/// measures of them a waiter has: how long spins that paid on the lock took (its `estimate_ns`)
/// and how long this waiter has watched it held (`spun_ns`). Only then does a waiter test
/// whether the releaser re-takes a far lock (see [`Waiter::look`]): where holds are as long as
/// a hand-off, a hand-off is cheap next to the work it lets run in parallel, and the test
/// would only leave the lock idle for its length.
#[inline]
pub(crate) fn holds_shorter_than(estimate_ns: u32, spun_ns: u32, hand_off_ns: u32) -> bool {
    estimate_ns.max(spun_ns) < hand_off_ns
}

/// The catch test (see the module docs): polls `word` for up to `window_ns` until it reads
/// not `held`; if it did, waits `window_ns` without reading it, and reads it again. Returns
/// whether that last read found it not `held` (the test passed) and the last value read.
pub(crate) fn catch_test(
    word: &AtomicU32,
    held: &impl Fn(u32) -> bool,
    window_ns: u32,
) -> (bool, u32) {
    let mut poll = Spinner::polling(SpinBudget::Nanos(window_ns));
    let value = poll_while_held(word, word.load(Ordering::Relaxed), held, &mut poll, || true);
    if held(value) {
        return (false, value);
    }
    stay_away(window_ns);
    let value = word.load(Ordering::Relaxed);
    (!held(value), value)
}

/// Polls `word`, from `value` (the caller's last read of it), while it reads `held`: a step of
/// `poll` between two reads, as long as `go_on` allows one more and `poll`'s budget lasts.
/// Returns the last value read. The catch test's poll and the vigil's.
#[inline]
fn poll_while_held(
    word: &AtomicU32,
    mut value: u32,
    held: &impl Fn(u32) -> bool,
    poll: &mut Spinner,
    mut go_on: impl FnMut() -> bool,
) -> u32 {
    while held(value) && go_on() && poll.spin() {
        value = word.load(Ordering::Relaxed);
    }
    value
}

/// Spins for `ns` (calibrated, see [`Spinner`]) without reading any shared word: leaves a
/// lock's line to the threads using it for that long, before a waiter looks again.
#[inline]
fn stay_away(ns: u32) {
    let mut spinner = Spinner::polling(SpinBudget::Nanos(ns));
    while spinner.spin() {}
}

/// The yields a yielding waiter may make under `policy`: only `Adaptive` yields.
#[inline]
fn yields_under(policy: super::SpinPolicy) -> u32 {
    if policy == super::SpinPolicy::Adaptive {
        YIELDS
    } else {
        0
    }
}

/// How long a doze lasts: a wake-up latency, as measured on this machine, within
/// [`DOZE_MIN_NS`]..=[`DOZE_MAX_NS`].
#[inline]
fn doze_ns() -> u64 {
    (super::wake_latency_ns() as u64).clamp(DOZE_MIN_NS, DOZE_MAX_NS)
}
