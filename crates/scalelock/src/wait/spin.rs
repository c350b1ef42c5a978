//! Spinning: how long a waiter spins before it sleeps, and how it spins.
//!
//! Three pieces, used by every lock:
//!
//! - **PAUSE calibration.** The cost of one `spin_loop` hint (x86 `PAUSE`, ARM `ISB`/`YIELD`)
//!   ranges from ~10 cycles (pre-Skylake Intel, most AMD) to ~140 (Skylake and later Intel). It is
//!   measured once per process, so "spin for N ns" means N ns on every CPU.
//! - **[`SpinPolicy`]**, process-wide and changeable at run time: [`SpinPolicy::Adaptive`] (the
//!   default), [`SpinPolicy::Fixed`], [`SpinPolicy::Never`], [`SpinPolicy::Always`]. It starts from
//!   the `SCALELOCK_SPIN` environment variable (`auto`, a number of nanoseconds, `0`, `always`).
//! - **The cost of sleeping**, measured process-wide: the latency from a futex wake to the woken
//!   thread running ([`wake_latency_ns`]), sampled by the wait layer's `futex` calls themselves,
//!   so every lock that sleeps (mutex, rwlocks, condvar) teaches every other. Spinning for up to
//!   about what a sleep costs is the classic 2-competitive spin-then-block rule, so under
//!   `Adaptive` a waiter spins at least half the measured wake-up latency (far longer in a busy
//!   VM than on idle bare metal), capped at [`MAX_ADAPTIVE_SPIN_NS`].
//! - **[`SpinEstimate`]**, one 32-bit word per lock: a running estimate of how long a spinning
//!   waiter waited when spinning succeeded. Under `Adaptive`, a waiter spins for a few times that
//!   estimate (at least a short probe and the sleep-cost floor, at most 10 µs); each
//!   success pulls the estimate towards the wait it saw, each failure (the budget ran out and the
//!   waiter slept) shrinks it by an eighth. A short budget can only ever observe short waits, so
//!   after every `EXPLORE_EVERY` failures one acquisition *explores*: it spins the full budget,
//!   and if the lock comes free in time the estimate learns that longer spins pay (10 µs critical
//!   sections, say). When holders are preempted or critical sections are long, spinning stops
//!   paying and the estimate decays to the probe (plus one exploration per `EXPLORE_EVERY`
//!   failures); when hand-offs are quick it grows back. This replaces manual knobs such as
//!   MariaDB's `innodb_log_spin_wait_delay`.
//!
//! [`Spinner`] is the spin loop itself: exponential backoff with jitter between checks, charged
//! against the budget in calibrated nanoseconds.

use crate::sync::{AtomicU32, Ordering};
use core::fmt;
use core::str::FromStr;
use core::sync::atomic::{AtomicU32 as GlobalU32, AtomicU64 as GlobalU64};

// ---------------------------------------------------------------------------------------------
// PAUSE calibration
// ---------------------------------------------------------------------------------------------

/// Picoseconds per `spin_loop` hint; 0 until calibrated.
static PAUSE_PS: GlobalU32 = GlobalU32::new(0);

/// The measured cost of one `core::hint::spin_loop()` in picoseconds (calibrated on first use).
///
/// ```
/// let ps = scalelock::wait::pause_ps();
/// assert!(ps >= 100 && ps <= 1_000_000);
/// ```
#[inline]
pub fn pause_ps() -> u32 {
    let v = PAUSE_PS.load(Ordering::Relaxed);
    if v != 0 {
        v
    } else {
        calibrate_pause()
    }
}

#[cold]
fn calibrate_pause() -> u32 {
    const PAUSES: u64 = 256;
    let ps = if cfg!(loom) {
        1000
    } else {
        // Best of a few runs: preemption only ever makes a run slower.
        let mut best = u64::MAX;
        for _ in 0..4 {
            let t0 = super::deadline::now_ns();
            for _ in 0..PAUSES {
                core::hint::spin_loop();
            }
            best = best.min(super::deadline::now_ns().saturating_sub(t0));
        }
        (best * 1000 / PAUSES).clamp(100, 1_000_000) as u32
    };
    PAUSE_PS.store(ps, Ordering::Relaxed);
    ps
}

