//! A loom model of `futex.rs`, used under `--cfg loom` so that every lock protocol is
//! model-checked against the same contract as the real futex:
//!
//! - `wait` compares the word and enqueues atomically with respect to `wake` on the same word
//!   (here: one table mutex plays the kernel's hash-bucket lock);
//! - a timed `wait` either is woken or times out: the model enqueues, yields, and times out if no
//!   `wake` came meanwhile. Time is virtual: it advances by one tick whenever a timed wait returns,
//!   and a [`Deadline`] of N seconds passes after N ticks, so "woken, but the deadline passed"
//!   is explored too (the virtual clock lives with `Deadline`, in `deadline.rs`);
//! - `wake` wakes up to `n` sleepers on that word and reports how many.
//!
//! A lost wake-up shows up as loom reporting that every thread is blocked.

use super::deadline::Deadline;
use crate::sync::{AtomicU32, Ordering};
use loom::sync::{Condvar, Mutex};

struct Table {
    /// (word address, ticket, class) of each sleeping thread, in arrival order.
    sleepers: Vec<(usize, u64, u32)>,
    next_ticket: u64,
}

loom::lazy_static! {
    static ref TABLE: (Mutex<Table>, Condvar) =
        (Mutex::new(Table { sleepers: Vec::new(), next_ticket: 0 }), Condvar::new());
}

fn key(word: &AtomicU32) -> usize {
    word as *const AtomicU32 as usize
}

/// Model of [`futex::WaitOutcome`](super::futex::WaitOutcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    Woken,
    NotWoken,
    TimedOut,
}

/// Model of [`futex::wait`](super::futex::wait).
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<&Deadline>) -> bool {
    wait_outcome(word, expected, deadline) != WaitOutcome::TimedOut
}

/// Model of [`futex::wait_outcome`](super::futex::wait_outcome).
pub fn wait_outcome(word: &AtomicU32, expected: u32, deadline: Option<&Deadline>) -> WaitOutcome {
    wait_outcome_in(word, expected, deadline, ANY_CLASS)
}

/// Model of [`futex::ANY_CLASS`](super::futex::ANY_CLASS).
pub const ANY_CLASS: u32 = u32::MAX;

/// Model of [`futex::wait_outcome_in`](super::futex::wait_outcome_in).
pub fn wait_outcome_in(
    word: &AtomicU32,
    expected: u32,
    deadline: Option<&Deadline>,
    class: u32,
) -> WaitOutcome {
    let class = if class == 0 { ANY_CLASS } else { class };
    let (lock, cv) = &*TABLE;
    let mut table = lock.lock().unwrap();
    if word.load(Ordering::SeqCst) != expected {
        return WaitOutcome::NotWoken;
    }
    let ticket = table.next_ticket;
    table.next_ticket += 1;
    table.sleepers.push((key(word), ticket, class));
    if deadline.is_some() {
        drop(table);
        loom::thread::yield_now();
        let mut table = lock.lock().unwrap();
        super::deadline::virtual_clock::advance();
        let before = table.sleepers.len();
        table.sleepers.retain(|s| s.1 != ticket);
        // Still queued: nobody woke us, the timeout fired.
        return if table.sleepers.len() == before {
            WaitOutcome::Woken
        } else {
            WaitOutcome::TimedOut
        };
    }
    while table.sleepers.iter().any(|s| s.1 == ticket) {
        table = cv.wait(table).unwrap();
    }
    WaitOutcome::Woken
}

/// Model of [`futex::wake`](super::futex::wake).
pub fn wake(word: &AtomicU32, n: u32) -> u32 {
    wake_in(word, n, ANY_CLASS)
}

/// Model of [`futex::wake_in`](super::futex::wake_in): the oldest sleepers of a matching class.
pub fn wake_in(word: &AtomicU32, n: u32, class: u32) -> u32 {
    let (lock, cv) = &*TABLE;
    let mut table = lock.lock().unwrap();
    let k = key(word);
    let mut woken = 0;
    table.sleepers.retain(|s| {
        if s.0 == k && s.2 & class != 0 && woken < n {
            woken += 1;
            false
        } else {
            true
        }
    });
    if woken > 0 {
        cv.notify_all();
    }
    woken
}

/// Model of [`futex::requeue_all`](super::futex::requeue_all).
pub fn requeue_all(from: &AtomicU32, expected: u32, to: &AtomicU32) -> Option<u32> {
    let (lock, _) = &*TABLE;
    let mut table = lock.lock().unwrap();
    if from.load(Ordering::SeqCst) != expected {
        return None;
    }
    let (kf, kt) = (key(from), key(to));
    let mut count = 0;
    for s in table.sleepers.iter_mut().filter(|s| s.0 == kf) {
        s.0 = kt;
        count += 1;
    }
    Some(count)
}
