//! The C test programs in `tests/c/`, compiled with gcc and run three ways: under plain glibc
//! (the programs check POSIX behaviour, so they must pass there too), under
//! `LD_PRELOAD=libscalelock_preload.so`, and under the library with `SCALELOCK_LOCK=glibc` (and
//! `spin` for the quick ones). Each program checks which implementation actually served it.

mod common;

use common::{compile, compile_cpp, compile_shared, preload_lib, run_program, Run};

fn all_ways(program: &str) {
    all_ways_exe(&compile(program));
}

fn all_ways_exe(exe: &std::path::Path) {
    let exe = exe.to_path_buf();
    let lib = preload_lib();
    run_program(&exe, &Run::glibc());
    run_program(&exe, &Run::preloaded(&lib, None, "scalelock"));
    run_program(&exe, &Run::preloaded(&lib, Some("glibc"), "glibc"));
}

#[test]
fn mutex_types_static_initialisers_error_codes_and_timeouts() {
    all_ways("mutex");
}

#[test]
fn mutex_under_spin_mode() {
    let exe = compile("mutex");
    let lib = preload_lib();
    let env = [("SCALELOCK_TEST_ITERS", "300")];
    run_program(
        &exe,
        &Run::preloaded(&lib, Some("spin"), "spin").with_env(&env),
    );
}

#[test]
fn condvar_producer_consumer_both_clocks_timeouts_destroy() {
    all_ways("cond");
}

#[test]
fn condvar_waits_are_cancellation_points() {
    all_ways("cancel");
}

#[test]
fn cancelled_cpp_waiter_runs_its_destructors_with_the_mutex_held() {
    all_ways_exe(&compile_cpp("cancel_cpp"));
}

/// `glibc_same.c` prints the result of every call whose result POSIX leaves open (destroying
/// held objects, unlocking what the caller does not hold, bad and past deadlines, other clocks,
/// a reader arriving while a writer waits); the library must print exactly what glibc prints,
/// in every mode.
#[test]
fn results_where_posix_leaves_them_open_are_glibcs() {
    let exe = compile("glibc_same");
    let lib = preload_lib();
    let glibc = run_program(&exe, &Run::glibc());
    for (mode, expect) in [
        (None, "scalelock"),
        (Some("spin"), "spin"),
        (Some("glibc"), "glibc"),
    ] {
        let ours = run_program(&exe, &Run::preloaded(&lib, mode, expect));
        let (g, o): (Vec<_>, Vec<_>) = (
            glibc.stdout.lines().collect(),
            ours.stdout.lines().collect(),
        );
        let differences: Vec<String> = g
            .iter()
            .zip(&o)
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("  glibc: {a}\n  ours:  {b}"))
            .collect();
        assert!(
            differences.is_empty() && g.len() == o.len(),
            "SCALELOCK_LOCK={mode:?} differs from glibc ({} lines vs {}):\n{}",
            o.len(),
            g.len(),
            differences.join("\n")
        );
    }
}

#[test]
fn fork_child_uses_locks_and_process_shared_passes_through() {
    all_ways("fork");
}

#[test]
fn spinlocks_private_and_process_shared() {
    all_ways("spin");
    let exe = compile("spin");
    let lib = preload_lib();
    run_program(&exe, &Run::preloaded(&lib, Some("spin"), "spin"));
}

#[test]
fn bad_lock_kind_is_reported_once_and_the_default_used() {
    let exe = compile("spin");
    let lib = preload_lib();
    let out = run_program(&exe, &Run::preloaded(&lib, Some("fastest"), "scalelock"));
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("SCALELOCK_LOCK"))
        .collect();
    assert_eq!(
        lines,
        ["scalelock: ignoring SCALELOCK_LOCK=fastest: expected scalelock, spin or glibc; using scalelock"],
        "stderr was: {}",
        out.stderr
    );
}

#[test]
fn locks_taken_before_the_library_constructor_runs() {
    let exe = compile("early");
    let early = compile_shared("early_lib");
    let early = early.to_str().expect("utf-8 path");
    let lib = preload_lib();
    let env = [("EXTRA_PRELOAD", early)];
    run_program(&exe, &Run::glibc().with_env(&env));
    for (mode, expect) in [(None, "scalelock"), (Some("glibc"), "glibc")] {
        run_program(&exe, &Run::preloaded(&lib, mode, expect).with_env(&env));
    }
}

#[test]
fn rwlock_readers_in_parallel_writer_exclusion_error_codes() {
    all_ways("rwlock");
}

#[test]
fn no_lock_call_allocates() {
    let exe = compile("noalloc");
    // The guard itself works: an allocation made inside a guarded call aborts the program.
    let mut cmd = std::process::Command::new(&exe);
    cmd.env("NOALLOC_SELFTEST", "1").env_remove("LD_PRELOAD");
    let (status, _, err) = common::run_with_timeout(cmd, common::PROGRAM_TIMEOUT).expect("ran");
    assert!(
        !status.success() && err.contains("allocation inside"),
        "{status}: {err}"
    );
    all_ways("noalloc");
    let lib = preload_lib();
    let env = [("SCALELOCK_LOCKSTAT", "1")];
    run_program(
        &exe,
        &Run::preloaded(&lib, None, "scalelock").with_env(&env),
    );
}