// ---------------------------------------------------------------------------------------------
// Process-wide policy
// ---------------------------------------------------------------------------------------------

/// How waiting threads spin before sleeping, for every scalelock lock in the process.
///
/// ```
/// use scalelock::wait::{set_spin_policy, spin_policy, SpinPolicy};
///
/// let before = spin_policy();
/// set_spin_policy(SpinPolicy::Fixed(2_000));
/// assert_eq!(spin_policy(), SpinPolicy::Fixed(2_000));
/// assert_eq!("auto".parse::<SpinPolicy>(), Ok(SpinPolicy::Adaptive));
/// set_spin_policy(before);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinPolicy {
    /// Learn per lock how long spinning pays (the default).
    Adaptive,
    /// Spin for this many nanoseconds, then sleep.
    Fixed(u32),
    /// Never spin: sleep at once (a classic sleeping mutex).
    Never,
    /// Spin until acquired, never sleep (a pure spinlock: for comparison only; it collapses when
    /// threads outnumber cores).
    Always,
}

/// Error from parsing a [`SpinPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinPolicyParseError;

impl fmt::Display for SpinPolicyParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "expected `auto`, `0`, `always` or a number of nanoseconds (at most 4000000000)",
        )
    }
}

impl std::error::Error for SpinPolicyParseError {}

impl FromStr for SpinPolicy {
    type Err = SpinPolicyParseError;

    fn from_str(s: &str) -> Result<SpinPolicy, SpinPolicyParseError> {
        match s.trim() {
            "auto" | "adaptive" => Ok(SpinPolicy::Adaptive),
            "always" => Ok(SpinPolicy::Always),
            "never" | "0" => Ok(SpinPolicy::Never),
            t => {
                let digits = t.strip_suffix("ns").unwrap_or(t);
                match digits.parse::<u64>() {
                    Ok(0) => Ok(SpinPolicy::Never),
                    Ok(n) if n <= 4_000_000_000 => Ok(SpinPolicy::Fixed(n as u32)),
                    _ => Err(SpinPolicyParseError),
                }
            }
        }
    }
}

impl fmt::Display for SpinPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpinPolicy::Adaptive => f.write_str("auto"),
            SpinPolicy::Fixed(ns) => write!(f, "{ns}"),
            SpinPolicy::Never => f.write_str("0"),
            SpinPolicy::Always => f.write_str("always"),
        }
    }
}

/// Encoded policy: 0 = not yet read from the environment.
static POLICY: GlobalU64 = GlobalU64::new(0);

const TAG_ADAPTIVE: u64 = 1;
const TAG_NEVER: u64 = 2;
const TAG_ALWAYS: u64 = 3;
const TAG_FIXED: u64 = 4;

fn encode(p: SpinPolicy) -> u64 {
    match p {
        SpinPolicy::Adaptive => TAG_ADAPTIVE,
        SpinPolicy::Never | SpinPolicy::Fixed(0) => TAG_NEVER,
        SpinPolicy::Always => TAG_ALWAYS,
        SpinPolicy::Fixed(ns) => TAG_FIXED | (ns as u64) << 8,
    }
}

fn decode(v: u64) -> SpinPolicy {
    match v & 0xff {
        TAG_NEVER => SpinPolicy::Never,
        TAG_ALWAYS => SpinPolicy::Always,
        TAG_FIXED => SpinPolicy::Fixed((v >> 8) as u32),
        _ => SpinPolicy::Adaptive,
    }
}

/// The current process-wide spin policy.
#[inline]
pub fn spin_policy() -> SpinPolicy {
    let v = POLICY.load(Ordering::Relaxed);
    if v != 0 {
        decode(v)
    } else {
        policy_from_env()
    }
}

/// Sets the process-wide spin policy; takes effect for the next wait of every lock.
pub fn set_spin_policy(policy: SpinPolicy) {
    POLICY.store(encode(policy), Ordering::Relaxed);
}

