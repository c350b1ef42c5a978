//! The promises of the wait layer: policy, calibration, spinning, learning, deadlines, futex.
#![cfg(not(loom))]

mod common;

use lock_api::{RawMutexTimed as _, RawRwLockTimed as _, RawRwLockUpgradeTimed as _};
use scalelock::wait::{
    futex, pause_ps, set_spin_policy, spin_policy, spin_until, Awake, Clock, Deadline, SpinBudget,
    SpinEstimate, SpinPolicy, Spinner, MAX_ADAPTIVE_SPIN_NS,
};
use scalelock::{RawBiasedRwLock, RawMutex, RawRwLock};
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::{Duration, Instant};

/// Tests that change the process-wide policy run one at a time.
static POLICY_LOCK: StdMutex<()> = StdMutex::new(());

#[test]
fn policy_parses_every_documented_spelling() {
    assert_eq!("auto".parse(), Ok(SpinPolicy::Adaptive));
    assert_eq!("0".parse(), Ok(SpinPolicy::Never));
    assert_eq!("always".parse(), Ok(SpinPolicy::Always));
    assert_eq!("2500".parse(), Ok(SpinPolicy::Fixed(2500)));
    assert_eq!(" 2500ns ".parse(), Ok(SpinPolicy::Fixed(2500)));
    assert!("fast".parse::<SpinPolicy>().is_err());
    assert!("-5".parse::<SpinPolicy>().is_err());
    assert!("99999999999".parse::<SpinPolicy>().is_err());
    for p in [
        SpinPolicy::Adaptive,
        SpinPolicy::Never,
        SpinPolicy::Always,
        SpinPolicy::Fixed(7),
    ] {
        assert_eq!(
            p.to_string().parse(),
            Ok(p),
            "display/parse round trip of {p:?}"
        );
    }
}

/// The right to set the process-wide policy (one test at a time): puts the policy back as it
/// was when dropped, also when the test panics, so that a failed check does not leave the
/// tests after it running under `Always`, where those that wait for a sleeper hang.
struct PolicyHeld {
    before: SpinPolicy,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl PolicyHeld {
    fn new() -> PolicyHeld {
        let lock = POLICY_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        PolicyHeld {
            before: spin_policy(),
            _lock: lock,
        }
    }
}

impl Drop for PolicyHeld {
    fn drop(&mut self) {
        // Runs before the fields drop: the lock is still held.
        set_spin_policy(self.before);
    }
}

#[test]
fn policy_changes_at_run_time_and_sets_the_budget() {
    let _held = PolicyHeld::new();
    let e = SpinEstimate::new();
    set_spin_policy(SpinPolicy::Never);
    assert_eq!(e.budget(), SpinBudget::Nanos(0));
    set_spin_policy(SpinPolicy::Fixed(1234));
    assert_eq!(e.budget(), SpinBudget::Nanos(1234));
    set_spin_policy(SpinPolicy::Always);
    assert_eq!(e.budget(), SpinBudget::Unbounded);
    set_spin_policy(SpinPolicy::Adaptive);
    match e.budget() {
        SpinBudget::Nanos(n) => assert!((1..=MAX_ADAPTIVE_SPIN_NS).contains(&n)),
        b => panic!("adaptive budget {b:?}"),
    }
}

#[test]
fn pause_is_calibrated_to_a_plausible_cost() {
    let ps = pause_ps();
    assert!((100..=1_000_000).contains(&ps), "{ps} ps per pause");
}

#[test]
fn spinner_stops_when_its_budget_is_spent() {
    let mut s = Spinner::new(SpinBudget::Nanos(0));
    assert!(!s.spin());
    assert!(!s.has_spun());
    let mut s = Spinner::new(SpinBudget::Nanos(5_000));
    let mut steps = 0;
    while s.spin() {
        steps += 1;
        assert!(steps < 1_000_000, "spinner never ran out");
    }
    assert!(s.spent_ns() >= 5_000);
    let mut s = Spinner::new(SpinBudget::Unbounded);
    for _ in 0..1000 {
        assert!(s.spin());
    }
}

#[test]
fn spin_until_returns_as_soon_as_ready_and_gives_up_at_the_deadline() {
    for awake in [Awake::Spin, Awake::SpinThenYield] {
        let mut looks = 0;
        assert!(spin_until(
            || {
                looks += 1;
                true
            },
            awake,
            None
        ));
        assert_eq!(looks, 1, "{awake:?}: a ready condition is looked at once");

        let mut looks = 0;
        assert!(spin_until(
            || {
                looks += 1;
                looks == 50
            },
            awake,
            None
        ));
        assert_eq!(looks, 50, "{awake:?}");

        let t0 = Instant::now();
        let d = Deadline::after(Duration::from_millis(20));
        assert!(!spin_until(|| false, awake, Some(&d)), "{awake:?}");
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(20) && took < Duration::from_secs(5),
            "{awake:?}: gave up after {took:?}"
        );

        // A deadline already past: a condition that holds still wins (the first look comes
        // before any look at the clock).
        let past = Deadline::after(Duration::ZERO);
        assert!(spin_until(|| true, awake, Some(&past)), "{awake:?}");
        assert!(!spin_until(|| false, awake, Some(&past)), "{awake:?}");
    }
}

