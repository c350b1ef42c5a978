//! How often this thread waits, and how long it has kept its CPU: asked by a
//! [`Waiter`](super::Waiter) at its first yield, since a yield pays only for a thread that
//! waits often, and as a rotating wait begins, for the rotation (see the waiter's docs).
//!
//! ```text
//!  a thread's CPU time ->   w: a wait begins (any lock);  x: a wait's first yield, where it
//!                           asks;  ====: running (holding locks, working, spinning)
//!  a reading:  x=w=w==w=x   the CPU time since the previous reading, per wait begun since
//!                           (this one included); before the thread's first reading, since
//!                           the thread's start, where its CPU clock starts from 0
//!  its gap:    gap' = (3 gap + r) / 4, r = min(the reading, SAMPLE_CAP_NS)
//!                           (the first reading: gap' = r)
//!  often:      gap <= SELDOM_NS: it yields
//!  seldom:     gap >  SELDOM_NS: no yields, it spins and sleeps
//! ```
//!
//! The thread's own CPU time stands still while it sleeps or is preempted, so a thread that
//! waits again and again keeps a short gap however long it sits in a run queue; and the gap is
//! shared among all the waits it began, so that waits that end within their spin (and never
//! ask) count as waits too. The CPU clock is a system call, so an ask reads it only where the
//! monotonic clock (read in user space) says that more than [`READ_EVERY_NS`] has passed
//! since it was last read; an ask between two readings gets the thread's standing verdict. A wait's
//! beginning only adds one to a count.
//!
//! The verdict follows the thread's last few readings, not its last one. A server's thread
//! waits seldom, but now and then it meets a lock whose holder was preempted, and then waits
//! on it, and on the next lock it takes, close together: where threads outnumber CPUs, a
//! verdict read off that pair alone made it yield, and its yields handed the CPU to a round of
//! threads that each ran a whole slice of other work (MariaDB under the preload library: such
//! yields outlasted the mutex's starvation mark many times over, on a lock held for a
//! fraction of a microsecond, where a sleeper is woken by the release). A thread that waits
//! often (every reading a short gap) stays "often"; one that turns from other work to a hot
//! lock is "often" again within a few readings, since a reading counts for at most
//! [`SAMPLE_CAP_NS`].
//!
//! The threshold, [`SELDOM_NS`], is a round: the time a rotation's yield aims to be back in
//! ([`ROUND_NS`], see below). A thread that runs longer than that per wait hands the CPU, when
//! it yields, to threads that are likely to work as long before they give it back, so its
//! yield lasts more than a round with a single such thread ahead of it, and a round of whole
//! time slices where threads outnumber CPUs many times over (MariaDB's table cache mutex under
//! the preload library: with a threshold four times as high, the threads whose gaps lay
//! between the two made the yields of milliseconds that were its read-only transactions'
//! latency tail). The threads of a hot lock, which take it again and again with little work
//! between, read gaps far below it, and keep the yields that spare their lock's releases a
//! futex wake.
//!
//! It also keeps when this thread last gave its CPU away (a yield or a futex sleep ended,
//! whoever made it), which a rotating waiter (see `Waiter::rotating`) asks as its wait
//! begins: a thread that has kept its CPU for longer than [`ROTATE_NS`] since begins its wait
//! with a yield, the *rotation* (see the waiter's docs), so that the threads runnable behind
//! it on its CPU get a turn.
//!
//! ```text
//!  monotonic time ->        g: it gave the CPU away (a yield, a sleep);  a: a wait asks
//!                           (some read the clock, see below);  ====: on its CPU
//!  not due:  g==a==a==a     read less than ROTATE_NS after g: no yield
//!  due:      g===========A  read more than ROTATE_NS after g: the wait yields first, and
//!                           the yield's end is the next g
//! ```
//!
//! How many asks pass between two readings follows how far apart the thread's waits are:
//! readings come about [`ASKS_PER_STRETCH`] times per stretch, one in
//! [`ROTATE_ASK_EVERY`] asks at most (see [`next_ask_every`]). A thread that waits every few
//! hundred nanoseconds would notice a reading on every wait, and one in sixteen still
//! sees a stretch to within a few microseconds; one whose waits are tens of microseconds
//! apart reads on every wait. With one reading in sixteen asks for every thread, a thread
//! whose waits were far apart kept its CPU for many stretches before it rotated, and the
//! threads runnable behind it waited as long. A reading measures the asks since the previous
//! one, or since the thread last gave its CPU away, whichever came later (the time away is no
//! time between waits): a reading that finds the rotation due is often the first since the
//! last rotation, and a count that only readings without a yield between them set stayed
//! where it started for a thread that rotated at every reading.
//!
//! Monotonic time, read in user space: a thread preempted since `g` counts as having kept
//! its CPU, and yields once more than it had to (a bare system call where nobody else wants
//! the CPU). The first ask of a thread starts its clock.
//!
//! How long a thread may keep its CPU before a wait that rotates *in rounds* (the rwlock's,
//! see `Waiter::rotating_in_rounds`) yields, its *stretch*, follows the rounds its yields
//! measure; other rotating waits keep [`ROTATE_NS`]. A yield returns once the threads runnable
//! ahead of it on its CPU have had their turns, so its length is a round: the number of those
//! threads times their stretches. Each yield of a wait tells this module how long it took (see
//! [`yield_took`]), and the thread's next stretch is scaled so that a round of threads that
//! keep the same stretch lasts [`ROUND_NS`], within [`ROTATE_MIN_NS`] and [`ROTATE_NS`]:
//!
//! ```text
//!  stretch' = clamp(stretch x ROUND_NS / yield's length, ROTATE_MIN_NS, ROTATE_NS)
//!  r runnable threads per CPU, each rotating after s:  a round = (r - 1) x s
//!  few threads (a short round):   s = ROTATE_NS: as many rotations as before
//!  many threads (a long round):   s = ROUND_NS / (r - 1), at least ROTATE_MIN_NS
//!  nobody else runnable:          the yield returns at once, s = ROTATE_NS
//! ```
//!
//! With one stretch for every thread count, the longest a runnable waiter waits for its CPU
//! grew with the number of threads per CPU (each thread ahead of it kept the CPU for a whole
//! stretch); scaled, a round stays near `ROUND_NS` until the threads outnumber what
//! `ROTATE_MIN_NS` allows. A thread whose rounds are long because the threads ahead of it do
//! not rotate (they run whole time slices of other work) shrinks its stretch to
//! `ROTATE_MIN_NS` and stays there, which costs it rotations but the others nothing.
//!
//! A yield that comes back at once (within [`QUICK_YIELD_NS`]) ran nobody: no thread was
//! runnable behind this one on its CPU, so its rotation handed the CPU to nobody and cost a
//! bare system call. Such yields earn the thread a *lone* stretch, which doubles with each
//! one, from twice [`ROTATE_NS`] up to [`LONE_MAX_NS`] (about a scheduler's time slice), and
//! which a yield that ran another thread clears; a thread's rotation waits for the longer of
//! its stretch and its lone stretch (see [`next_lone`]):
//!
//! ```text
//!  yields that ran nobody:       lone' = clamp(2 lone, 2 ROTATE_NS, LONE_MAX_NS)
//!  a yield that ran a thread:    lone' = 0 (the stretch alone)
//!  no more threads than CPUs:    a rotation about every LONE_MAX_NS, not every ROTATE_NS
//! ```
//!
//! Where threads do not outnumber CPUs a rotation finds nobody to hand its CPU to; with the
//! stretch alone a waiting thread would make one every `ROTATE_NS` all the same, a system call
//! during which the lock's release passes unseen. Once threads become runnable behind it, its
//! first rotation comes at most a lone stretch late, and the yield that runs one of them
//! restores the stretch.