fn write_stderr(bytes: &[u8]) {
    // SAFETY: writing a borrowed byte slice to fd 2; a short or failed write only loses the
    // message. Raw write(2) is used because this runs on a lock's slow path, where scalelock never
    // allocates or formats.
    unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
}

/// Reads `SCALELOCK_SPIN` once, without allocating (it may run inside a lock's slow path).
#[cold]
fn policy_from_env() -> SpinPolicy {
    let mut policy = SpinPolicy::Adaptive;
    if !cfg!(loom) {
        // SAFETY: getenv with a NUL-terminated name; the returned pointer, if any, is a
        // NUL-terminated string owned by the environment, read at once.
        let raw = unsafe { libc::getenv(c"SCALELOCK_SPIN".as_ptr()) };
        if !raw.is_null() {
            // SAFETY: non-null pointer from getenv, NUL-terminated.
            let value = unsafe { core::ffi::CStr::from_ptr(raw) }.to_bytes();
            match core::str::from_utf8(value)
                .ok()
                .map(str::parse::<SpinPolicy>)
            {
                Some(Ok(p)) => policy = p,
                _ => {
                    write_stderr(b"scalelock: ignoring SCALELOCK_SPIN=");
                    write_stderr(value);
                    write_stderr(
                        b": expected auto, 0, always or a number of nanoseconds; using auto\n",
                    );
                }
            }
        }
    }
    // Another thread may have called set_spin_policy meanwhile: it wins.
    match POLICY.compare_exchange(0, encode(policy), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => policy,
        Err(current) => decode(current),
    }
}

// ---------------------------------------------------------------------------------------------
// Per-lock learned estimate
// ---------------------------------------------------------------------------------------------

/// Estimate a new lock starts from: a short spin, so a lock that is never held long learns fast.
const INITIAL_ESTIMATE_NS: u32 = 1_000;
/// The shortest spin under `Adaptive`: keeps probing, so a lock whose holders became quick again
/// is noticed. It is also the least a waiter spins before its probe yield asks whether another
/// thread wants its CPU (see the `Waiter`).
pub(crate) const MIN_PROBE_NS: u32 = 200;
/// The longest spin under `Adaptive`: about the cost of a futex sleep and wake-up round trip,
/// beyond which sleeping is cheaper (the classic 2-competitive bound).
pub const MAX_ADAPTIVE_SPIN_NS: u32 = 10_000;
/// Process-wide running estimate of the wake-up latency (ns): from an unlock's futex wake to the
/// woken thread running again. It is the cost of sleeping that spinning saves, and it differs a
/// lot between machines (far longer in a busy VM than on idle bare metal).
static WAKE_LATENCY_NS: GlobalU32 = GlobalU32::new(0);
/// When the last wake was issued (monotonic ns; 0: none), read by the thread it woke.
static WAKE_STAMP_NS: GlobalU64 = GlobalU64::new(0);

/// Notes that a lock is about to wake a sleeper. `futex::wake` calls it right before its system
/// call; locks need not. Code that puts threads to sleep some other
/// way (a condition variable of its own, a pipe) can call it before its wake-up, and
/// [`note_woken`] in the thread that wakes, to teach the spin budgets what sleeping costs.
///
/// ```
/// use scalelock::wait::{note_wake, note_woken, now_ns, wake_latency_ns};
/// let slept_at = now_ns(); // the sleeper falls asleep ...
/// note_wake(); // ... the waker wakes it ...
/// note_woken(slept_at); // ... and it notes, once running, how long that took
/// assert!(wake_latency_ns() <= 1_000_000);
/// ```
#[inline]
pub fn note_wake() {
    if !cfg!(loom) {
        WAKE_STAMP_NS.store(super::deadline::now_ns(), Ordering::Relaxed);
    }
}