#[test]
fn spin_until_with_yields_lets_more_waiters_than_cpus_finish() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    // Every thread spins until all have arrived: with more threads than CPUs the last arrivals
    // only run if the spinners give their CPUs away.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let n = 4 * cpus;
    let arrived = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                arrived.fetch_add(1, Relaxed);
                assert!(spin_until(
                    || arrived.load(Relaxed) == n,
                    Awake::SpinThenYield,
                    None
                ));
            });
        }
    });
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "assumes the monotonic clock is past 1 s (the machine's uptime); Miri's starts near 0"
)]
fn deadline_rejects_invalid_timespecs() {
    let bad = [(-1, 0), (0, -1), (0, 1_000_000_000)];
    for (s, ns) in bad {
        let ts = libc::timespec {
            tv_sec: s,
            tv_nsec: ns,
        };
        assert!(
            Deadline::from_timespec(Clock::Realtime, ts).is_none(),
            "{s} {ns}"
        );
    }
    let ok = libc::timespec {
        tv_sec: 0,
        tv_nsec: 999_999_999,
    };
    assert!(Deadline::from_timespec(Clock::Monotonic, ok)
        .unwrap()
        .has_passed());
}

#[test]
fn futex_wait_times_out_at_an_absolute_deadline_on_both_clocks() {
    let w = AtomicU32::new(5);
    let t0 = Instant::now();
    assert!(!futex::wait(
        &w,
        5,
        Some(&Deadline::after(Duration::from_millis(20)))
    ));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    let mut now = Clock::Realtime.now();
    now.tv_nsec += 20_000_000;
    if now.tv_nsec >= 1_000_000_000 {
        now.tv_nsec -= 1_000_000_000;
        now.tv_sec += 1;
    }
    let t0 = Instant::now();
    let d = Deadline::from_timespec(Clock::Realtime, now).unwrap();
    assert!(!futex::wait(&w, 5, Some(&d)));
    assert!(t0.elapsed() >= Duration::from_millis(15));
}

#[test]
fn futex_wait_returns_at_once_when_the_word_differs_and_wake_counts_sleepers() {
    let w = std::sync::Arc::new(AtomicU32::new(0));
    assert!(futex::wait(&w, 1, None));
    assert_eq!(futex::wake(&w, 1), 0);
    let w2 = std::sync::Arc::clone(&w);
    let t = std::thread::spawn(move || {
        while w2.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            futex::wait(&w2, 0, None);
        }
    });
    // Wake until the sleeper is gone: at least one wake must report it.
    let mut woke = 0;
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(20));
    w.store(1, std::sync::atomic::Ordering::SeqCst);
    while !t.is_finished() {
        woke += futex::wake(&w, 1);
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::yield_now();
    }
    t.join().unwrap();
    assert!(woke <= 1);
}

#[test]
fn futex_wait_outcome_tells_a_wake_up_from_a_changed_word() {
    use futex::WaitOutcome;
    let w = std::sync::Arc::new(AtomicU32::new(0));
    // The word differs: no sleep, and no wake-up either.
    assert_eq!(futex::wait_outcome(&w, 1, None), WaitOutcome::NotWoken);
    let soon = Deadline::after(Duration::from_millis(1));
    assert_eq!(
        futex::wait_outcome(&w, 0, Some(&soon)),
        WaitOutcome::TimedOut
    );
    // A sleeper that a wake picks reports Woken (the word is unchanged, so nothing else can
    // end its sleep before the 10 s deadline).
    let w2 = std::sync::Arc::clone(&w);
    let t = std::thread::spawn(move || {
        futex::wait_outcome(&w2, 0, Some(&Deadline::after(Duration::from_secs(10))))
    });
    let t0 = Instant::now();
    while futex::wake(&w, 1) == 0 {
        assert!(!t.is_finished(), "the sleeper returned without a wake-up");
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the thread never slept"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
}

/// Run in a child process by `bad_env_value_gets_a_message_and_the_default`.
#[test]
#[cfg_attr(
    miri,
    ignore = "runs the test binary as a child process, which Miri cannot"
)]
fn child_reads_spin_policy_from_env() {
    if std::env::var_os("SCALELOCK_TEST_CHILD").is_none() {
        return;
    }
    let expected = std::env::var("SCALELOCK_TEST_EXPECT").unwrap();
    assert_eq!(spin_policy().to_string(), expected);
}

