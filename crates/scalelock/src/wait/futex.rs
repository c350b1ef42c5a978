//! Futex wait and wake on Linux: the only file of the wait layer that talks to the OS.
//!
//! Every lock in scalelock sleeps here and nowhere else. A port to another OS replaces this file
//! (the loom model in `futex_loom.rs` shows the contract: `wait` may return spuriously, never misses
//! a `wake` issued after the word changed, and `wake` reports how many sleepers it woke).
//!
//! All operations use private futexes (`FUTEX_PRIVATE_FLAG`): scalelock's locks live in one
//! process. Timed waits take an absolute deadline (`FUTEX_WAIT_BITSET`), so a wait interrupted by a
//! signal and restarted never waits longer than asked.
//!
//! A sleeper may also sleep in a *class* ([`wait_outcome_in`]; the kernel's futex bitsets): a
//! [`wake_in`] that names a class wakes only sleepers of that class, oldest first, where a plain
//! [`wake`] wakes the oldest sleeper of any class. A lock uses this to wake a particular kind of
//! sleeper ahead of the queue (the mutex: a waiter that has starved).

use super::deadline::{Clock, Deadline};
use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};

/// How a [`wait_outcome`] ended.
///
/// ```
/// use scalelock::wait::futex::{wait_outcome, WaitOutcome};
/// use std::sync::atomic::AtomicU32;
///
/// let word = AtomicU32::new(7);
/// // The word does not hold 0: no sleep, and nobody woke us.
/// assert_eq!(wait_outcome(&word, 0, None), WaitOutcome::NotWoken);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// A `wake` woke this thread (or, rarely, the kernel woke it spuriously).
    Woken,
    /// It did not sleep, or stopped early: the word no longer held `expected` (it changed before
    /// the kernel compared it), or a signal interrupted the sleep. No `wake` picked this thread.
    NotWoken,
    /// The deadline passed.
    TimedOut,
}

/// Sleeps while `*word == expected`.
///
/// Returns `false` only if `deadline` passed; `true` on a wake, a spurious wake-up, a signal, or
/// when the word no longer held `expected`. Callers re-check their condition in a loop.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(1);
/// // The word does not hold 0: returns at once.
/// assert!(scalelock::wait::futex::wait(&word, 0, None));
/// ```
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<&Deadline>) -> bool {
    wait_outcome(word, expected, deadline) != WaitOutcome::TimedOut
}

/// [`wait`], telling a wake-up apart from a return without one: a lock that hands a wake-up to
/// one sleeper (and marks it on its way) must know whether this thread is that sleeper. Under a
/// stream of releases the word often changes between the caller's read and the kernel's compare
/// (`NotWoken`); treating that as a wake-up let writers clear a mark that was not theirs, and
/// each cleared mark woke one more writer.
///
/// A sleep ended by a wake-up is a sample of the wake-up latency (see
/// [`note_woken`](super::note_woken)): every lock that sleeps here teaches the spin budgets of
/// all locks what sleeping costs on this machine.
///
/// ```
/// use scalelock::wait::{futex, Deadline};
/// use std::sync::atomic::AtomicU32;
/// use std::time::Duration;
/// let word = AtomicU32::new(0);
/// let soon = Deadline::after(Duration::from_millis(1));
/// assert_eq!(futex::wait_outcome(&word, 1, Some(&soon)), futex::WaitOutcome::NotWoken);
/// assert_eq!(futex::wait_outcome(&word, 0, Some(&soon)), futex::WaitOutcome::TimedOut);
/// ```
#[inline]
pub fn wait_outcome(word: &AtomicU32, expected: u32, deadline: Option<&Deadline>) -> WaitOutcome {
    wait_outcome_in(word, expected, deadline, ANY_CLASS)
}

/// The class every sleeper belongs to, and a [`wake_in`] of it wakes any sleeper (the bitset
/// that matches every other).
pub const ANY_CLASS: u32 = libc::FUTEX_BITSET_MATCH_ANY as u32;

