//! Unit tests of the wait layer's internals: the learned estimate, exploration, and the
//! [`Waiter`]'s deadline and yields under every policy. (The public surface is tested in `tests/wait.rs`.)

use super::cadence::QUICK_YIELD_NS;
use super::look::Look;
use super::spin::{
    CATCH_FAIL_PENALTY, CATCH_SCORE_MAX, EXPLORE_EVERY, MIN_PROBE_NS, QUIET_MAX, WATCHED_PER_CYCLE,
    WATCH_CYCLE,
};
use super::waiter::{
    catch_test, CATCH_TAKE_SCORE, CATCH_TEST_EVERY, DOZE_MIN_NS, FUTILE_WAITS_DOZE, PROBE_FACTOR,
    RETAKES_FUTILE, YIELDS,
};
use super::{futex, Deadline, SpinBudget, SpinEstimate, SpinPolicy, Waiter, MAX_ADAPTIVE_SPIN_NS};
use crate::sync::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// The budget under `Adaptive`, without the floor of half a wake-up latency (which depends on
/// what other tests' sleeps taught the process).
fn adaptive(e: &SpinEstimate) -> SpinBudget {
    e.budget_under(SpinPolicy::Adaptive, 0)
}

#[test]
fn learned_estimate_shrinks_when_spinning_fails_and_grows_when_it_pays() {
    let e = SpinEstimate::new();
    for _ in 0..60 {
        e.record(false, 0);
    }
    assert!(e.get() < 10, "estimate {} did not decay", e.get());
    for _ in 0..40 {
        e.record(true, 2_000);
    }
    let est = e.get();
    assert!(
        (1_800..=2_000).contains(&est),
        "estimate {est} did not converge towards 2000"
    );
    // Four times the estimate; with a floor, at least the floor.
    assert_eq!(adaptive(&e), SpinBudget::Nanos(8_000));
    assert_eq!(
        e.budget_under(SpinPolicy::Adaptive, 9_000),
        SpinBudget::Nanos(9_000)
    );
    for _ in 0..40 {
        e.record(true, 1_000_000);
    }
    assert_eq!(adaptive(&e), SpinBudget::Nanos(MAX_ADAPTIVE_SPIN_NS));
}

#[test]
fn failing_spins_still_explore_the_full_budget_once_in_a_while() {
    // A short budget only sees short waits: without exploration a lock whose holders keep it
    // 10 µs would never learn that a 10 µs spin pays.
    let e = SpinEstimate::new();
    let mut explored = 0;
    for _ in 0..(EXPLORE_EVERY + 1) * 10 {
        match adaptive(&e) {
            SpinBudget::Nanos(MAX_ADAPTIVE_SPIN_NS) => explored += 1,
            SpinBudget::Nanos(n) => assert!(n >= MIN_PROBE_NS),
            b => panic!("{b:?}"),
        }
        e.record(false, 0);
    }
    assert_eq!(
        explored,
        10,
        "one exploration every {} failures",
        EXPLORE_EVERY + 1
    );
    // An exploration that succeeds teaches the estimate the longer wait.
    e.record(true, 8_000);
    assert!(
        e.get() >= 2_000,
        "estimate {} after a successful 8 µs spin",
        e.get()
    );
}

#[test]
fn every_policy_maps_to_its_budget() {
    let e = SpinEstimate::new();
    assert_eq!(e.budget_under(SpinPolicy::Never, 0), SpinBudget::Nanos(0));
    assert_eq!(
        e.budget_under(SpinPolicy::Fixed(1234), 0),
        SpinBudget::Nanos(1234)
    );
    assert_eq!(e.budget_under(SpinPolicy::Always, 0), SpinBudget::Unbounded);
    match adaptive(&e) {
        SpinBudget::Nanos(n) => assert!((MIN_PROBE_NS..=MAX_ADAPTIVE_SPIN_NS).contains(&n)),
        b => panic!("adaptive budget {b:?}"),
    }
}

/// A contended path against a word that never frees: spins while `allowed`, then sleeps on the
/// word until the deadline, as the locks do. Returns how long it took, and whether the waiter
/// slept.
fn wait_out(policy: SpinPolicy, allowed: bool, timeout: Duration) -> (Duration, bool) {
    let word = AtomicU32::new(1);
    let e = SpinEstimate::new();
    let deadline = Deadline::after(timeout);
    let t0 = Instant::now();
    let mut w = Waiter::under(policy, &e, Some(&deadline));
    let mut slept = false;
    loop {
        if w.spin(allowed) {
            continue;
        }
        if w.timed_out() {
            break;
        }
        slept = true;
        if !w.sleep(&word, 1) {
            break;
        }
    }
    assert!(!w.gave_up());
    (t0.elapsed(), slept)
}

#[test]
fn a_timed_wait_gives_up_at_its_deadline_under_every_policy() {
    let timeout = Duration::from_millis(30);
    for policy in [
        SpinPolicy::Adaptive,
        SpinPolicy::Never,
        SpinPolicy::Fixed(500),
        // Longer than the timeout: the spin itself must look at the deadline.
        SpinPolicy::Fixed(2_000_000_000),
        SpinPolicy::Always,
    ] {
        for allowed in [true, false] {
            let (took, slept) = wait_out(policy, allowed, timeout);
            assert!(
                took >= timeout,
                "{policy:?} (spin allowed: {allowed}) gave up early, after {took:?}"
            );
            assert!(
                took < timeout + Duration::from_secs(2),
                "{policy:?} (spin allowed: {allowed}) overshot its deadline: {took:?}"
            );
            if policy == SpinPolicy::Always {
                assert!(!slept, "Always never sleeps");
            }
        }
    }
}

#[test]
fn a_deadline_already_passed_stops_even_an_unbounded_spin_within_a_few_steps() {
    let e = SpinEstimate::new();
    let past = Deadline::after(Duration::ZERO);
    let mut w = Waiter::under(SpinPolicy::Always, &e, Some(&past));
    let mut steps = 0;
    while w.spin(true) {
        steps += 1;
        assert!(steps < 100, "an unbounded spin ignored its deadline");
    }
    assert!(w.timed_out());
}

#[test]
fn an_untimed_always_waiter_keeps_spinning_and_a_never_waiter_does_not_spin() {
    let e = SpinEstimate::new();
    let mut w = Waiter::under(SpinPolicy::Always, &e, None);
    for _ in 0..10_000 {
        assert!(w.spin(false));
    }
    assert!(!w.timed_out());
    let mut w = Waiter::under(SpinPolicy::Never, &e, None);
    assert!(!w.spin(true));
    assert!(!w.spin_grace(true), "Never has no grace spin either");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "spin budgets are measured time, and Miri's clock runs at its own pace"
)]
fn a_failed_spin_teaches_the_estimate_once_and_a_paying_one_grows_it() {
    let e = SpinEstimate::new();
    let start = e.get();
    let mut w = Waiter::under(SpinPolicy::Fixed(2_000), &e, None);
    while w.spin(true) {}
    let after_fail = e.get();
    assert!(after_fail < start, "{after_fail} after a failed spin");
    assert!(!w.spin(true));
    assert_eq!(e.get(), after_fail, "one failure is learned once");
    assert!(w.acquired(false));
    assert_eq!(
        e.get(),
        after_fail,
        "a wait that already failed teaches no success"
    );

    let e = SpinEstimate::new();
    for _ in 0..60 {
        e.record(false, 0);
    }
    let low = e.get();
    let mut w = Waiter::under(SpinPolicy::Fixed(9_000), &e, None);
    for _ in 0..10 {
        assert!(w.spin(true));
    }
    assert!(w.acquired(false));
    assert!(e.get() > low, "a spin that paid grows the estimate");
}

#[test]
fn a_nap_ends_at_the_earlier_of_its_length_and_the_deadline() {
    let e = SpinEstimate::new();
    let word = AtomicU32::new(0);
    let deadline = Deadline::after(Duration::from_millis(5));
    let mut w = Waiter::under(SpinPolicy::Never, &e, Some(&deadline));
    let t0 = Instant::now();
    w.nap(&word, 0, &Deadline::after(Duration::from_secs(10)));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(w.away_ns() > 0);
    // The futex stays reachable for the preload's condition variable.
    assert!(futex::wait(&word, 1, None));
}