fn run_child(value: &str, expect: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_reads_spin_policy_from_env",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SCALELOCK_TEST_CHILD", "1")
        .env("SCALELOCK_TEST_EXPECT", expect)
        .env("SCALELOCK_SPIN", value)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs the test binary as a child process, which Miri cannot"
)]
fn env_values_set_the_policy() {
    assert!(run_child("always", "always").is_empty());
    assert!(run_child("0", "0").is_empty());
    assert!(run_child("3000", "3000").is_empty());
    assert!(run_child("auto", "auto").is_empty());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs the test binary as a child process, which Miri cannot"
)]
fn bad_env_value_gets_a_message_and_the_default() {
    let err = run_child("lots", "auto");
    assert!(err.contains("SCALELOCK_SPIN=lots"), "stderr was: {err}");
    assert!(err.contains("using auto"), "stderr was: {err}");
}

#[test]
fn waking_a_sleeper_measures_the_cost_of_sleeping() {
    let _g = POLICY_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    // A thread that sleeps on a mutex and is woken by the unlock teaches the wait layer what a
    // wake-up costs on this machine; the adaptive budget never spins less than half of it.
    let m = std::sync::Arc::new(scalelock::Mutex::new(0u32));
    for _ in 0..20 {
        let g = m.lock();
        let m2 = std::sync::Arc::clone(&m);
        let t = std::thread::spawn(move || *m2.lock() += 1);
        // Let the other thread exhaust its spin and go to sleep.
        common::until_a_waiter_sleeps(&m, Duration::from_millis(1));
        drop(g);
        t.join().unwrap();
    }
    assert_eq!(*m.lock(), 20);
    let latency = scalelock::wait::wake_latency_ns();
    assert!(
        latency > 0 && latency <= 1_000_000,
        "wake latency {latency} ns"
    );
}

/// Every timed acquisition of every lock, against a holder that never lets go, under `policy`:
/// each must give up at its deadline, not before and not long after.
fn every_timed_acquisition_gives_up_on_time(policy: SpinPolicy) {
    let timeout = Duration::from_millis(20);
    let on_time = |what: &str, f: &dyn Fn() -> bool| {
        let t0 = Instant::now();
        assert!(
            !f(),
            "{what} under {policy:?}: acquired a lock held elsewhere"
        );
        let took = t0.elapsed();
        assert!(
            took >= timeout && took < timeout + Duration::from_secs(2),
            "{what} under {policy:?}: gave up after {took:?}, the timeout was {timeout:?}"
        );
    };
    let m = RawMutex::new();
    m.lock();
    on_time("RawMutex::try_lock_for", &|| m.try_lock_for(timeout));
    // SAFETY: locked above by this thread.
    unsafe { lock_api::RawMutex::unlock(&m) };

    let rw = RawRwLock::new();
    rw.lock_exclusive();
    on_time("RawRwLock::try_lock_shared_for", &|| {
        rw.try_lock_shared_for(timeout)
    });
    on_time("RawRwLock::try_lock_exclusive_for", &|| {
        rw.try_lock_exclusive_for(timeout)
    });
    on_time("RawRwLock::try_lock_upgradable_for", &|| {
        rw.try_lock_upgradable_for(timeout)
    });
    // SAFETY: write-locked above by this thread.
    unsafe { rw.unlock_exclusive() };
    rw.lock_shared();
    rw.lock_upgradable();
    on_time(
        "RawRwLock::try_lock_exclusive_for (readers inside)",
        &|| rw.try_lock_exclusive_for(timeout),
    );
    assert!(
        rw.try_lock_shared(),
        "under {policy:?} a writer that gave up still keeps readers out"
    );
    // SAFETY: read-locked just above.
    unsafe { rw.unlock_shared() };
    // SAFETY: this thread holds the upgradable lock; the other read lock stays.
    on_time("RawRwLock::try_upgrade_for", &|| unsafe {
        rw.try_upgrade_for(timeout)
    });
    // SAFETY: both taken above by this thread.
    unsafe {
        rw.unlock_upgradable();
        rw.unlock_shared();
    }
    assert!(rw.try_lock_exclusive(), "the lock is left usable");
    // SAFETY: just taken.
    unsafe { rw.unlock_exclusive() };

    let b = RawBiasedRwLock::new();
    b.lock_exclusive();
    on_time("RawBiasedRwLock::try_lock_shared_for", &|| {
        lock_api::RawRwLockTimed::try_lock_shared_for(&b, timeout)
    });
    on_time("RawBiasedRwLock::try_lock_exclusive_for", &|| {
        lock_api::RawRwLockTimed::try_lock_exclusive_for(&b, timeout)
    });
    // SAFETY: write-locked above by this thread.
    unsafe { b.unlock_exclusive() };
    // A deferred reader on another thread keeps a revoking writer waiting.
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let b = &b;
        scope.spawn(move || {
            b.lock_shared();
            tx.send(()).unwrap();
            done_rx.recv().unwrap();
            // SAFETY: read-locked above by this thread.
            unsafe { b.unlock_shared() };
        });
        rx.recv().unwrap();
        on_time(
            "RawBiasedRwLock::try_lock_exclusive_for (reader inside)",
            &|| lock_api::RawRwLockTimed::try_lock_exclusive_for(b, timeout),
        );
        done_tx.send(()).unwrap();
    });
    assert!(b.try_lock_exclusive(), "the lock is left usable");
    // SAFETY: just taken.
    unsafe { b.unlock_exclusive() };
}

