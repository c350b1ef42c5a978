//! Absolute deadlines for timed waits.
//!
//! A [`Deadline`] is a point on a named clock, kept as the `timespec` the futex takes, so a wait
//! that wakes early (a signal, a spurious wake-up, a lost race) re-waits for the time that is left,
//! never for the whole timeout again. `CLOCK_MONOTONIC` serves Rust's `Instant`; `CLOCK_REALTIME`
//! serves C callers whose `pthread_*_timedlock` deadlines are wall-clock times.

use core::fmt;
use std::time::{Duration, Instant};

/// The clock a [`Deadline`] is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// `CLOCK_MONOTONIC`, the clock of [`std::time::Instant`].
    Monotonic,
    /// `CLOCK_REALTIME`, wall-clock time.
    Realtime,
}

impl Clock {
    fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
        }
    }

    /// The current time on this clock.
    pub fn now(self) -> libc::timespec {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and both clock ids exist on every Linux.
        unsafe { libc::clock_gettime(self.id(), &mut ts) };
        ts
    }
}

/// An absolute deadline on a [`Clock`].
///
/// ```
/// use scalelock::wait::Deadline;
/// use std::time::Duration;
///
/// let d = Deadline::after(Duration::from_millis(5));
/// assert!(!d.has_passed());
/// std::thread::sleep(Duration::from_millis(6));
/// assert!(d.has_passed());
/// ```
#[derive(Clone, Copy)]
pub struct Deadline {
    ts: libc::timespec,
    clock: Clock,
}

const NANOS: i64 = 1_000_000_000;

// `time_t` and `c_long` are not i64 on every target: keep the casts.
#[allow(clippy::unnecessary_cast)]
fn add(ts: libc::timespec, d: Duration) -> libc::timespec {
    let mut sec = (ts.tv_sec as i64).saturating_add(d.as_secs().min(i64::MAX as u64) as i64);
    let mut nsec = ts.tv_nsec as i64 + d.subsec_nanos() as i64;
    if nsec >= NANOS {
        nsec -= NANOS;
        sec = sec.saturating_add(1);
    }
    libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: nsec as _,
    }
}

impl Deadline {
    /// A deadline `timeout` from now on the monotonic clock (saturating far in the future).
    pub fn after(timeout: Duration) -> Deadline {
        if cfg!(loom) {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: 0,
            };
            return Deadline {
                ts,
                clock: Clock::Monotonic,
            };
        }
        Deadline {
            ts: add(Clock::Monotonic.now(), timeout),
            clock: Clock::Monotonic,
        }
    }

    /// The deadline that corresponds to `instant`.
    pub fn at(instant: Instant) -> Deadline {
        let now = Instant::now();
        Deadline::after(instant.saturating_duration_since(now))
    }

    /// A deadline given as a C `timespec` on `clock`, or `None` if `ts` is not a valid time
    /// (negative seconds, or nanoseconds outside `0..1_000_000_000`): the `EINVAL` case of POSIX.
    #[allow(clippy::unnecessary_cast)]
    pub fn from_timespec(clock: Clock, ts: libc::timespec) -> Option<Deadline> {
        if ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec as i64 >= NANOS {
            return None;
        }
        Some(Deadline { ts, clock })
    }

    /// Whether the deadline has been reached.
    pub fn has_passed(&self) -> bool {
        #[cfg(loom)]
        {
            // Under loom, time is the model's virtual clock (below), and a deadline `after(d)`
            // passes after `d.as_secs()` ticks.
            return virtual_clock::ticks() >= self.ts.tv_sec as u64;
        }
        #[allow(unreachable_code)]
        let now = self.clock.now();
        (now.tv_sec, now.tv_nsec) >= (self.ts.tv_sec, self.ts.tv_nsec)
    }

    /// Whether this deadline comes before `other` (on different clocks: assume not).
    ///
    /// ```
    /// use scalelock::wait::Deadline;
    /// use std::time::Duration;
    ///
    /// let soon = Deadline::after(Duration::from_millis(1));
    /// let later = Deadline::after(Duration::from_secs(1));
    /// assert!(soon.is_before(&later) && !later.is_before(&soon));
    /// ```
    pub fn is_before(&self, other: &Deadline) -> bool {
        let (a, b) = (&self.ts, &other.ts);
        self.clock == other.clock && (a.tv_sec, a.tv_nsec) < (b.tv_sec, b.tv_nsec)
    }

    /// The clock this deadline is measured on.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The deadline as the `timespec` the futex takes.
    pub fn as_timespec(&self) -> &libc::timespec {
        &self.ts
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("clock", &self.clock)
            .field("sec", &self.ts.tv_sec)
            .field("nsec", &self.ts.tv_nsec)
            .finish()
    }
}

/// Monotonic time in nanoseconds, for measuring waits (0 under loom, whose executions must not
/// depend on time).
#[inline]
pub fn now_ns() -> u64 {
    if cfg!(loom) {
        return 0;
    }
    let ts = Clock::Monotonic.now();
    ts.tv_sec as u64 * NANOS as u64 + ts.tv_nsec as u64
}

/// Loom's virtual time: the number of timed futex waits that have returned in this execution
/// (the futex model advances it while it holds its table lock), so that "woken, but the
/// deadline passed" is explored without reading a real clock, which would make executions
/// differ. A plain atomic, not one of loom's: loom runs one thread at a time, so its value is
/// fixed by the schedule, and it adds no interleavings of its own to explore.
#[cfg(loom)]
pub(crate) mod virtual_clock {
    use std::sync::atomic::{AtomicU64, Ordering};

    loom::lazy_static! {
        static ref TICKS: AtomicU64 = AtomicU64::new(0);
    }

    /// Ticks so far.
    pub(crate) fn ticks() -> u64 {
        TICKS.load(Ordering::Relaxed)
    }

    /// One more tick: a timed wait returned.
    pub(crate) fn advance() {
        TICKS.fetch_add(1, Ordering::Relaxed);
    }
}