#[test]
fn a_bounded_sleep_ends_by_itself_unwoken_and_the_waits_deadline_still_times_it_out() {
    let e = SpinEstimate::new();
    let word = AtomicU32::new(0);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    let t0 = Instant::now();
    assert_eq!(
        w.sleep_outcome_for(&word, 0, 1, 2_000_000),
        futex::WaitOutcome::NotWoken,
        "nobody woke it: the bound ended the sleep"
    );
    let took = t0.elapsed();
    // The timer may fire late on a loaded machine, never early.
    assert!(took >= Duration::from_millis(2), "a sleep of {took:?}");
    assert!(took < Duration::from_secs(5), "a sleep of {took:?}");
    assert!(w.away_ns() >= 2_000_000);

    // The wait's deadline, sooner than the bound, is what ends the sleep: TimedOut.
    let deadline = Deadline::after(Duration::from_millis(1));
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, Some(&deadline));
    assert_eq!(
        w.sleep_outcome_for(&word, 0, 1, 10_000_000_000),
        futex::WaitOutcome::TimedOut
    );
    // A word that no longer holds the value: no sleep at all.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert_eq!(
        w.sleep_outcome_for(&word, 1, 1, 10_000_000_000),
        futex::WaitOutcome::NotWoken
    );
}

#[test]
#[cfg(not(miri))] // a real sleeper and a waker on another thread; Miri runs the class test below
fn a_wake_of_one_class_passes_over_sleepers_of_another() {
    let word = std::sync::Arc::new(AtomicU32::new(0));
    let sleeper = {
        let word = std::sync::Arc::clone(&word);
        std::thread::spawn(move || futex::wait_outcome_in(&word, 0, None, 2))
    };
    // Until the sleeper is in the kernel, wakes find nobody; once it is, a wake of class 1
    // still finds nobody, and one of class 2 wakes it.
    loop {
        assert_eq!(
            futex::wake_in(&word, 1, 1),
            0,
            "class 1 woke a class-2 sleeper"
        );
        if futex::wake_in(&word, 1, 2) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(sleeper.join().unwrap(), futex::WaitOutcome::Woken);
}

#[test]
fn a_refused_waiter_dozes_about_a_wake_up_latency_and_not_past_its_deadline() {
    let e = SpinEstimate::new();
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert!(
        !w.dozing(),
        "a waiter sleeps on its lock's word until a sleep is refused"
    );
    w.refused();
    assert!(w.dozing());
    let t0 = Instant::now();
    w.doze();
    let took = t0.elapsed();
    // The timer may fire late on a loaded machine, never early.
    assert!(
        took >= Duration::from_nanos(DOZE_MIN_NS),
        "a doze of {took:?}"
    );
    assert!(took < Duration::from_secs(5), "a doze of {took:?}");
    assert!(w.away_ns() > 0, "a doze counts as time away");
    assert!(w.dozing(), "a waiter dozes until its wait ends");

    // A deadline already passed ends the doze at once.
    let passed = Deadline::after(Duration::ZERO);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, Some(&passed));
    w.refused();
    let t0 = Instant::now();
    w.doze();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(w.timed_out());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "spin budgets are measured time, and Miri's clock runs at its own pace"
)]
fn a_spin_cut_short_by_starvation_teaches_nothing() {
    // As a spin that paid grows a low estimate (above), unless the waiter starved meanwhile.
    let low = || {
        let e = SpinEstimate::new();
        for _ in 0..60 {
            e.record(false, 0);
        }
        e
    };
    for starved in [false, true] {
        let e = low();
        let before = e.get();
        let mut w = Waiter::under(SpinPolicy::Fixed(9_000), &e, None);
        for _ in 0..10 {
            assert!(w.spin(true));
        }
        if starved {
            w.starves();
        }
        assert!(w.acquired(false));
        assert_eq!(e.get() > before, !starved, "starved: {starved}");
    }
}

#[test]
fn a_starving_waiters_vigil_ends_by_itself_returns_a_release_and_reads_nothing_where_spins_are_barred(
) {
    let e = SpinEstimate::new();
    let held = |v: u32| v & 1 != 0;
    // A word held all along: the vigil ends by itself, after about a doze, with the held value.
    let word = AtomicU32::new(1);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    let t0 = Instant::now();
    assert_eq!(w.vigil(&word, 1, held), 1);
    let took = t0.elapsed();
    // A calibrated spin, never much shorter than its budget; longer on a loaded machine.
    assert!(
        took >= Duration::from_nanos(DOZE_MIN_NS / 4),
        "a vigil of {took:?}"
    );
    assert!(took < Duration::from_secs(5), "a vigil of {took:?}");
    // Released since the caller's last read: the vigil returns the free value at once.
    word.store(0, Relaxed);
    assert_eq!(w.vigil(&word, 1, held), 0);
    // Free when the caller read it: returned as it is.
    assert_eq!(w.vigil(&word, 2, held), 2);
    // A policy that never spins keeps no vigil: the caller's value comes back unread.
    let mut w = Waiter::under(SpinPolicy::Never, &e, None);
    assert!(!w.keeps_vigil());
    assert_eq!(w.vigil(&word, 1, held), 1, "read under Never");
}

/// Steps a waiter takes under `policy` before it says "sleep now", asking with `spin_ok` and
/// `yield_ok` each time.
fn steps_until_sleep(policy: SpinPolicy, spin_ok: bool, yield_ok: bool) -> u32 {
    let e = SpinEstimate::new();
    let mut w = Waiter::under(policy, &e, None);
    let mut steps = 0;
    while w.spin_or_yield(spin_ok, yield_ok) {
        steps += 1;
        assert!(steps < 1_000_000, "{policy:?} never stopped");
    }
    steps
}

#[test]
fn only_an_adaptive_waiter_yields_where_spinning_is_forbidden_and_only_a_few_times() {
    assert_eq!(
        steps_until_sleep(SpinPolicy::Adaptive, false, true),
        YIELDS,
        "an Adaptive waiter barred from spinning yields, then sleeps"
    );
    assert_eq!(steps_until_sleep(SpinPolicy::Adaptive, false, false), 0);
    for policy in [SpinPolicy::Never, SpinPolicy::Fixed(500)] {
        assert_eq!(
            steps_until_sleep(policy, false, true),
            0,
            "{policy:?} does not yield"
        );
    }
    // Allowed to spin, an Adaptive waiter spins its budget and yields on top of it.
    assert!(steps_until_sleep(SpinPolicy::Adaptive, true, true) > YIELDS);
}

#[test]
fn a_waiters_time_away_starts_at_its_first_yield_and_is_known_without_a_clock_at_each_yield() {
    let e = SpinEstimate::new();
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert_eq!((w.away_ns(), w.away_when_back_ns()), (0, 0), "not away yet");
    // Barred from spinning, a yielding waiter yields: its time away begins.
    assert!(w.spin_or_yield(false, true));
    assert!(w.away_ns() > 0, "a yield counts as time away");
    // The thread is off its CPU between two yields (as a yield that ran a round of other
    // threads keeps it): the next yield's return knows the whole time away.
    std::thread::sleep(Duration::from_millis(2));
    assert!(w.spin_or_yield(false, true));
    assert!(
        w.away_when_back_ns() >= 2_000_000,
        "{}",
        w.away_when_back_ns()
    );
    assert!(w.away_ns() >= w.away_when_back_ns());
    // A sleep after the yields does not restart it.
    let word = AtomicU32::new(0);
    assert_eq!(
        w.sleep_outcome_for(&word, 0, 1, 100_000),
        futex::WaitOutcome::NotWoken
    );
    assert!(w.away_ns() >= 2_000_000, "{}", w.away_ns());
}

#[test]
fn a_waiter_let_yield_during_its_wait_yields_a_few_times_once_then_sleeps() {
    let e = SpinEstimate::new();
    // Not made yielding: barred from spinning, it sleeps at once.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).not_yielding();
    assert!(!w.spin_or_yield(false, true));
    // Let yield (as the rwlock's writer that finds a writer holding the lock): YIELDS yields,
    // and asking again, as the slow path does on every round, grants none anew.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).not_yielding();
    let mut steps = 0;
    loop {
        w.yield_from_now_under(SpinPolicy::Adaptive);
        if !w.spin_or_yield(false, true) {
            break;
        }
        steps += 1;
        assert!(steps <= YIELDS, "the yields were granted again");
    }
    assert_eq!(steps, YIELDS);
    // Other policies do not yield, let or not.
    for policy in [SpinPolicy::Never, SpinPolicy::Fixed(500)] {
        let mut w = Waiter::under(policy, &e, None).not_yielding();
        w.yield_from_now_under(policy);
        assert!(!w.spin_or_yield(false, true), "{policy:?}");
    }
}