/// Notes that a thread which went to sleep at `slept_at_ns` has woken up: if the last wake was
/// issued after it fell asleep, the time since that wake is a sample of the wake-up latency.
/// `futex::wait` calls it after every sleep that ended before its deadline. Samples are capped
/// at 1 ms and averaged (an eighth each).
///
/// ```
/// use scalelock::wait::{note_woken, now_ns, wake_latency_ns};
/// // No wake-up was issued after this "sleep" began, so it is no sample.
/// let before = wake_latency_ns();
/// note_woken(now_ns() + 1_000_000_000);
/// assert_eq!(wake_latency_ns(), before);
/// ```
#[inline]
pub fn note_woken(slept_at_ns: u64) {
    if cfg!(loom) {
        return;
    }
    let stamp = WAKE_STAMP_NS.load(Ordering::Relaxed);
    let now = super::deadline::now_ns();
    if stamp > slept_at_ns && now >= stamp {
        let sample = (now - stamp).min(1_000_000) as u32;
        let old = WAKE_LATENCY_NS.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            old - old / 8 + sample / 8
        };
        WAKE_LATENCY_NS.store(new, Ordering::Relaxed);
    }
}

/// The current wake-up latency estimate in nanoseconds (0 until a wake has been observed).
///
/// ```
/// let ns = scalelock::wait::wake_latency_ns();
/// assert!(ns <= 1_000_000);
/// ```
pub fn wake_latency_ns() -> u32 {
    WAKE_LATENCY_NS.load(Ordering::Relaxed)
}

/// After this many failed spins, the next acquisition spins the full adaptive budget once.
pub(crate) const EXPLORE_EVERY: u32 = 8;

/// The estimate word:
///
/// ```text
///  31     28 27 26 25   23 22   20 19   16 15                            0
/// +---------+-----+-------+-------+-------+-------------------------------+
/// |  cycle  | (0) | quiet | catch | fails |     estimate (nanoseconds)    |
/// +---------+-----+-------+-------+-------+-------------------------------+
/// ```
///
/// The estimate, failures since the last exploration (at most [`EXPLORE_EVERY`]), the lock's
/// catch score (see [`SpinEstimate::catch_score`]), its quiet level (see
/// [`SpinEstimate::quiet`]) and its place in its watch cycle (see
/// [`SpinEstimate::watch_turn`]). Each field has one writer method, which keeps the others.
const EST_MASK: u32 = 0xffff;
const FAIL_SHIFT: u32 = 16;
const FAIL_MASK: u32 = 0xf;
const _: () = assert!(EXPLORE_EVERY <= FAIL_MASK);
const CATCH_SHIFT: u32 = 20;
const CATCH_BITS: u32 = CATCH_SCORE_MAX << CATCH_SHIFT;
const QUIET_SHIFT: u32 = 23;
const QUIET_BITS: u32 = 0x7 << QUIET_SHIFT;
const _: () = assert!(QUIET_MAX <= 0x7);
// The fields do not overlap.
const _: () = assert!(
    EST_MASK & (FAIL_MASK << FAIL_SHIFT) == 0
        && (EST_MASK | FAIL_MASK << FAIL_SHIFT) & CATCH_BITS == 0
        && (EST_MASK | FAIL_MASK << FAIL_SHIFT | CATCH_BITS) & QUIET_BITS == 0
        && (EST_MASK | FAIL_MASK << FAIL_SHIFT | CATCH_BITS | QUIET_BITS) & CYCLE_BITS == 0
);

/// The highest quiet level (see [`SpinEstimate::quiet`]).
pub(crate) const QUIET_MAX: u32 = 4;

/// The highest catch score (see [`SpinEstimate::catch_score`]).
pub(crate) const CATCH_SCORE_MAX: u32 = 7;
/// What a failed catch test takes off the score, where a passed one adds one: the score
/// rises only on a lock whose tests pass more than three times in four.
pub(crate) const CATCH_FAIL_PENALTY: u32 = 3;
const CYCLE_SHIFT: u32 = 28;
const CYCLE_BITS: u32 = u32::MAX << CYCLE_SHIFT;

