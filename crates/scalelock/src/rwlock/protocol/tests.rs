//! White-box checks of the `WRITER_WOKEN` and `DRAIN` transitions: whether a release wakes (the
//! writer sequence moves with every wake-up), what it leaves in the word, who may enter.
use super::*;
use crate::wait::{spin_policy, SpinPolicy};

/// Whether a waiter may sleep under the policy these tests run with: under
/// `SpinPolicy::Always` it spins until it has the lock, so the marks only a sleeper leaves
/// never appear, and a test that waits for them checks the spinning waiter instead.
fn waiters_sleep() -> bool {
    spin_policy() != SpinPolicy::Always
}

fn seq(l: &RawRwLock) -> u32 {
    l.writer_seq.load(Ordering::Relaxed)
}

/// Takes the lock (`read` or write) on one thread, adds `bits` to the word as if other
/// threads waited, releases, and returns how many wake-ups the release issued and the word
/// it left. No thread sleeps, so every wake-up finds nobody.
fn release_with(bits: u32, read: bool) -> (u32, u32) {
    let l = RawRwLock::new();
    if read {
        l.lock_shared();
    } else {
        l.lock_exclusive();
    }
    l.state.fetch_or(bits, Ordering::Relaxed);
    let before = seq(&l);
    // SAFETY: taken just above, in the same mode.
    unsafe {
        if read {
            l.unlock_shared();
        } else {
            l.unlock_exclusive();
        }
    }
    (
        seq(&l).wrapping_sub(before),
        l.state.load(Ordering::Relaxed),
    )
}

#[test]
fn no_release_wakes_anyone_while_a_woken_writer_is_on_its_way() {
    for read in [false, true] {
        let marked = WRITERS_WAITING | WRITER_WOKEN;
        assert_eq!(release_with(marked, read), (0, marked), "read: {read}");
    }
}

#[test]
fn a_write_release_marks_the_writer_it_wakes_and_a_read_release_does_not() {
    // The write release wakes with the mark, then (nobody was asleep) without it; the read
    // release wakes once, unmarked. Both then clear the stale bit.
    assert_eq!(release_with(WRITERS_WAITING, false), (2, 0));
    assert_eq!(release_with(WRITERS_WAITING, true), (1, 0));
}

#[test]
fn a_woken_writer_drops_the_mark_and_leaves_the_word_clean() {
    let l = std::sync::Arc::new(RawRwLock::new());
    for _ in 0..20 {
        l.lock_exclusive();
        let t = {
            let l = l.clone();
            std::thread::spawn(move || {
                l.lock_exclusive();
                // SAFETY: locked exclusively just above.
                unsafe { l.unlock_exclusive() };
            })
        };
        if waiters_sleep() {
            while l.state.load(Ordering::Relaxed) & WRITERS_WAITING == 0 {
                std::thread::yield_now();
            }
        }
        // Let it fall asleep (or, where waiters never sleep, reach its spin).
        std::thread::sleep(std::time::Duration::from_millis(2));
        let before = seq(&l);
        let word = l.state.load(Ordering::Relaxed);
        // SAFETY: locked exclusively above.
        unsafe { l.unlock_exclusive() };
        if waiters_sleep() {
            assert_ne!(seq(&l), before, "the sleeping writer is woken");
        } else {
            assert_eq!(word, WRITER, "a spinning writer leaves no mark: {l:?}");
        }
        t.join().unwrap();
        // Had it kept the mark, its own release would have skipped its clean-up.
        assert_eq!(l.state.load(Ordering::Relaxed), 0, "{l:?}");
    }
}

#[test]
fn readers_enter_past_sleeping_writers_but_not_past_a_draining_one() {
    let l = RawRwLock::new();
    l.state.fetch_or(WRITERS_WAITING, Ordering::Relaxed);
    assert!(
        l.try_lock_shared(),
        "writers that only queue keep no reader out"
    );
    // SAFETY: read-locked just above.
    unsafe { l.unlock_shared() };
    l.state.store(WRITERS_WAITING | DRAIN, Ordering::Relaxed);
    assert!(!l.try_lock_shared());
    assert!(!l.try_lock_upgradable());
    assert!(
        l.try_lock_shared_recursive(),
        "a recursive read only waits for a holder"
    );
    // SAFETY: read-locked just above. (The release finds no writer asleep to wake, so it
    // clears both bits.)
    unsafe { l.unlock_shared() };
    assert_eq!(l.state.load(Ordering::Relaxed), 0);
}

#[test]
fn a_writer_kept_out_by_readers_drains_them_and_one_kept_out_by_a_writer_does_not() {
    let l = std::sync::Arc::new(RawRwLock::new());
    for reader_holds in [true, false] {
        if reader_holds {
            l.lock_shared();
        } else {
            l.lock_exclusive();
        }
        let t = {
            let l = l.clone();
            std::thread::spawn(move || {
                l.lock_exclusive();
                let s = l.state.load(Ordering::Relaxed);
                // SAFETY: locked exclusively just above.
                unsafe { l.unlock_exclusive() };
                s
            })
        };
        // A writer that never sleeps announces itself only where readers keep it out.
        let marks = reader_holds || waiters_sleep();
        if marks {
            while l.state.load(Ordering::Relaxed) & WRITERS_WAITING == 0 {
                std::thread::yield_now();
            }
        } else {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let s = l.state.load(Ordering::Relaxed);
        assert_eq!(s & WRITERS_WAITING != 0, marks, "{l:?}");
        assert_eq!(s & DRAIN != 0, reader_holds, "{l:?}");
        // SAFETY: taken at the top of this iteration.
        unsafe {
            if reader_holds {
                l.unlock_shared();
            } else {
                l.unlock_exclusive();
            }
        }
        let inside = t.join().unwrap();
        assert_eq!(
            inside & DRAIN,
            0,
            "the writer that takes the lock clears DRAIN"
        );
        assert_eq!(l.state.load(Ordering::Relaxed) & !TURN_MASK, 0, "{l:?}");
    }
}

#[test]
fn a_read_past_the_cap_backs_out_waits_and_enters_when_one_leaves() {
    let l = std::sync::Arc::new(RawRwLock::new());
    // As if READERS_CAP - 1 leaked guards held the lock, then take the last admitted one.
    l.state
        .store((READERS_CAP - 1) * ONE_READER, Ordering::Relaxed);
    assert!(l.try_lock_shared());
    assert!(readers_full(l.state.load(Ordering::Relaxed)));
    assert!(!l.try_lock_shared());
    assert!(!l.try_lock_shared_recursive());
    let t = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.lock_shared();
            // SAFETY: read-locked just above.
            unsafe { l.unlock_shared() };
        })
    };
    // The waiting reader backs out of the count (it never stays above the cap) and parks, or,
    // where waiters never sleep, spins outside the count.
    let spun = std::time::Instant::now();
    while if waiters_sleep() {
        l.state.load(Ordering::Relaxed) & PARKED == 0
    } else {
        spun.elapsed() < std::time::Duration::from_millis(2)
    } {
        assert!(readers(l.state.load(Ordering::Relaxed)) <= READERS_CAP + 1);
        std::thread::yield_now();
    }
    assert_eq!(readers(l.state.load(Ordering::Relaxed)), READERS_CAP);
    // SAFETY: read-locked above by this thread; its release makes room and wakes the reader.
    unsafe { l.unlock_shared() };
    t.join().unwrap();
    assert_eq!(
        readers(l.state.load(Ordering::Relaxed)),
        READERS_CAP - 1,
        "{l:?}"
    );
}