#[test]
fn a_threads_gap_follows_its_last_few_readings_of_cpu_time_per_wait() {
    use super::cadence::{next_gap, SAMPLE_CAP_NS, SELDOM_NS};
    // (gap, the previous reading at, this one at, waits begun since, the next gap)
    let cases = [
        // The first reading is the gap: CPU time since the thread's start, per wait.
        (None, 0, 5, 1, 5),
        (None, 0, SELDOM_NS * 10, 100, SELDOM_NS / 10),
        (None, 1_000, 1_000 + SELDOM_NS, 1, SELDOM_NS),
        (None, 1_000, 1_000 + SELDOM_NS, 0, SELDOM_NS),
        (None, 1_000, 1_000 + 2 * SELDOM_NS, 2, SELDOM_NS),
        (None, 1_000, 1_000, 1, 0),
        // As much at most: a long start is forgotten within a few readings.
        (None, 0, SELDOM_NS * 1_000, 1, SAMPLE_CAP_NS),
        // Then a reading weighs a quarter.
        (Some(SELDOM_NS), 1_000, 1_000, 1, 3 * SELDOM_NS / 4),
        (
            Some(SELDOM_NS),
            1_000,
            1_000 + 3 * SELDOM_NS,
            1,
            3 * SELDOM_NS / 2,
        ),
        // A reading counts for SAMPLE_CAP_NS at most.
        (
            Some(SELDOM_NS),
            1_000,
            1_000 + 100 * SAMPLE_CAP_NS,
            1,
            (3 * SELDOM_NS + SAMPLE_CAP_NS) / 4,
        ),
        (Some(4), 1_000, 1_000 + 4 * SELDOM_NS, 4, 3 + SELDOM_NS / 4),
        // A gap of 0 is a gap like any other, not "no reading yet".
        (Some(0), 1_000, 1_000 + 4 * SELDOM_NS, 1, SELDOM_NS),
        // A reading older than the previous one counts as none.
        (Some(4), 5_000, 4_000, 1, 3),
    ];
    for (gap, previous, now, waits, want) in cases {
        assert_eq!(
            next_gap(gap, previous, now, waits),
            want,
            "{gap:?}: {previous} -> {now}, {waits}"
        );
    }
}