/// Runs `f` under each of `policies` in turn, set process-wide (see [`PolicyHeld`]).
fn under_each_policy(policies: &[SpinPolicy], f: impl Fn(SpinPolicy)) {
    let _held = PolicyHeld::new();
    for &policy in policies {
        set_spin_policy(policy);
        f(policy);
    }
}

#[test]
fn timed_acquisitions_give_up_at_their_deadline_under_every_policy() {
    let policies = [
        SpinPolicy::Adaptive,
        SpinPolicy::Never,
        SpinPolicy::Fixed(1_000),
        // A budget longer than the timeout: the spin itself must look at the deadline.
        SpinPolicy::Fixed(3_000_000_000),
        SpinPolicy::Always,
    ];
    under_each_policy(&policies, every_timed_acquisition_gives_up_on_time);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "threads that spin and yield against a 5 s real-time bound; the timed give-up test runs the writer's announce under Miri"
)]
fn a_writer_gets_past_readers_that_hand_the_lock_on_under_every_policy() {
    // Two readers hand a read lock back and forth: each holds it until the other has entered,
    // or has been refused (only a writer keeps a reader out here), so the reader count never
    // falls to zero while new readers may enter. A writer still gets in, by keeping new readers
    // out (`DRAIN`), whether it sleeps or, under `Always`, spins.
    let policies = [
        SpinPolicy::Adaptive,
        SpinPolicy::Never,
        SpinPolicy::Fixed(1_000),
        SpinPolicy::Always,
    ];
    under_each_policy(&policies, |policy| {
        writer_gets_past_a_relay_of_readers(&RawRwLock::new(), "RawRwLock", policy);
        writer_gets_past_a_relay_of_readers(&RawBiasedRwLock::new(), "RawBiasedRwLock", policy);
    });
}

/// See `a_writer_gets_past_readers_that_hand_the_lock_on_under_every_policy`.
fn writer_gets_past_a_relay_of_readers<L: lock_api::RawRwLockTimed<Duration = Duration> + Sync>(
    l: &L,
    name: &str,
    policy: SpinPolicy,
) {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    // Entries so far: reader `k` enters when their number is `k` modulo 2.
    let entries = AtomicU32::new(0);
    let refused = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for k in 0..2 {
            let (entries, refused, stop) = (&entries, &refused, &stop);
            s.spawn(move || {
                while !stop.load(Relaxed) {
                    if entries.load(Relaxed) % 2 != k {
                        std::thread::yield_now();
                        continue;
                    }
                    if !l.try_lock_shared() {
                        refused.store(true, Relaxed);
                        std::thread::yield_now();
                        continue;
                    }
                    entries.fetch_add(1, Relaxed);
                    while entries.load(Relaxed) % 2 != k
                        && !refused.load(Relaxed)
                        && !stop.load(Relaxed)
                    {
                        std::thread::yield_now();
                    }
                    // SAFETY: read-locked above by this thread.
                    unsafe { l.unlock_shared() };
                }
            });
        }
        while entries.load(Relaxed) < 10 {
            std::thread::yield_now();
        }
        let got = l.try_lock_exclusive_for(Duration::from_secs(5));
        stop.store(true, Relaxed);
        assert!(
            got,
            "{name} under {policy:?}: the readers kept the writer out for 5 s"
        );
        // SAFETY: taken just above.
        unsafe { l.unlock_exclusive() };
    });
}