/// [`wait_outcome`], sleeping in `class` (a nonzero bit mask; see the module docs): a
/// [`wake_in`] wakes this thread only if its class shares a bit with `class`, a plain [`wake`]
/// whatever its class. A `class` of 0 is taken as [`ANY_CLASS`] (the kernel refuses an empty
/// one).
///
/// ```
/// use scalelock::wait::futex;
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(3);
/// // The word does not hold 0: no sleep, whatever the class.
/// assert_eq!(futex::wait_outcome_in(&word, 0, None, 2), futex::WaitOutcome::NotWoken);
/// // Nobody sleeps in class 2: a wake of that class wakes nobody.
/// assert_eq!(futex::wake_in(&word, 1, 2), 0);
/// ```
#[inline]
pub fn wait_outcome_in(
    word: &AtomicU32,
    expected: u32,
    deadline: Option<&Deadline>,
    class: u32,
) -> WaitOutcome {
    let class = if class == 0 { ANY_CLASS } else { class };
    if word.load(Ordering::Relaxed) != expected {
        return WaitOutcome::NotWoken;
    }
    let (op, ts) = match deadline {
        None => (
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            ptr::null(),
        ),
        Some(d) => {
            let clock_flag = match d.clock() {
                Clock::Monotonic => 0,
                Clock::Realtime => libc::FUTEX_CLOCK_REALTIME,
            };
            (
                libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG | clock_flag,
                d.as_timespec() as *const libc::timespec,
            )
        }
    };
    let slept_at = super::now_ns();
    // SAFETY: `word` is a live, aligned 32-bit atomic for the duration of the call; `ts` is null or
    // points at a timespec borrowed from `deadline`, which outlives the call. The kernel only reads
    // both. FUTEX_WAIT_BITSET with a match-any mask behaves as FUTEX_WAIT with an absolute
    // timeout; `class` is nonzero (an empty bitset is EINVAL).
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            ts,
            ptr::null::<u32>(),
            class,
        )
    };
    // SAFETY: reading errno right after a failed syscall on this thread.
    let errno = if r == 0 {
        0
    } else {
        unsafe { *libc::__errno_location() }
    };
    // Unless the word had changed (EAGAIN: the thread never slept), the thread gave its CPU
    // away: every sleep tells `cadence` so, as every yield does (see `spin::yield_cpu`).
    if errno != libc::EAGAIN {
        super::cadence::gave_cpu(super::now_ns());
    }
    match errno {
        0 => {
            super::note_woken(slept_at);
            WaitOutcome::Woken
        }
        libc::ETIMEDOUT => WaitOutcome::TimedOut,
        _ => WaitOutcome::NotWoken,
    }
}

/// Wakes at most `n` threads sleeping on `word`, of any class; returns how many were woken.
/// (Stamps the time of the wake first: see [`note_wake`](super::note_wake).)
#[inline]
pub fn wake(word: &AtomicU32, n: u32) -> u32 {
    wake_in(word, n, ANY_CLASS)
}

/// Wakes at most `n` threads sleeping on `word` in a class that shares a bit with `class`,
/// oldest first; returns how many were woken. A `class` of 0 wakes nobody. (Stamps the time of
/// the wake first: see [`note_wake`](super::note_wake).)
///
/// ```
/// use scalelock::wait::futex;
/// use std::sync::atomic::AtomicU32;
/// let word = AtomicU32::new(0);
/// assert_eq!(futex::wake_in(&word, 1, futex::ANY_CLASS), 0);
/// ```
#[inline]
pub fn wake_in(word: &AtomicU32, n: u32, class: u32) -> u32 {
    if class == 0 {
        return 0;
    }
    super::note_wake();
    let n = n.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: FUTEX_WAKE_BITSET only uses the address of `word` as a key; it never dereferences
    // past it. The timeout and second-word arguments are unused by this operation; `class` is
    // nonzero (an empty bitset is EINVAL). With every bit set it is FUTEX_WAKE.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE_BITSET | libc::FUTEX_PRIVATE_FLAG,
            n,
            ptr::null::<libc::timespec>(),
            ptr::null::<u32>(),
            class,
        )
    };
    if r < 0 {
        0
    } else {
        r as u32
    }
}

/// Moves every thread sleeping on `from` to sleep on `to`, waking none, if `from` still holds
/// `expected`. Returns `None` when `from` had changed (nothing was done), otherwise the number of
/// threads moved. A moved thread returns from its [`wait`] when `to` is woken (or its deadline
/// passes).
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// let (from, to) = (AtomicU32::new(1), AtomicU32::new(0));
/// assert_eq!(scalelock::wait::futex::requeue_all(&from, 1, &to), Some(0));
/// assert_eq!(scalelock::wait::futex::requeue_all(&from, 2, &to), None);
/// ```
#[inline]
pub fn requeue_all(from: &AtomicU32, expected: u32, to: &AtomicU32) -> Option<u32> {
    if cfg!(miri) {
        return wake_instead_of_requeue(from, expected);
    }
    // (No `note_wake`: this wakes nobody; the moved threads are woken by the mutex's unlock.)
    // SAFETY: both words are live aligned atomics; FUTEX_CMP_REQUEUE uses them as keys and reads
    // `from` for the comparison. The 3rd argument is the number to wake (none), the 4th carries
    // the requeue limit by value, as the ABI of this operation specifies.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            from.as_ptr(),
            libc::FUTEX_CMP_REQUEUE | libc::FUTEX_PRIVATE_FLAG,
            0 as libc::c_int,
            i32::MAX as libc::c_long,
            to.as_ptr(),
            expected,
        )
    };
    if r < 0 {
        None
    } else {
        Some(r as u32)
    }
}

/// Under Miri, which has no `FUTEX_CMP_REQUEUE`: wakes every sleeper on `from` instead of moving
/// them to `to`. Equivalent for every caller: a thread moved to `to` only waits there to be woken
/// and then re-checks its lock, which a woken thread does at once (it contends for the lock
/// instead of queueing on it).
fn wake_instead_of_requeue(from: &AtomicU32, expected: u32) -> Option<u32> {
    if from.load(Ordering::Relaxed) != expected {
        return None;
    }
    Some(wake(from, u32::MAX))
}