/// Waits in one watch cycle of a lock whose watched waits find nothing (see
/// [`SpinEstimate::watch_turn`]); the top 4 bits of the estimate word count them.
pub(crate) const WATCH_CYCLE: u32 = 16;
/// Of the waits of a [`WATCH_CYCLE`], how many watch: the first ones, so that a lock whose
/// watched waits keep finding a verdict (which restarts the cycle) has every wait watched.
pub(crate) const WATCHED_PER_CYCLE: u32 = 4;
const _: () =
    assert!(WATCHED_PER_CYCLE <= WATCH_CYCLE && WATCH_CYCLE - 1 <= u32::MAX >> CYCLE_SHIFT);

/// How long one acquisition may spin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinBudget {
    /// Spin at most this many nanoseconds, then sleep.
    Nanos(u32),
    /// Spin until acquired (`SpinPolicy::Always`).
    Unbounded,
}

/// A lock's learned spin estimate (one 32-bit word: nanoseconds, and failures since the last
/// exploration).
///
/// Every lock keeps one; the wait layer teaches it after each contended wait that spun.
///
/// ```
/// use scalelock::wait::{SpinBudget, SpinEstimate};
///
/// let e = SpinEstimate::new();
/// assert!(e.get() > 0); // a new lock starts from a short spin
/// assert!(matches!(e.fallback_budget(), SpinBudget::Nanos(_) | SpinBudget::Unbounded));
/// ```
pub struct SpinEstimate(AtomicU32);

impl SpinEstimate {
    /// A fresh estimate.
    #[cfg(not(loom))]
    pub const fn new() -> SpinEstimate {
        SpinEstimate(AtomicU32::new(INITIAL_ESTIMATE_NS))
    }

    /// A fresh estimate.
    #[cfg(loom)]
    pub fn new() -> SpinEstimate {
        SpinEstimate(AtomicU32::new(INITIAL_ESTIMATE_NS))
    }