/// A thread that has run for longer than this (CPU time) per wait it began, over its last few
/// readings of its CPU clock, when a wait of its comes to its first yield, *waits seldom*: a
/// round ([`ROUND_NS`]), so that a yield of its would hand its CPU over for longer than a round
/// to threads that work as long between their waits (see the module docs and the waiter's).
// Under loom and Miri no thread waits seldom: only the tests use these there.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const SELDOM_NS: u64 = ROUND_NS;

/// An ask reads the thread's CPU clock (a system call) only where more than this has passed
/// (monotonic time) since its last reading; an ask between two readings gets the standing
/// verdict (see the module docs). A thread that waits every few microseconds would otherwise
/// pay a system call on most of its waits' first yields.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const READ_EVERY_NS: u64 = 1_000_000;

/// This thread's gap, in ns (tests only; 0 before its first reading; see [`waits_seldom`]).
#[cfg(all(test, not(any(loom, miri))))]
pub(crate) fn gap_ns() -> u64 {
    let last = LAST_READ.with(core::cell::Cell::get);
    if last.at_ns == 0 {
        0
    } else {
        last.gap_ns
    }
}

/// A reading of a thread's gap (CPU time per wait) counts for at most this much toward its
/// verdict (see the module docs): a thread's start, or a pause in its use of locks, is
/// forgotten within a few readings once it waits often again.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const SAMPLE_CAP_NS: u64 = 4 * READ_EVERY_NS;