/// Runs for `ns` of this thread's CPU time (however much of the machine other tests take).
#[cfg(not(any(loom, miri)))]
fn work(ns: u64) {
    let cpu0 = super::cadence::thread_cpu_ns().unwrap();
    let mut x = 0u64;
    while super::cadence::thread_cpu_ns().unwrap() - cpu0 <= ns {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

/// A reading of this thread's CPU clock: `cpu_ns` of work, then (off the CPU) more than
/// `READ_EVERY_NS` of monotonic time, `waits` waits begun, and an ask; returns its verdict.
#[cfg(not(any(loom, miri)))]
fn reading(cpu_ns: u64, waits: u32) -> bool {
    use super::cadence::{wait_begins, waits_seldom, READ_EVERY_NS};
    work(cpu_ns);
    std::thread::sleep(Duration::from_nanos(READ_EVERY_NS + READ_EVERY_NS / 10));
    for _ in 0..waits {
        wait_begins();
    }
    waits_seldom()
}

// Neither Miri nor loom reads the thread CPU clock (the cadence there is always "often").
#[cfg(not(any(loom, miri)))]
#[test]
fn a_thread_waits_seldom_after_work_between_its_waits_and_one_close_pair_keeps_the_verdict() {
    use super::cadence::{gap_ns, wait_begins, waits_seldom, READ_EVERY_NS, SELDOM_NS};
    std::thread::spawn(|| {
        assert!(!waits_seldom(), "a thread's first wait");
        assert!(!waits_seldom(), "a wait right after it");
        // Off the CPU (asleep, preempted): no CPU time passes, the thread waits often still,
        // and its gap shrinks toward none.
        for _ in 0..4 {
            assert!(!reading(0, 1), "a wait after a pause, gap {}", gap_ns());
        }
        // Work between waits, as long as SELDOM_NS per wait: often still.
        for _ in 0..4 {
            assert!(
                !reading(SELDOM_NS, 1),
                "SELDOM_NS per wait, gap {}",
                gap_ns()
            );
        }
        assert!(gap_ns() <= SELDOM_NS, "{}", gap_ns());
        // Twice as much: seldom within a few readings.
        let mut readings = 1;
        while !reading(2 * SELDOM_NS, 1) {
            assert!(
                readings < 8,
                "still often after {readings} readings of work, gap {}",
                gap_ns()
            );
            readings += 1;
        }
        // A wait right after one that found it seldom (no reading): seldom too, as a
        // server's thread that meets two held locks in a row.
        wait_begins();
        assert!(waits_seldom(), "a wait right after a seldom one");
        // As much work, shared among waits that ended within their spin, a few times: often.
        let mut readings = 0;
        while reading(2 * SELDOM_NS, 32) {
            readings += 1;
            assert!(
                readings < 16,
                "still seldom after {readings} readings of short waits, gap {}",
                gap_ns()
            );
        }
        assert!(gap_ns() <= SELDOM_NS, "{}", gap_ns());
        // A yield, however long, leaves the verdict to the readings (a hot lock's threads,
        // many per CPU, make long yields).
        super::cadence::yield_took(100 * READ_EVERY_NS);
        wait_begins();
        assert!(
            !waits_seldom(),
            "often after a long yield, gap {}",
            gap_ns()
        );
    })
    .join()
    .unwrap();
    // A thread that works before its first wait: the first ask counts from its start.
    std::thread::spawn(|| {
        work(4 * SELDOM_NS);
        assert!(waits_seldom(), "a first wait after work");
    })
    .join()
    .unwrap();
}

#[test]
fn quick_yields_double_the_lone_stretch_within_its_bounds_and_a_slow_one_clears_it() {
    use super::cadence::{next_lone, LONE_MAX_NS, ROTATE_NS};
    // (lone stretch, the yield took, the next lone stretch)
    let cases = [
        // The first quick yield: twice ROTATE_NS, then doubling.
        (0, 0, 2 * ROTATE_NS),
        (0, QUICK_YIELD_NS, 2 * ROTATE_NS),
        (2 * ROTATE_NS, 500, 4 * ROTATE_NS),
        (4 * ROTATE_NS, 1, 8 * ROTATE_NS),
        // Never past LONE_MAX_NS.
        (LONE_MAX_NS, 1, LONE_MAX_NS),
        (u64::MAX, 1, LONE_MAX_NS),
        // A yield that ran another thread clears it, however long it was.
        (LONE_MAX_NS, QUICK_YIELD_NS + 1, 0),
        (0, 50_000, 0),
        (8 * ROTATE_NS, u64::MAX, 0),
    ];
    for (lone, took, want) in cases {
        assert_eq!(
            next_lone(lone, took),
            want,
            "lone {lone} ns, yield took {took} ns"
        );
    }
}

// Neither Miri nor loom rotates.
#[cfg(not(any(loom, miri)))]
#[test]
fn a_thread_rotates_after_its_lone_stretch_after_a_quick_yield_and_after_rotate_ns_after_a_slow_one(
) {
    use super::cadence::{gave_cpu, rotation_due, yield_took, ROTATE_NS};
    use super::now_ns;
    std::thread::spawn(|| {
        let spin_past = |from: u64, ns: u64| {
            while now_ns() - from <= ns {
                core::hint::spin_loop();
            }
        };
        // A yield that ran nobody: the rotation waits for twice ROTATE_NS.
        yield_took(1);
        let gave = now_ns();
        gave_cpu(gave);
        spin_past(gave, ROTATE_NS);
        let due = rotation_due(false);
        // A preemption may have carried the thread past the lone stretch too.
        assert!(
            !due || now_ns() - gave > 2 * ROTATE_NS,
            "due after ROTATE_NS with a lone stretch of twice that"
        );
        spin_past(gave, 2 * ROTATE_NS);
        assert!(rotation_due(false), "after its lone stretch");
        // A yield that ran another thread: back to ROTATE_NS.
        yield_took(QUICK_YIELD_NS + 1);
        let gave = now_ns();
        gave_cpu(gave);
        spin_past(gave, ROTATE_NS);
        assert!(
            rotation_due(false),
            "after ROTATE_NS once a yield ran a thread"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_thread_is_due_to_rotate_once_it_has_kept_its_cpu_for_longer_than_rotate_ns() {
    use super::cadence::{kept_too_long, ROTATE_NS};
    // (gave its CPU away at, now, due)
    let cases = [
        // Never known to have given it away: the first reading starts the clock.
        (0, 10 * ROTATE_NS, false),
        (1_000, 1_000, false),
        (1_000, 1_000 + ROTATE_NS, false),
        (1_000, 1_001 + ROTATE_NS, true),
        // A reading older than the stamp: not due.
        (5_000, 4_000, false),
    ];
    for (gave_at, now, want) in cases {
        assert_eq!(
            kept_too_long(gave_at, now, ROTATE_NS),
            want,
            "{gave_at} -> {now}"
        );
    }
}

// Neither Miri nor loom rotates.
#[cfg(not(any(loom, miri)))]
#[test]
fn a_threads_readings_for_its_rotation_follow_how_far_apart_its_waits_lie() {
    use super::cadence::{ask_every, rotation_ask, rotation_due, ROTATE_ASK_EVERY, ROTATE_NS};
    use super::now_ns;
    use super::spin::yield_cpu;
    std::thread::spawn(|| {
        let asks = |n: u32| (0..n).filter(|_| rotation_ask()).count();
        // A thread starts with one reading in ROTATE_ASK_EVERY asks.
        assert_eq!(asks(ROTATE_ASK_EVERY - 1), 0);
        assert!(rotation_ask());
        // The thread's first reading starts its clock.
        assert!(!rotation_due(false), "a first reading");
        // Waits far apart (two readings 8 ROTATE_NS apart, or more if preempted): every ask
        // reads, and the thread is due.
        let t0 = now_ns();
        while now_ns() - t0 <= 8 * ROTATE_NS {
            core::hint::spin_loop();
        }
        assert!(rotation_due(false), "after keeping its CPU for 8 ROTATE_NS");
        assert_eq!(ask_every(), 1);
        assert!(rotation_ask() && rotation_ask());
        // A yield gives the CPU away: the asks count from it, the clock runs from its end,
        // and the time away is no interval between readings: the first reading after it
        // measures its one ask from the yield's end.
        let before = now_ns();
        yield_cpu();
        assert!(rotation_ask());
        let due = rotation_due(false);
        let since = now_ns() - before;
        assert!(!due || since > ROTATE_NS, "due within ROTATE_NS of a yield");
        // One ask in an eighth of a stretch (or less): at least two asks per reading next.
        assert!(
            ask_every() >= 2 || since > ROTATE_NS / 8,
            "one ask {since} ns after a yield left ask_every at {}",
            ask_every()
        );
        // Readings in quick succession (waits close together) go back to one in
        // ROTATE_ASK_EVERY asks (each reading multiplies the count by up to 16; a reading
        // that a preemption delayed multiplies it by less).
        let quick = (0..100)
            .take_while(|_| {
                let _ = rotation_due(false);
                ask_every() < ROTATE_ASK_EVERY
            })
            .count();
        assert!(quick < 100, "ask_every stayed at {}", ask_every());
        assert_eq!(asks(ROTATE_ASK_EVERY - 1), 0);
        assert!(rotation_ask());
    })
    .join()
    .unwrap();
}

// Neither Miri nor loom rotates.
#[cfg(not(any(loom, miri)))]
#[test]
fn a_thread_that_rotates_at_every_reading_still_learns_how_far_apart_its_waits_lie() {
    use super::cadence::{ask_every, rotation_ask, rotation_due, ROTATE_ASK_EVERY, ROTATE_NS};
    use super::now_ns;
    use super::spin::yield_cpu;
    std::thread::spawn(|| {
        // The thread's clock starts at a yield; its asks count from there.
        yield_cpu();
        assert_eq!(ask_every(), ROTATE_ASK_EVERY);
        // ROTATE_ASK_EVERY waits spread over 8 ROTATE_NS (or more, if preempted): the
        // reading finds the rotation due, the first reading since the yield, and it still
        // measures the asks from the yield's end.
        let t0 = now_ns();
        for _ in 1..ROTATE_ASK_EVERY {
            assert!(!rotation_ask());
        }
        while now_ns() - t0 <= 8 * ROTATE_NS {
            core::hint::spin_loop();
        }
        assert!(rotation_ask());
        assert!(rotation_due(false), "after keeping its CPU for 8 ROTATE_NS");
        assert_eq!(ask_every(), 1, "16 asks in 8 stretches");
    })
    .join()
    .unwrap();
}

/// Makes this thread due to rotate, whatever its stretch (it last gave its CPU away at the
/// clock's start), and passes its asks up to the one that reads the clock: the next ask reads.
#[cfg(not(any(loom, miri)))]
fn due_at_the_next_ask() {
    use super::cadence::{ask_every, gave_cpu, rotation_ask};
    gave_cpu(1);
    for _ in 1..ask_every() {
        assert!(!rotation_ask());
    }
}

// Neither Miri nor loom rotates.
#[cfg(not(any(loom, miri)))]
#[test]
fn a_rotation_outside_a_wait_yields_where_due_under_the_adaptive_policy_and_begins_no_wait() {
    use super::cadence::{rotation_due, stretch_ns, waits_begun};
    use super::now_ns;
    use super::waiter::rotate_outside_wait_under;
    std::thread::spawn(|| {
        // Nothing rotates under other policies: the thread stays due.
        for policy in [
            SpinPolicy::Never,
            SpinPolicy::Fixed(500),
            SpinPolicy::Always,
        ] {
            due_at_the_next_ask();
            rotate_outside_wait_under(policy);
            assert!(rotation_due(true), "{policy:?}");
        }
        // Under Adaptive it yields: the thread is not due again for a stretch.
        due_at_the_next_ask();
        let before = now_ns();
        rotate_outside_wait_under(SpinPolicy::Adaptive);
        let begun = waits_begun();
        for _ in 0..64 {
            rotate_outside_wait_under(SpinPolicy::Adaptive);
        }
        let after = waits_begun();
        let due = rotation_due(true);
        if now_ns() - before <= stretch_ns() {
            assert!(!due, "no rotation yield");
            // Asks that find the thread not due read no CPU clock, which alone resets the
            // count: any wait begun would show.
            assert_eq!(after, begun, "a rotation outside a wait began a wait");
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_threads_readings_for_its_rotation_come_asks_per_stretch_times_a_stretch_within_their_bounds() {
    use super::cadence::{
        next_ask_every, ASKS_PER_STRETCH, ROTATE_ASK_EVERY, ROTATE_MIN_NS, ROTATE_NS,
    };
    let quarter = ROTATE_NS / ASKS_PER_STRETCH;
    // (asks between the last two readings, the time between them, the stretch, the next
    // count of asks)
    let cases = [
        // Waits 400 ns apart: one reading in ROTATE_ASK_EVERY asks.
        (ROTATE_ASK_EVERY, 16 * 400, ROTATE_NS, ROTATE_ASK_EVERY),
        // A quarter stretch per reading already: the count stays.
        (5, quarter, ROTATE_NS, 5),
        (1, quarter, ROTATE_NS, 1),
        // Twice as long: half the asks; half as long: twice as many.
        (4, 2 * quarter, ROTATE_NS, 2),
        (4, quarter / 2, ROTATE_NS, 8),
        // Waits 20 us apart: every ask reads; a shorter stretch reads more often.
        (ROTATE_ASK_EVERY, 16 * 20_000, ROTATE_NS, 1),
        (4, 4 * 5_000, ROTATE_NS, 5),
        (4, 4 * 5_000, ROTATE_MIN_NS, 1),
        // No time between them, or all the time there is: the bounds.
        (ROTATE_ASK_EVERY, 0, ROTATE_NS, ROTATE_ASK_EVERY),
        (ROTATE_ASK_EVERY, u64::MAX, ROTATE_NS, 1),
        (u32::MAX, 1, u64::MAX, ROTATE_ASK_EVERY),
    ];
    for (every, since, stretch, want) in cases {
        assert_eq!(
            next_ask_every(every, since, stretch),
            want,
            "{every} asks in {since} ns, stretch {stretch}"
        );
    }
}

#[cfg(not(any(loom, miri)))]
#[test]
fn every_futex_sleep_counts_as_giving_the_cpu_away_and_a_wait_that_never_slept_does_not() {
    use super::cadence::{gave_cpu, rotation_due, ROTATE_NS};
    use super::now_ns;
    std::thread::spawn(|| {
        let word = AtomicU32::new(0);
        // Long ago: the thread is due to rotate.
        gave_cpu(1);
        assert!(rotation_due(false));
        // The word does not hold the value expected: no sleep, nothing given away.
        assert_eq!(
            futex::wait_outcome(&word, 1, None),
            futex::WaitOutcome::NotWoken
        );
        assert!(rotation_due(false), "a wait that never slept");
        // A sleep that its deadline ends (as a condvar's timed wait, which no Waiter sees).
        let before = now_ns();
        let nap = Deadline::after(Duration::from_micros(10));
        assert_eq!(
            futex::wait_outcome(&word, 0, Some(&nap)),
            futex::WaitOutcome::TimedOut
        );
        let due = rotation_due(false);
        assert!(
            !due || now_ns() - before > ROTATE_NS,
            "due within ROTATE_NS of a sleep"
        );
    })
    .join()
    .unwrap();
}

#[cfg(not(any(loom, miri)))]
#[test]
fn a_wait_of_a_thread_due_to_rotate_begins_with_a_yield_under_the_adaptive_policy() {
    use super::cadence::{gave_cpu, rotation_due, ROTATE_ASK_EVERY, ROTATE_NS};
    use super::now_ns;
    std::thread::spawn(|| {
        let e = SpinEstimate::new();
        // No yield since `before`, or ROTATE_NS passed since: still due.
        let rotated_since = |before: u64| !rotation_due(false) || now_ns() - before > ROTATE_NS;
        let adaptive = SpinPolicy::Adaptive;
        // A yielding waiter (the mutex's): the rotation is one of its yields.
        due_at_the_next_ask();
        let w = Waiter::under(adaptive, &e, None).rotating_under(adaptive, false);
        assert_eq!(w.yields_left(), YIELDS - 1, "the rotation yield");
        // A waiter that does not yield (the rwlock's) rotates with a yield of its own.
        due_at_the_next_ask();
        let before = now_ns();
        let w = Waiter::under(adaptive, &e, None)
            .not_yielding()
            .rotating_under(adaptive, false);
        assert_eq!(w.yields_left(), 0);
        assert!(rotated_since(before), "no rotation yield");
        // Nothing rotates under other policies, where the thread waits seldom, or where the
        // lock's waits keep spinning in vain (its yielding waiters doze): the thread stays due.
        for policy in [
            SpinPolicy::Never,
            SpinPolicy::Fixed(500),
            SpinPolicy::Always,
        ] {
            due_at_the_next_ask();
            let _ = Waiter::under(policy, &e, None).rotating_under(policy, false);
            assert!(rotation_due(false), "{policy:?}");
        }
        due_at_the_next_ask();
        let _ = Waiter::under(adaptive, &e, None)
            .thread_waits_seldom(true)
            .rotating_under(adaptive, false);
        assert!(rotation_due(false), "a seldom waiter rotated");
        let futile = SpinEstimate::new();
        for _ in 0..FUTILE_WAITS_DOZE {
            futile.record(false, 0);
        }
        due_at_the_next_ask();
        let w = Waiter::under(adaptive, &futile, None).rotating_under(adaptive, false);
        assert_eq!(w.yields_left(), YIELDS);
        assert!(rotation_due(false), "a dozer rotated");
        // Through `rotating`, as the mutex makes its waiters: some waits ask, and the thread
        // is due only until its rotation yield (or again, once it has kept its CPU for
        // ROTATE_NS since: a preemption during these waits).
        gave_cpu(1);
        let start = now_ns();
        let rotated = (0..2 * ROTATE_ASK_EVERY)
            .filter(|_| {
                let w = Waiter::polling(&e, None, super::waiter::Subject::Nobody)
                    .yielding()
                    .rotating();
                w.yields_left() + 1 == YIELDS
            })
            .count();
        let once = usize::from(super::spin_policy() == SpinPolicy::Adaptive);
        assert!(
            rotated == once || (once == 1 && rotated > 1 && now_ns() - start > ROTATE_NS),
            "{rotated} rotations"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_threads_stretch_scales_to_a_round_of_round_ns_within_its_bounds() {
    use super::cadence::{next_stretch, ROTATE_MIN_NS, ROTATE_NS, ROUND_NS};
    // (stretch, the yield took, the next stretch)
    let cases = [
        // A round as long as aimed at: the stretch stays.
        (ROTATE_NS, ROUND_NS, ROTATE_NS),
        (40_000, ROUND_NS, 40_000),
        // Twice as long: half the stretch; half as long: twice, up to ROTATE_NS.
        (ROTATE_NS, 2 * ROUND_NS, ROTATE_NS / 2),
        (ROTATE_NS / 2, ROUND_NS / 2, ROTATE_NS),
        (ROTATE_NS, ROUND_NS / 2, ROTATE_NS),
        // Far too long (many threads per CPU, or threads that do not rotate): the shortest.
        (ROTATE_NS, 100 * ROUND_NS, ROTATE_MIN_NS),
        (ROTATE_MIN_NS, 2 * ROUND_NS, ROTATE_MIN_NS),
        // A yield that ran nobody, or took no time on the clock: the longest.
        (ROTATE_MIN_NS, 1_000, ROTATE_NS),
        (ROTATE_MIN_NS, 0, ROTATE_NS),
        (u64::MAX, 1, ROTATE_NS),
    ];
    for (stretch, took, want) in cases {
        assert_eq!(next_stretch(stretch, took), want, "{stretch} after {took}");
    }
}

// Neither Miri nor loom rotates.
#[cfg(not(any(loom, miri)))]
#[test]
fn a_long_round_shortens_the_stretch_of_waits_in_rounds_only_and_a_waiters_yield_tells_it() {
    use super::cadence::{
        ask_every, gave_cpu, rotation_ask, rotation_due, stretch_ns, yield_took, ROTATE_MIN_NS,
        ROTATE_NS, ROUND_NS,
    };
    use super::now_ns;
    std::thread::spawn(|| {
        assert_eq!(
            stretch_ns(),
            ROTATE_NS,
            "a thread starts at the longest stretch"
        );
        yield_took(100 * ROUND_NS);
        assert_eq!(stretch_ns(), ROTATE_MIN_NS);
        // Kept the CPU for twice the shortest stretch: due in rounds; the fixed stretch is
        // not up (unless the thread was preempted past it).
        let t0 = now_ns();
        gave_cpu(t0);
        while now_ns() - t0 <= 2 * ROTATE_MIN_NS {
            core::hint::spin_loop();
        }
        assert!(rotation_due(true), "in rounds, past the shortest stretch");
        assert!(!rotation_due(false) || now_ns() - t0 > ROTATE_NS);
        // A yield that ran nobody: the longest stretch again.
        yield_took(0);
        assert!(!rotation_due(true) || now_ns() - t0 > ROTATE_NS);
        // Through a waiter, on its rotation ask: one rotating with the fixed stretch does not
        // yield yet, one rotating in rounds does (unless the thread was preempted past
        // ROTATE_NS, when both may).
        let e = SpinEstimate::new();
        // The asks are counted from the last yes (or the thread's last yield or sleep); how
        // many pass until the next reading is what the readings so far set: a reading
        // delayed past a quarter of a stretch (a preemption) leaves fewer than
        // ROTATE_ASK_EVERY.
        let asks_until_the_next_reads = || {
            for _ in 1..ask_every() {
                assert!(!rotation_ask());
            }
        };
        yield_took(100 * ROUND_NS);
        let t0 = now_ns();
        gave_cpu(t0);
        while now_ns() - t0 <= 2 * ROTATE_MIN_NS {
            core::hint::spin_loop();
        }
        asks_until_the_next_reads();
        let _ = Waiter::under(SpinPolicy::Adaptive, &e, None)
            .not_yielding()
            .rotating_under(SpinPolicy::Adaptive, false);
        assert!(
            rotation_due(true) || now_ns() - t0 > ROTATE_NS,
            "a fixed-stretch waiter rotated"
        );
        asks_until_the_next_reads();
        let before = now_ns();
        let _ = Waiter::under(SpinPolicy::Adaptive, &e, None)
            .not_yielding()
            .rotating_under(SpinPolicy::Adaptive, true);
        assert!(
            !rotation_due(true) || now_ns() - before > ROTATE_MIN_NS,
            "a waiter in rounds did not rotate"
        );
        // A waiter's yields tell their length: one that took less than ROUND_NS lengthens
        // the shortest stretch.
        yield_took(100 * ROUND_NS);
        let e = SpinEstimate::new();
        // Whatever this thread's CPU time so far says of it (see the seldom tests).
        let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).thread_waits_seldom(false);
        let before = now_ns();
        assert!(w.spin_or_yield(false, true), "a yield");
        if now_ns() - before < ROUND_NS {
            assert!(stretch_ns() > ROTATE_MIN_NS, "the yield was not told");
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_waiter_whose_thread_waits_seldom_makes_no_yield_and_spins_its_budget_then_sleeps() {
    let e = SpinEstimate::new();
    // Barred from spinning, a waiter made yielding yields YIELDS times, unless its thread waits
    // seldom.
    assert_eq!(steps_until_sleep(SpinPolicy::Adaptive, false, true), YIELDS);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).thread_waits_seldom(true);
    assert!(!w.spin_or_yield(false, true), "a seldom waiter yielded");
    assert_eq!(w.yields_left(), 0);
    // Let spin, it spins past its probe (no probe yield) until its budget is spent, and sleeps.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).thread_waits_seldom(true);
    while w.spin(true) {}
    assert!(
        w.spun_ns() >= super::spin::MIN_PROBE_NS,
        "{} ns",
        w.spun_ns()
    );
    assert_eq!(w.yields_left(), 0);
    // Let yield during its wait (the rwlock's writer): none made.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None)
        .not_yielding()
        .thread_waits_seldom(true);
    w.yield_from_now_under(SpinPolicy::Adaptive);
    assert!(!w.spin_or_yield(false, true), "a seldom writer yielded");
}

#[test]
fn a_waiter_told_the_lock_keeps_being_retaken_stops_spinning_and_yields_then_sleeps() {
    let e = SpinEstimate::new();
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert!(
        w.watches(),
        "an Adaptive yielding waiter watches for re-takes"
    );
    // One re-take look may be a release that fell between two looks: the waiter spins on.
    w.retaken();
    assert!(w.watches(), "one re-take look is no verdict");
    assert!(
        w.spin_or_yield(true, true) && w.spun_ns() > 0,
        "it spins on"
    );
    let spun = w.spun_ns();
    retaken_futile(&mut w);
    assert!(
        !w.watches(),
        "a waiter whose spinning is futile stops watching"
    );
    let mut steps = 0;
    while w.spin_or_yield(true, true) {
        steps += 1;
        assert!(steps <= YIELDS, "it spun although its spinning is futile");
    }
    // Each yield ran another thread, or the first that ran nobody ended the yields.
    assert!(steps >= 1, "its wait goes on as yields, then it sleeps");
    assert_eq!(w.spun_ns(), spun, "no spinning after the verdict");
    // Other policies neither yield nor watch.
    for policy in [
        SpinPolicy::Never,
        SpinPolicy::Fixed(500),
        SpinPolicy::Always,
    ] {
        assert!(!Waiter::under(policy, &e, None).watches(), "{policy:?}");
    }
}

#[test]
fn a_locks_waiters_watch_a_few_waits_of_each_cycle_and_every_wait_after_a_verdict() {
    let e = SpinEstimate::new();
    // Where watched waits find nothing, the first few of every cycle watch.
    let turns: Vec<bool> = (0..2 * WATCH_CYCLE)
        .map(|_| {
            let turn = e.watch_turn();
            e.watched(false);
            turn
        })
        .collect();
    let expected: Vec<bool> = (0..2 * WATCH_CYCLE)
        .map(|i| i % WATCH_CYCLE < WATCHED_PER_CYCLE)
        .collect();
    assert_eq!(turns, expected);
    // A verdict restarts the cycle: a lock whose watched waits keep finding one is always
    // watched.
    for _ in 0..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    assert!(!e.watch_turn());
    for _ in 0..2 * WATCH_CYCLE {
        e.watched(true);
        assert!(e.watch_turn());
    }
    // The cycle and what the estimate learns share a word without disturbing each other.
    let before = (e.get(), e.futile_waits());
    e.watched(false);
    assert_eq!((e.get(), e.futile_waits()), before);
    e.record(false, 0);
    e.record(false, 0);
    assert_eq!(e.futile_waits(), before.1 + 2);
    for _ in 1..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    assert!(!e.watch_turn(), "learning left the cycle where it was");
}

#[test]
fn a_yielding_waiter_watches_on_its_locks_turn_and_its_verdict_restarts_the_cycle() {
    let e = SpinEstimate::new();
    for _ in 0..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    // Off its lock's turn, a waiter reads the word plainly and its wait moves the cycle on.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert!(!w.watches(), "off turn, the waiter does not watch");
    assert!(w.spin(true));
    w.acquired(false);
    // Until the cycle comes round again.
    for _ in WATCHED_PER_CYCLE + 1..WATCH_CYCLE {
        assert!(!Waiter::under(SpinPolicy::Adaptive, &e, None).watches());
        e.watched(false);
    }
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert!(w.watches(), "the cycle came round");
    assert!(w.spin(true));
    retaken_futile(&mut w);
    w.acquired(false);
    assert!(e.watch_turn(), "a verdict restarts the cycle");
    // A wait that never spun tells nothing, and leaves the cycle where it was: here, on the
    // last watched turn.
    for _ in 1..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    Waiter::under(SpinPolicy::Adaptive, &e, None).acquired(false);
    assert!(e.watch_turn());
    e.watched(false);
    assert!(!e.watch_turn());
}

#[test]
fn a_futile_spinner_dozes_without_yielding_once_its_locks_waits_keep_spinning_in_vain() {
    let e = SpinEstimate::new();
    // One wait short of the streak: the futile spinner yields as before.
    for _ in 1..FUTILE_WAITS_DOZE {
        e.record(false, 0);
    }
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    retaken_futile(&mut w);
    assert!(w.spin_or_yield(true, true), "it yields");
    assert!(!w.dozing());
    // The streak reached: it neither spins nor yields, and dozes from now on.
    e.record(false, 0);
    assert_eq!(e.futile_waits(), FUTILE_WAITS_DOZE);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    assert!(w.watches() && !w.dozing());
    retaken_futile(&mut w);
    assert!(
        !w.spin_or_yield(true, true),
        "a futile spinner neither spins nor yields"
    );
    assert!(w.dozing(), "its wait goes on as dozes");
    assert_eq!((w.yields_left(), w.spun_ns()), (0, 0));
    // Where spinning is barred and yields allowed (sleepers announced), it dozes too.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    retaken_futile(&mut w);
    assert!(!w.spin_or_yield(false, true));
    assert!(w.dozing());
    // A spin that pays ends the streak: the next futile spinner yields again.
    e.record(true, 100);
    assert_eq!(e.futile_waits(), 0);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    retaken_futile(&mut w);
    assert!(w.spin_or_yield(true, true) && !w.dozing());
    // A waiter that never watched (another policy) is never made to doze by the streak.
    let mut w = Waiter::under(SpinPolicy::Fixed(500), &e, None);
    while w.spin(true) {}
    assert!(!w.dozing());
}

#[test]
fn a_waiter_that_declined_a_lock_stops_spinning_and_dozes_and_its_spin_is_learned_as_paid() {
    let e = SpinEstimate::new();
    // A short streak of waits whose spin did not pay (a paying one ends it).
    for _ in 0..3 {
        e.record(false, 0);
    }
    assert_eq!(e.futile_waits(), 3);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    for _ in 0..4 {
        assert!(w.spin(true));
    }
    assert!(!w.declines(), "nothing declined yet");
    w.declined();
    assert!(w.declines(), "the slow path is told once");
    assert!(!w.declines(), "and asking clears it");
    assert!(w.dozing(), "its wait goes on as dozes");
    assert!(!w.watches(), "it looks plainly from now on");
    assert!(
        !w.spin_or_yield(true, true),
        "it neither spins nor yields any more"
    );
    assert_eq!(w.yields_left(), 0);
    assert_eq!(
        e.futile_waits(),
        0,
        "a spin that found the lock free paid: the streak of futile waits ends"
    );
    // The learning happened once: a wait that then gives up teaches nothing more (it would
    // start a new streak).
    assert!(!w.gave_up());
    assert_eq!(e.futile_waits(), 0);
}

#[test]
fn only_holds_shorter_than_a_hand_off_are_worth_testing_a_far_lock_for() {
    use super::waiter::holds_shorter_than;
    // (estimate, spun, hand-off): test whether the releaser re-takes the lock?
    let cases = [
        ((0, 0, 400), true, "nobody waited long, a costly hand-off"),
        ((399, 399, 400), true, "both measures just under a hand-off"),
        ((400, 0, 400), false, "paid spins took a hand-off's time"),
        ((0, 400, 400), false, "watched held for a hand-off's time"),
        ((5_000, 100, 400), false, "long holds (a learned estimate)"),
        ((0, 0, 0), false, "untimed looks: no hand-off to weigh"),
    ];
    for ((estimate, spun, hand_off), want, why) in cases {
        assert_eq!(holds_shorter_than(estimate, spun, hand_off), want, "{why}");
    }
}

#[test]
fn a_look_at_a_word_nobody_else_writes_never_declines_the_lock() {
    let e = SpinEstimate::new();
    let word = AtomicU32::new(0);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    for _ in 0..100 {
        assert_eq!(w.look(&word, |s| s != 0), 0);
        assert!(
            !w.declines(),
            "a free lock nobody released elsewhere is taken"
        );
    }
    assert!(!w.dozing());
}

#[test]
fn a_futile_spinner_whose_yield_ran_nobody_sleeps_next_and_one_whose_yield_ran_work_yields_on() {
    let e = SpinEstimate::new();
    let slow = QUICK_YIELD_NS + 1;
    // Before its spinning is found futile, a quick yield is no reason to stop.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    w.yielded(0);
    assert_eq!(w.yields_left(), YIELDS, "spinning not yet futile");
    // After: a yield that ran another thread leaves the yields; one that ran nobody ends them.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    retaken_futile(&mut w);
    w.yielded(slow);
    assert_eq!(w.yields_left(), YIELDS, "a yield that ran work");
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    retaken_futile(&mut w);
    w.yielded(slow);
    w.yielded(QUICK_YIELD_NS);
    assert!(
        !w.spin_or_yield(true, true),
        "a yield that ran nobody: sleep next"
    );
    assert_eq!(w.spun_ns(), 0);
}

#[test]
fn a_spin_that_the_probes_cap_ended_teaches_a_yielding_waiters_estimate_nothing() {
    let e = SpinEstimate::new();
    let before = (e.get(), e.futile_waits());
    // The probe yield ran another thread: the spin is capped, and its end is no verdict.
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    w.probe_took(QUICK_YIELD_NS + 1);
    while w.spin_or_yield(true, false) {}
    assert_eq!(
        (e.get(), e.futile_waits()),
        before,
        "the cap, not the lock, ended it"
    );
    // A spin that ran out its own budget did not pay (a waiter that makes no probe yield,
    // whose duration is the machine's).
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).not_yielding();
    while w.spin_or_yield(true, false) {}
    assert_eq!(e.futile_waits(), before.1 + 1);
    assert!(e.get() < before.0);
    // Nor did a capped one of a waiter not made yielding (the rwlock's writer, whose lock's
    // estimate its readers share).
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, None).not_yielding();
    w.probe_took(QUICK_YIELD_NS + 1);
    while w.spin_or_yield(true, false) {}
    assert_eq!(e.futile_waits(), before.1 + 2);
}

#[test]
fn a_waiter_whose_deadline_has_passed_does_not_yield() {
    let e = SpinEstimate::new();
    let past = Deadline::after(Duration::ZERO);
    let mut w = Waiter::under(SpinPolicy::Adaptive, &e, Some(&past));
    assert!(!w.spin_or_yield(false, true));
    assert!(w.timed_out());
}

/// Pins the calling thread to `cpu` (Linux).
#[cfg(all(target_os = "linux", not(miri)))]
fn pin_to(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it; the call reads
    // it for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[test]
#[cfg(all(target_os = "linux", not(miri)))]
fn a_waiter_sharing_its_cpu_with_a_runnable_thread_cuts_its_spin_short_and_yields() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    // A thread that always wants the CPU, on the same CPU as the waiter: the probe yield runs
    // it, so the waiter must cut its spin to twice the lock's estimate (its budget here is the
    // floor, twice the probe point) and wait by yielding.
    let stop = Arc::new(AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let pinned = pin_to(0);
            while !stop.load(Relaxed) {
                core::hint::spin_loop();
            }
            pinned
        })
    };
    let pinned = pin_to(0);
    // The scheduler runs the busy thread at a yield only while it is owed CPU time, so not every
    // probe finds the CPU crowded: of a hundred waits, some must.
    let mut crowded = None;
    for _ in 0..100 {
        // A fresh estimate each time: a failed spin shrinks the budget of the next.
        let e = SpinEstimate::new();
        let floor = 2 * PROBE_FACTOR * e.get();
        let budget = match e.budget_under(SpinPolicy::Adaptive, floor) {
            SpinBudget::Nanos(ns) => ns,
            b => panic!("adaptive budget {b:?}"),
        };
        let mut w = Waiter::under_with_floor(SpinPolicy::Adaptive, &e, None, floor);
        let mut steps = 0;
        while w.spin(true) {
            steps += 1;
        }
        if w.spun_ns() < budget {
            crowded = Some(steps);
            break;
        }
    }
    stop.store(true, Relaxed);
    let busy_pinned = busy.join().unwrap();
    if !(pinned && busy_pinned) {
        return; // affinity refused (a restricted container): nothing to check
    }
    let steps =
        crowded.expect("no wait cut its spin short with another thread waiting for its CPU");
    assert!(
        steps >= YIELDS,
        "{steps} steps: the yields are part of the wait"
    );
}

#[test]
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
fn a_look_at_a_word_another_cpu_wrote_sees_its_line_moved() {
    // The writer (CPU 1) stores into `word`, then passes the turn; the reader (CPU 0) waits for
    // its turn, looks at `word` once, and passes the turn back. Every look reads a line that
    // the other CPU wrote last.
    const ROUNDS: u32 = 400;
    // On a VM a batch can be disturbed (the host runs something else on one vCPU, or other
    // tests run beside this one): ask that one of three batches shows the moves.
    let mut seen = Vec::new();
    for _ in 0..3 {
        match moved_looks(ROUNDS) {
            None => return,
            Some((moved, _)) if moved > ROUNDS / 2 => return,
            Some(batch) => seen.push(batch),
        }
    }
    panic!(
        "(looks that saw the line another CPU wrote move, of {ROUNDS}; ns a transfer takes) \
         per batch: {seen:?}"
    );
}

/// One batch of [`a_look_at_a_word_another_cpu_wrote_sees_its_line_moved`]: how many of
/// `rounds` looks saw the line move, and about how long a transfer took; `None` where there is
/// nothing to check (not pinned, or a transfer not clearly slower than the threshold).
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
fn moved_looks(rounds: u32) -> Option<(u32, u64)> {
    use super::look::{look, MOVED_NS};
    use crossbeam_utils::CachePadded;
    use std::sync::atomic::Ordering::{Acquire, Release};
    let word = CachePadded::new(AtomicU32::new(0));
    let turn = CachePadded::new(AtomicU32::new(0));
    let mut moved = 0;
    let mut pinned = true;
    let mut started = None;
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let ok = pin_to(1);
            for i in 1..=rounds {
                word.store(i, Relaxed);
                turn.store(2 * i - 1, Release);
                while turn.load(Acquire) != 2 * i {
                    core::hint::spin_loop();
                }
            }
            ok
        });
        pinned &= pin_to(0);
        for i in 1..=rounds {
            while turn.load(Acquire) != 2 * i - 1 {
                core::hint::spin_loop();
            }
            if i == 1 {
                started = Some(Instant::now());
            }
            let l = look(&word);
            assert_eq!(l.value, i);
            moved += u32::from(l.moved);
            turn.store(2 * i, Release);
        }
        pinned &= writer.join().unwrap();
    });
    // Each round hands the turn over and back (two line transfers) and moves `word` once:
    // about three transfers, and the time each side takes to see its turn, so the estimate
    // runs high. Where a transfer is not clearly slower than the threshold (two CPUs that share
    // a cache, or one CPU), a look cannot tell, and there is nothing to check. "Clearly" is
    // five times `MOVED_NS`: a counter that advances in steps (a VM's) rounds the threshold to
    // its step (see `look`), and the estimate runs high.
    let rounds_ns = started.map_or(0, |t| t.elapsed().as_nanos() as u64);
    let transfer_ns = rounds_ns / (3 * u64::from(rounds - 1));
    if !pinned || transfer_ns < 5 * MOVED_NS {
        return None;
    }
    Some((moved, transfer_ns))
}

#[test]
fn a_locks_catch_score_rises_one_per_pass_falls_three_per_failure_and_keeps_to_its_field() {
    let e = SpinEstimate::new();
    assert_eq!(e.catch_score(), 0);
    // (passed, score after), from 0.
    let steps = [
        (false, 0),
        (true, 1),
        (true, 2),
        (false, 0),
        (true, 1),
        (true, 2),
        (true, 3),
        (true, 4),
        (false, 4 - CATCH_FAIL_PENALTY),
        (true, 2),
        (true, 3),
        (true, 4),
        (true, 5),
        (true, 6),
        (true, 7),
        (true, CATCH_SCORE_MAX),
        (false, CATCH_SCORE_MAX - CATCH_FAIL_PENALTY),
    ];
    for (i, &(passed, after)) in steps.iter().enumerate() {
        assert_eq!(e.caught(passed), after, "step {i}");
        assert_eq!(e.catch_score(), after, "step {i}");
    }
    // The other fields of the word keep the score, and the score keeps them.
    let score = e.catch_score();
    let est = e.get();
    for _ in 0..3 {
        e.record(false, 0);
    }
    assert_eq!((e.catch_score(), e.futile_waits()), (score, 3));
    assert!(e.get() < est);
    for _ in 0..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    assert!(!e.watch_turn());
    assert_eq!(e.catch_score(), score);
    let (est, turn) = (e.get(), e.watch_turn());
    e.caught(true);
    assert_eq!((e.get(), e.futile_waits(), e.watch_turn()), (est, 3, turn));
    // Failures up to the exploration fit their field beside the score.
    for _ in 3..EXPLORE_EVERY {
        e.record(false, 0);
    }
    assert_eq!(
        (e.futile_waits(), e.catch_score()),
        (EXPLORE_EVERY, score + 1)
    );
}

#[test]
fn a_catch_test_passes_on_a_word_left_free_and_fails_on_one_held_throughout() {
    const HELD: u32 = 1;
    let held = |v: u32| v & HELD != 0;
    let word = AtomicU32::new(0);
    assert_eq!(catch_test(&word, &held, 0), (true, 0));
    assert_eq!(catch_test(&word, &held, 2_000), (true, 0));
    word.store(HELD | 4, Relaxed);
    let t0 = Instant::now();
    assert_eq!(catch_test(&word, &held, 2_000), (false, HELD | 4));
    assert!(t0.elapsed() < Duration::from_secs(5), "the poll is bounded");
}

/// Not under Miri: its clock runs with the instructions it interprets, so the long window that
/// keeps this test from depending on when the other thread runs would take minutes there.
#[test]
#[cfg(not(miri))]
fn a_catch_test_passes_on_a_word_released_while_it_polls_and_left_free() {
    const HELD: u32 = 1;
    let held = |v: u32| v & HELD != 0;
    let word = AtomicU32::new(HELD);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1));
            word.store(8, Relaxed);
        });
        assert_eq!(catch_test(&word, &held, 500_000_000), (true, 8));
    });
}

#[test]
fn a_locks_quiet_level_rises_one_per_unchanged_bound_to_its_max_falls_to_0_and_keeps_its_field() {
    let e = SpinEstimate::new();
    assert_eq!(e.quiet(), 0);
    // (the bound ended on an unchanged word, the level after), from 0.
    let mut steps = vec![(false, 0), (true, 1), (true, 2), (false, 0)];
    steps.extend((1..=QUIET_MAX).map(|level| (true, level)));
    steps.extend([(true, QUIET_MAX), (true, QUIET_MAX), (false, 0), (true, 1)]);
    for (i, &(unchanged, after)) in steps.iter().enumerate() {
        assert_eq!(e.bound_ended(unchanged), after, "step {i}");
        assert_eq!(e.quiet(), after, "step {i}");
    }
    // The other fields keep the level, and the level keeps them.
    e.bound_ended(true);
    let level = e.quiet();
    let est = e.get();
    for _ in 0..3 {
        e.record(false, 0);
    }
    e.caught(true);
    for _ in 0..WATCHED_PER_CYCLE {
        e.watched(false);
    }
    assert_eq!(e.quiet(), level);
    assert!(e.get() < est);
    let fields = (e.get(), e.futile_waits(), e.catch_score(), e.watch_turn());
    assert_eq!(fields.1, 3);
    for _ in 0..=QUIET_MAX {
        e.bound_ended(true);
    }
    assert_eq!(e.quiet(), QUIET_MAX);
    e.bound_ended(false);
    assert_eq!(
        (e.get(), e.futile_waits(), e.catch_score(), e.watch_turn()),
        fields
    );
}

#[test]
fn a_re_take_look_takes_a_free_lock_only_once_its_catch_score_is_high_and_tests_when_told() {
    const HELD: u32 = 1;
    let held = |v: u32| v & HELD != 0;
    let e = SpinEstimate::new();
    let w = Waiter::under(SpinPolicy::Adaptive, &e, None);
    let word = AtomicU32::new(0);
    // A look that found the lock re-taken; `at` is its coin (tested where the score is 0 only
    // one time in CATCH_TEST_EVERY).
    let look = |at: u64| Look {
        value: HELD,
        moved: true,
        far: false,
        took: 0,
        at,
    };
    let tested = 0;
    let untested = 1 << 4;
    const { assert!(CATCH_TEST_EVERY > 1) };
    // Score 0, the coin says no: a re-take, no test.
    assert_eq!(w.catch(&word, &held, &look(untested)), Err(HELD));
    assert_eq!(e.catch_score(), 0);
    // The coin says test: the lock was left free, so the test passes, but one pass is not
    // enough to take it.
    assert_eq!(w.catch(&word, &held, &look(tested)), Err(0));
    assert_eq!(e.catch_score(), 1);
    // Above 0 every re-take look is tested; the lock is taken once the score is high enough.
    for score in 2..CATCH_TAKE_SCORE {
        assert_eq!(w.catch(&word, &held, &look(untested)), Err(0));
        assert_eq!(e.catch_score(), score);
    }
    assert_eq!(w.catch(&word, &held, &look(untested)), Ok(0));
    assert_eq!(e.catch_score(), CATCH_TAKE_SCORE);
    // A failed test (the lock held throughout) is a re-take and lowers the score.
    word.store(HELD, Relaxed);
    assert_eq!(w.catch(&word, &held, &look(untested)), Err(HELD));
    assert_eq!(e.catch_score(), CATCH_TAKE_SCORE - CATCH_FAIL_PENALTY);
    // Back below the threshold, a pass is not enough to take the lock again.
    word.store(0, Relaxed);
    assert_eq!(w.catch(&word, &held, &look(untested)), Err(0));
}

/// Tells `w` the lock was re-taken under its eyes as often as makes its spinning futile
/// ([`RETAKES_FUTILE`] looks).
fn retaken_futile(w: &mut Waiter<'_>) {
    for _ in 0..RETAKES_FUTILE {
        w.retaken();
    }
}