    /// The current estimate in nanoseconds.
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed) & EST_MASK
    }

    /// Waits in a row whose spin did not pay (since the last that did, or the last
    /// exploration), at most [`EXPLORE_EVERY`].
    #[inline]
    pub(crate) fn futile_waits(&self) -> u32 {
        (self.0.load(Ordering::Relaxed) >> FAIL_SHIFT) & FAIL_MASK
    }

    /// The lock's catch score, `0..=CATCH_SCORE_MAX`: how steadily its waiters' catch tests
    /// have found it left free (see the `Waiter`'s `look`): each test that passed added one,
    /// each that failed took [`CATCH_FAIL_PENALTY`] off.
    #[inline]
    pub(crate) fn catch_score(&self) -> u32 {
        (self.0.load(Ordering::Relaxed) & CATCH_BITS) >> CATCH_SHIFT
    }

    /// A catch test on this lock ended; `passed`: it found the lock left free. Moves the catch
    /// score and returns the new one. Relaxed, like [`record`](Self::record): a lost update
    /// only costs the score one test.
    #[inline]
    pub(crate) fn caught(&self, passed: bool) -> u32 {
        self.move_field(CATCH_BITS, CATCH_SHIFT, |score| {
            if passed {
                (score + 1).min(CATCH_SCORE_MAX)
            } else {
                score.saturating_sub(CATCH_FAIL_PENALTY)
            }
        })
    }

    /// The lock's quiet level, `0..=QUIET_MAX`: how many times over, lately, a sleeper's bound
    /// (the mutex's starvation bound) has ended its sleep on a word that nobody had changed
    /// meanwhile (see [`bound_ended`](Self::bound_ended)). Its sleepers' bounds are that many
    /// times twice as long (see the mutex's docs).
    #[inline]
    pub(crate) fn quiet(&self) -> u32 {
        (self.0.load(Ordering::Relaxed) & QUIET_BITS) >> QUIET_SHIFT
    }

    /// A sleeper's bound ended its sleep; `unchanged`: on a word that nobody had changed since
    /// it fell asleep (the lock was not released meanwhile, as far as the word tells). Raises
    /// the quiet level by one (at most [`QUIET_MAX`]) if so, else sets it to 0; returns the
    /// new level. Relaxed, like [`record`](Self::record): a lost update only costs one sleep
    /// its bound.
    #[inline]
    pub(crate) fn bound_ended(&self, unchanged: bool) -> u32 {
        self.move_field(QUIET_BITS, QUIET_SHIFT, |level| {
            if unchanged {
                (level + 1).min(QUIET_MAX)
            } else {
                0
            }
        })
    }

    /// Moves the field at `bits` (its lowest bit at `shift`) from its value to `next` of it,
    /// keeping the word's other fields, and returns the new value: the one writer of the
    /// catch score, the quiet level and the watch cycle. A Relaxed load and store, not a
    /// read-modify-write: a racing update of another field may be lost, which costs that
    /// field one sample.
    #[inline]
    fn move_field(&self, bits: u32, shift: u32, next: impl FnOnce(u32) -> u32) -> u32 {
        let v = self.0.load(Ordering::Relaxed);
        let value = (v & bits) >> shift;
        let new = next(value);
        if new != value {
            self.0
                .store((v & !bits) | ((new << shift) & bits), Ordering::Relaxed);
        }
        new
    }

    /// Whether the next yielding waiter of this lock watches it (times its looks; see the
    /// `Waiter`): true for the first [`WATCHED_PER_CYCLE`] waits of every [`WATCH_CYCLE`].
    /// A watched wait whose looks found the lock re-taken or declined it restarts the cycle
    /// (see [`watched`](Self::watched)), so a lock where watching pays is watched on every
    /// wait, and one where it keeps finding nothing only on those few: a timed look costs two
    /// reads of the time-stamp counter, which a lock that changes hands in a few hundred
    /// nanoseconds notices.
    #[inline]
    pub(crate) fn watch_turn(&self) -> bool {
        self.0.load(Ordering::Relaxed) >> CYCLE_SHIFT < WATCHED_PER_CYCLE
    }

    /// A yielding wait that spun has ended; `verdict`: its looks found the lock re-taken under
    /// its eyes, or it declined the lock (a watched wait only). Moves the lock on in its watch
    /// cycle (see [`watch_turn`](Self::watch_turn)). Relaxed, like [`record`](Self::record):
    /// a lost update only shifts the cycle by a wait.
    #[inline]
    pub(crate) fn watched(&self, verdict: bool) {
        self.move_field(CYCLE_BITS, CYCLE_SHIFT, |at| {
            if verdict {
                0
            } else {
                (at + 1) % WATCH_CYCLE
            }
        });
    }

    /// The spin budget for the next acquisition under the current policy.
    #[inline]
    pub fn budget(&self) -> SpinBudget {
        // Spin at least about what sleeping costs here (spin-then-block is then 2-competitive),
        // and longer if this lock's spins succeed after longer waits.
        self.budget_from(WAKE_LATENCY_NS.load(Ordering::Relaxed) / 2)
    }

    /// The budget for a wait whose fallback is not a sleep but a slower way in (a reader
    /// waiting for a lock's read bias, who can take the underlying lock instead): what
    /// [`budget`](Self::budget) gives, without its floor of half a wake-up latency, which prices
    /// a sleep this waiter would not take. At least `MIN_PROBE_NS`; policies override it as
    /// they do `budget`.
    ///
    /// ```
    /// use scalelock::wait::{SpinBudget, SpinEstimate, SpinPolicy};
    ///
    /// let e = SpinEstimate::new();
    /// if scalelock::wait::spin_policy() == SpinPolicy::Adaptive {
    ///     // A new lock's estimate is short: no floor lifts it to the longest spin.
    ///     assert!(matches!(e.fallback_budget(), SpinBudget::Nanos(ns) if ns < 10_000));
    /// }
    /// ```
    #[inline]
    pub fn fallback_budget(&self) -> SpinBudget {
        self.budget_from(0)
    }

    /// The budget under the current policy; under `Adaptive`, four times the estimate (or the
    /// full adaptive spin, once every `EXPLORE_EVERY` failures), at least `floor` and
    /// `MIN_PROBE_NS`, at most `MAX_ADAPTIVE_SPIN_NS`.
    #[inline]
    fn budget_from(&self, floor: u32) -> SpinBudget {
        self.budget_under(spin_policy(), floor)
    }

    /// [`budget_from`](Self::budget_from) under `policy` rather than the process-wide one.
    #[inline]
    pub(crate) fn budget_under(&self, policy: SpinPolicy, floor: u32) -> SpinBudget {
        match policy {
            SpinPolicy::Adaptive => {
                let v = self.0.load(Ordering::Relaxed);
                if (v >> FAIL_SHIFT) & FAIL_MASK >= EXPLORE_EVERY {
                    SpinBudget::Nanos(MAX_ADAPTIVE_SPIN_NS)
                } else {
                    SpinBudget::Nanos(
                        (v & EST_MASK)
                            .saturating_mul(4)
                            .max(floor.max(MIN_PROBE_NS))
                            .min(MAX_ADAPTIVE_SPIN_NS),
                    )
                }
            }
            SpinPolicy::Fixed(ns) => SpinBudget::Nanos(ns),
            SpinPolicy::Never => SpinBudget::Nanos(0),
            SpinPolicy::Always => SpinBudget::Unbounded,
        }
    }

    /// Records the outcome of a spin: `acquired` after `spun_ns`, or not (the waiter slept).
    /// Relaxed loads and stores: a lost update only delays learning by one sample. Only the
    /// wait layer's `Waiter` calls it.
    #[inline]
    pub(crate) fn record(&self, acquired: bool, spun_ns: u32) {
        let v = self.0.load(Ordering::Relaxed);
        let (est, fails) = (v & EST_MASK, (v >> FAIL_SHIFT) & FAIL_MASK);
        let learned = if acquired {
            est - est / 4 + spun_ns.min(MAX_ADAPTIVE_SPIN_NS) / 4
        } else if fails >= EXPLORE_EVERY {
            // This failure was the exploration: start counting again.
            est - est / 8
        } else {
            (est - est / 8) | (fails + 1) << FAIL_SHIFT
        };
        // The watch cycle, the catch score and the quiet level are not this method's to change.
        let new = learned | (v & (CYCLE_BITS | CATCH_BITS | QUIET_BITS));
        if new != v {
            self.0.store(new, Ordering::Relaxed);
        }
    }
}