/// When, and at what CPU time, an ask of this thread last read its CPU clock.
#[cfg(not(any(loom, miri)))]
#[derive(Clone, Copy)]
struct Reading {
    /// The monotonic clock then (ns; 0: never).
    at_ns: u64,
    /// The thread's CPU time then (ns).
    cpu_ns: u64,
    /// The thread's gap after it: its CPU time per wait over its last few readings, in ns
    /// (see the module docs and [`next_gap`]; meaningless while `at_ns` is 0, no reading yet).
    gap_ns: u64,
}

#[cfg(not(any(loom, miri)))]
std::thread_local! {
    /// This thread's last reading (see [`waits_seldom`]).
    static LAST_READ: core::cell::Cell<Reading> =
        const { core::cell::Cell::new(Reading { at_ns: 0, cpu_ns: 0, gap_ns: 0 }) };
    /// Waits this thread began since its last reading (or its start).
    static BEGUN: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
    /// When (monotonic ns) this thread last gave its CPU away (see [`gave_cpu`]; 0: not yet
    /// known).
    static GAVE_CPU_AT: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    /// Calls of [`rotation_ask`] since the last that said yes, or since the thread last gave
    /// its CPU away.
    static ROTATION_ASKS: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
    /// How long this thread may keep its CPU before its next rotating wait yields, in ns (see
    /// the module docs and [`yield_took`]).
    static STRETCH_NS: core::cell::Cell<u64> = const { core::cell::Cell::new(ROTATE_NS) };
    /// The stretch this thread's yields that ran nobody have earned it, in ns (0: its last
    /// yield ran another thread, or it has made none; see [`next_lone`]).
    static LONE_NS: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    /// This thread's rotating waits read the clock one ask in this many (see
    /// [`rotation_ask`] and [`next_ask_every`]).
    static ASK_EVERY: core::cell::Cell<u32> = const { core::cell::Cell::new(ROTATE_ASK_EVERY) };
    /// When (monotonic ns) an ask of this thread last read the clock, unless the thread has
    /// given its CPU away since (0: no reading since).
    static ASKED_AT: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// A thread's rotating waits ask [`rotation_due`], which reads the clock, one in this many
/// at most (see [`rotation_ask`]): a thread that waits every few hundred nanoseconds would
/// notice a clock read on every wait. A thread starts here; its readings then set how many
/// asks pass until the next (see [`next_ask_every`]).
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const ROTATE_ASK_EVERY: u32 = 16;

/// How many times per stretch a thread's rotating waits read the clock, where its waits are
/// far enough apart for that (see [`next_ask_every`]): a rotation comes at most a quarter of
/// a stretch late, where the waits of a thread that kept its CPU lie no further apart.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const ASKS_PER_STRETCH: u64 = 4;

/// A thread that has kept its CPU for longer than this since it last gave it away yields as
/// its next rotating wait begins (the *rotation*, see the module docs); the longest stretch,
/// which a thread keeps where its yields find short rounds (its stretch scales down where
/// they find long ones, see [`yield_took`]). It bounds how long a
/// thread that keeps taking a hot lock holds its CPU while the lock's waiters are runnable
/// behind it: without it a waiter that yielded was back only once that thread's time slice
/// ran out, for each thread ahead of it. A rotation that switches threads costs a context
/// switch each way, a few microseconds, and the caches the next thread refills: a few
/// percent of the CPU time where threads rotate this often (most where they do little but
/// take the lock, as the bench's `mutex-short`); where nobody else wants the CPU it is a
/// bare system call.
// Under loom and Miri nothing rotates.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const ROTATE_NS: u64 = 100_000;

/// The shortest stretch (see the module docs): where threads outnumber CPUs so far that a
/// round cannot be kept to [`ROUND_NS`], threads rotate this often. A rotation that switches
/// threads costs a context switch each way and the caches the next thread refills, a few
/// microseconds: at this stretch, about a tenth of the CPU time of threads that rotate.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const ROTATE_MIN_NS: u64 = 25_000;

/// The round a thread's stretch aims at (see the module docs): how long a yield takes to
/// come back where the threads runnable ahead of it rotate as this thread does. A waiter
/// yields a few times before it sleeps (`waiter::YIELDS`), so a round of this length keeps a
/// wait of yields within a couple of milliseconds, about the mutex's starvation bound, where
/// rounds of whole stretches grew with the threads per CPU (the bench's `read-write` at many
/// threads per CPU measures the longest stall that follows).
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const ROUND_NS: u64 = 250_000;
const _: () = assert!(ROTATE_MIN_NS <= ROTATE_NS && ROTATE_NS <= ROUND_NS);

/// A yield that comes back sooner than this ran no other thread: it was a bare system call
/// (well under a microsecond), where switching to another thread and back costs two context
/// switches and that thread's run.
pub(crate) const QUICK_YIELD_NS: u64 = 2_000;

/// The longest stretch that yields which ran nobody earn a thread (see [`next_lone`]): about
/// a scheduler's time slice, past which the kernel itself hands the CPU to a thread that
/// became runnable behind this one.
#[cfg_attr(any(loom, miri), allow(dead_code))]
pub(crate) const LONE_MAX_NS: u64 = 16 * ROTATE_NS;
const _: () = assert!(ROTATE_NS < LONE_MAX_NS);

/// A yield of this thread's wait took `took_ns` (from its call to its return): a round of the
/// threads runnable ahead of it on its CPU. Scales the thread's stretch toward a round of
/// [`ROUND_NS`] (see the module docs and [`next_stretch`]). Does nothing under loom or Miri.
#[inline]
pub(crate) fn yield_took(took_ns: u64) {
    #[cfg(not(any(loom, miri)))]
    let _ = STRETCH_NS.try_with(|s| s.set(next_stretch(s.get(), took_ns)));
    #[cfg(not(any(loom, miri)))]
    let _ = LONE_NS.try_with(|l| l.set(next_lone(l.get(), took_ns)));
    #[cfg(any(loom, miri))]
    let _ = took_ns;
}

/// This thread's stretch, in ns (tests only; see [`yield_took`]).
#[cfg(all(test, not(any(loom, miri))))]
pub(crate) fn stretch_ns() -> u64 {
    STRETCH_NS.with(core::cell::Cell::get)
}

/// The waits this thread began since its CPU clock was last read (tests only; see
/// [`wait_begins`]).
#[cfg(all(test, not(any(loom, miri))))]
pub(crate) fn waits_begun() -> u32 {
    BEGUN.with(core::cell::Cell::get)
}

/// How many asks this thread lets pass between two readings of the clock (tests only; see
/// [`next_ask_every`]).
#[cfg(all(test, not(any(loom, miri))))]
pub(crate) fn ask_every() -> u32 {
    ASK_EVERY.with(core::cell::Cell::get)
}

/// The stretch that follows `stretch_ns` after a yield that took `took_ns`: scaled by
/// [`ROUND_NS`] / `took_ns`, within [`ROTATE_MIN_NS`] and [`ROTATE_NS`] (see the module docs).
#[cfg_attr(any(loom, miri), allow(dead_code))]
#[inline]
pub(crate) fn next_stretch(stretch_ns: u64, took_ns: u64) -> u64 {
    let scaled = stretch_ns
        .saturating_mul(ROUND_NS)
        .checked_div(took_ns)
        .unwrap_or(ROTATE_NS);
    scaled.clamp(ROTATE_MIN_NS, ROTATE_NS)
}

/// The lone stretch that follows `lone_ns` after a yield that took `took_ns` (see the
/// module docs): one that ran nobody (no longer than [`QUICK_YIELD_NS`]) doubles it, from
/// twice [`ROTATE_NS`] up to [`LONE_MAX_NS`]; one that ran another thread clears it (0).
#[cfg_attr(any(loom, miri), allow(dead_code))]
#[inline]
pub(crate) fn next_lone(lone_ns: u64, took_ns: u64) -> u64 {
    if took_ns <= QUICK_YIELD_NS {
        lone_ns.saturating_mul(2).clamp(2 * ROTATE_NS, LONE_MAX_NS)
    } else {
        0
    }
}

/// This thread gave its CPU away, at `now_ns` (monotonic): a yield or a futex sleep ended
/// then (`spin::yield_cpu` and `futex::wait_outcome_in` say so). Does nothing under Miri; not
/// built under loom, where neither gives a CPU away.
#[cfg(not(loom))]
#[inline]
pub(crate) fn gave_cpu(now_ns: u64) {
    #[cfg(not(miri))]
    {
        let _ = GAVE_CPU_AT.try_with(|g| g.set(now_ns.max(1)));
        let _ = ROTATION_ASKS.try_with(|n| n.set(0));
        // The time away is no time between asks: the next reading measures from here.
        let _ = ASKED_AT.try_with(|a| a.set(0));
    }
    #[cfg(miri)]
    let _ = now_ns;
}

/// Whether a rotating wait of this thread, beginning now, should ask [`rotation_due`]: true on
/// every `n`th call, counted from the thread's last yield or sleep, or from the last call that
/// said yes, where `n` is what the thread's readings of the clock set (see
/// [`next_ask_every`]; [`ROTATE_ASK_EVERY`] until its first two). No clock is read. Never
/// under loom or Miri, nor while the thread's locals are being destroyed.
#[inline]
pub(crate) fn rotation_ask() -> bool {
    #[cfg(not(any(loom, miri)))]
    {
        let every = ASK_EVERY
            .try_with(core::cell::Cell::get)
            .unwrap_or(ROTATE_ASK_EVERY);
        ROTATION_ASKS
            .try_with(|n| {
                let asks = n.get() + 1;
                let ask = asks >= every;
                n.set(if ask { 0 } else { asks });
                ask
            })
            .unwrap_or(false)
    }
    #[cfg(any(loom, miri))]
    {
        false
    }
}

/// Whether this thread has kept its CPU, since it last gave it away, for longer than its
/// stretch if `in_rounds` (see [`yield_took`]), else [`ROTATE_NS`] (see [`kept_too_long`]):
/// its wait begins with a yield. Reads the monotonic clock; the first reading of a thread
/// starts its clock. Each later reading sets how many asks pass until the next, from the
/// asks since the previous reading or the thread's last yield or sleep, whichever came later
/// (see [`next_ask_every`]). Never under loom or Miri.
#[inline]
pub(crate) fn rotation_due(in_rounds: bool) -> bool {
    #[cfg(not(any(loom, miri)))]
    {
        let now = super::now_ns();
        let gave_at = GAVE_CPU_AT.try_with(core::cell::Cell::get).unwrap_or(now);
        if gave_at == 0 {
            gave_cpu(now);
        }
        let stretch = if in_rounds {
            STRETCH_NS
                .try_with(core::cell::Cell::get)
                .unwrap_or(ROTATE_NS)
        } else {
            ROTATE_NS
        };
        // Yields that ran nobody lengthen it (see the module docs).
        let stretch = stretch.max(LONE_NS.try_with(core::cell::Cell::get).unwrap_or(0));
        // The asks since the previous reading, or since the thread last gave its CPU away
        // (which restarts the count of asks, see the module docs).
        let asked_at = ASKED_AT.try_with(|a| a.replace(now)).unwrap_or(0);
        let since_at = if asked_at != 0 { asked_at } else { gave_at };
        if since_at != 0 {
            let _ = ASK_EVERY.try_with(|e| {
                e.set(next_ask_every(
                    e.get(),
                    now.saturating_sub(since_at),
                    stretch,
                ));
            });
        }
        kept_too_long(gave_at, now, stretch)
    }
    #[cfg(any(loom, miri))]
    {
        let _ = in_rounds;
        false
    }
}

/// How many asks a thread lets pass until its next reading of the clock, where the last
/// `every` took `since_ns` (since the previous reading or the thread's last yield or sleep,
/// whichever came later) and its stretch is `stretch_ns`: scaled so that readings come
/// [`ASKS_PER_STRETCH`] times per stretch, within 1 ..= [`ROTATE_ASK_EVERY`] (see the module
/// docs).
#[cfg_attr(any(loom, miri), allow(dead_code))]
#[inline]
pub(crate) fn next_ask_every(every: u32, since_ns: u64, stretch_ns: u64) -> u32 {
    let scaled = u64::from(every)
        .saturating_mul(stretch_ns)
        .checked_div(since_ns.saturating_mul(ASKS_PER_STRETCH))
        .unwrap_or(u64::from(ROTATE_ASK_EVERY));
    // At most ROTATE_ASK_EVERY, so the cast keeps the value.
    scaled.clamp(1, u64::from(ROTATE_ASK_EVERY)) as u32
}

/// Whether a thread that last gave its CPU away at `gave_at_ns` (0: never, as far as is known)
/// has kept it for longer than `stretch_ns` at `now_ns`.
#[cfg_attr(any(loom, miri), allow(dead_code))]
#[inline]
pub(crate) fn kept_too_long(gave_at_ns: u64, now_ns: u64, stretch_ns: u64) -> bool {
    gave_at_ns != 0 && now_ns.saturating_sub(gave_at_ns) > stretch_ns
}

/// A wait of this thread begins (see the module docs). No clock is read. Does nothing under
/// loom or Miri.
#[inline]
pub(crate) fn wait_begins() {
    #[cfg(not(any(loom, miri)))]
    let _ = BEGUN.try_with(|n| n.set(n.get().saturating_add(1)));
}

/// Whether this thread waits seldom: its gap, the CPU time it ran per wait it began, over its
/// last few readings of its CPU clock (the first since its start), is more than
/// [`SELDOM_NS`] (see the module docs and [`next_gap`]): a thread that contends as soon as it
/// starts waits often (when a first ask said "seldom", threads that start together on a
/// contended rwlock became sleepers, which cost the bench's `read-write` cells), one that
/// starts with a stretch of other work does not. Reads the clock only where more than
/// [`READ_EVERY_NS`] has passed since its last reading; before that, the verdict stands. Ask
/// once per wait. Never under loom, whose models explore the yields, nor under Miri, which
/// has no thread CPU clock.
#[inline]
pub(crate) fn waits_seldom() -> bool {
    #[cfg(any(loom, miri))]
    {
        false
    }
    #[cfg(not(any(loom, miri)))]
    {
        // A thread's locals are being destroyed as it exits: it waits seldom then.
        let Ok(last) = LAST_READ.try_with(core::cell::Cell::get) else {
            return true;
        };
        let at_ns = super::now_ns();
        if last.at_ns != 0 && at_ns.saturating_sub(last.at_ns) <= READ_EVERY_NS {
            return last.gap_ns > SELDOM_NS;
        }
        let Some(cpu_ns) = thread_cpu_ns() else {
            return false;
        };
        let waits = BEGUN.try_with(|n| n.replace(0)).unwrap_or(0);
        // Never read: `last.cpu_ns` is 0, the thread's CPU time at its start.
        let gap = (last.at_ns != 0).then_some(last.gap_ns);
        let gap_ns = next_gap(gap, last.cpu_ns, cpu_ns, waits);
        let _ = LAST_READ.try_with(|l| {
            l.set(Reading {
                at_ns,
                cpu_ns,
                gap_ns,
            })
        });
        gap_ns > SELDOM_NS
    }
}

/// This thread's CPU time in ns (`None` if the clock cannot be read; the thread is then taken
/// to wait often, as without this module).
#[cfg(not(any(loom, miri)))]
#[inline]
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // CLOCK_THREAD_CPUTIME_ID names the calling thread's CPU-time clock, which needs nothing
    // else; the call touches no other memory.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A thread's gap after a reading at CPU time `now_ns`, where its previous reading was at
/// `previous_ns` (0: the thread's start) with `waits` waits begun since (this one among them;
/// 0 counts as 1), and its gap was `gap_ns` (`None`: no reading yet): the reading's CPU time
/// per wait, at most [`SAMPLE_CAP_NS`], weighs a quarter, the gap three quarters; the first
/// reading (as much at most) is the gap.
#[cfg_attr(any(loom, miri), allow(dead_code))]
#[inline]
pub(crate) fn next_gap(gap_ns: Option<u64>, previous_ns: u64, now_ns: u64, waits: u32) -> u64 {
    let reading = (now_ns.saturating_sub(previous_ns) / u64::from(waits.max(1))).min(SAMPLE_CAP_NS);
    match gap_ns {
        None => reading,
        Some(gap) => (3 * gap + reading) / 4,
    }
}