impl Default for SpinEstimate {
    fn default() -> SpinEstimate {
        SpinEstimate::new()
    }
}

impl fmt::Debug for SpinEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpinEstimate({} ns)", self.get())
    }
}

// ---------------------------------------------------------------------------------------------
// The spin loop
// ---------------------------------------------------------------------------------------------

/// One waiter's spin loop: exponential backoff with jitter, charged against a [`SpinBudget`].
///
/// ```
/// use scalelock::wait::{SpinBudget, Spinner};
///
/// let mut s = Spinner::new(SpinBudget::Nanos(2_000));
/// let mut steps = 0;
/// while s.spin() {
///     steps += 1; // re-check the lock here
/// }
/// assert!(steps > 0 && s.spent_ns() >= 2_000);
/// ```
#[derive(Debug)]
pub struct Spinner {
    budget_ps: u64,
    spent_ps: u64,
    step: u32,
    /// Steps stop growing at `2^max_step_log` pauses.
    #[cfg_attr(loom, allow(dead_code))]
    max_step_log: u32,
    #[cfg_attr(loom, allow(dead_code))]
    seed: u32,
}

impl Spinner {
    /// A spinner with this budget.
    #[inline]
    pub fn new(budget: SpinBudget) -> Spinner {
        let budget_ps = match budget {
            SpinBudget::Nanos(ns) => ns as u64 * 1000,
            SpinBudget::Unbounded => u64::MAX,
        };
        Spinner {
            budget_ps,
            spent_ps: 0,
            step: 0,
            max_step_log: 7,
            seed: 0,
        }
    }

    /// A spinner for a wait that only *reads* the word it waits on (say, a flag that another
    /// thread will set): its steps stay short (at most 4 pauses), so the waiter notices the
    /// change within a few nanoseconds. Backing off protects a line that waiters write, or
    /// compare-and-swap, from their traffic; polling with loads costs the thread that will
    /// change it nothing, since its store invalidates every reader's copy at once, whatever
    /// their number.
    ///
    /// ```
    /// use scalelock::wait::{pause_ps, SpinBudget, Spinner};
    ///
    /// let mut s = Spinner::polling(SpinBudget::Nanos(1_000));
    /// let mut steps = 0u64;
    /// while s.spin() {
    ///     steps += 1; // re-read the flag here
    /// }
    /// // A step is at most 4 pauses (calibrated on this CPU), so spending the budget takes at
    /// // least this many of them.
    /// let longest_step_ps = 4 * u64::from(pause_ps());
    /// assert!(steps >= 1_000_000 / longest_step_ps && s.spent_ns() >= 1_000);
    /// ```
    #[inline]
    pub fn polling(budget: SpinBudget) -> Spinner {
        Spinner {
            max_step_log: 2,
            ..Spinner::new(budget)
        }
    }

    /// Spins one backoff step and returns `true`, or returns `false` at once if the budget is
    /// spent (the caller should then sleep).
    #[inline]
    pub fn spin(&mut self) -> bool {
        if self.spent_ps >= self.budget_ps {
            return false;
        }
        self.spin_step();
        true
    }

    #[cfg(loom)]
    fn spin_step(&mut self) {
        // One yield stands for the whole budget: loom explores "spun and won" and "slept".
        loom::hint::spin_loop();
        self.spent_ps = self.budget_ps;
    }

    #[cfg(not(loom))]
    fn spin_step(&mut self) {
        let pause = pause_ps() as u64;
        // Steps grow 1, 2, 4, .. pauses up to about 256 ns, so a waiter re-checks often enough to
        // catch a quick release but does not hammer the lock's cache line.
        let cap = (256_000 / pause).clamp(1, 128) as u32;
        let max = (1u32 << self.step.min(self.max_step_log)).min(cap);
        if self.seed == 0 {
            self.seed = (self as *const Spinner as usize as u32) | 1;
        }
        // xorshift32 jitter: pause between max/2 and max, so waiters that started together
        // drift apart instead of retrying in lockstep.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 17;
        self.seed ^= self.seed << 5;
        let n = max / 2 + self.seed % (max / 2 + 1);
        let n = n.max(1);
        for _ in 0..n {
            core::hint::spin_loop();
        }
        self.step += 1;
        self.spent_ps = self.spent_ps.saturating_add(n as u64 * pause);
    }

    /// Lowers the budget to `ns` in all (never raises it; an unbounded spinner stays so).
    #[inline]
    pub(crate) fn cap_ns(&mut self, ns: u32) {
        if self.budget_ps != u64::MAX {
            self.budget_ps = self.budget_ps.min(ns as u64 * 1000);
        }
    }

    /// Nanoseconds spun so far (calibrated, not measured with a clock).
    #[inline]
    pub fn spent_ns(&self) -> u32 {
        (self.spent_ps / 1000).min(u32::MAX as u64) as u32
    }

    /// Whether this spinner has spun at all.
    #[inline]
    pub fn has_spun(&self) -> bool {
        self.step > 0 || self.spent_ps > 0
    }
}

/// Spin steps between two looks at the deadline while a timed wait spins (a step is at most a
/// few hundred nanoseconds; a look is a clock read).
pub(super) const DEADLINE_CHECK_EVERY: u32 = 16;

/// Gives this thread's CPU to another runnable thread, if there is one (`sched_yield`), tells
/// `cadence` that it did, and returns when the yield ended (monotonic ns; 0 under loom).
#[inline]
pub(super) fn yield_cpu() -> u64 {
    #[cfg(loom)]
    {
        loom::thread::yield_now();
        0
    }
    #[cfg(not(loom))]
    {
        std::thread::yield_now();
        let now = super::now_ns();
        super::cadence::gave_cpu(now);
        now
    }
}
