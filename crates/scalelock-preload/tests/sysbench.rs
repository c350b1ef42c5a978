//! Real programs: `sysbench threads` and `sysbench mutex` (Debian package `sysbench`) finish
//! under the library with the same event counts as without it, and their pthread calls really
//! bind to the library. Skipped, with a printed reason, where sysbench is not installed.

mod common;

use common::{preload_lib, run_with_timeout, PROGRAM_TIMEOUT};
use std::path::Path;
use std::process::Command;

fn sysbench() -> Option<&'static str> {
    let found = Command::new("sysbench")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        Some("sysbench")
    } else {
        eprintln!(
            "SKIPPED: sysbench is not installed (Debian package `sysbench`); nothing was tested"
        );
        None
    }
}

/// Runs sysbench with `args`, preloading `lib` (with `SCALELOCK_LOCK=mode`) if given; returns
/// "total number of events" and the whole output.
fn run(args: &[&str], lib: Option<&Path>, mode: &str, env: &[(&str, &str)]) -> (u64, String) {
    let mut cmd = Command::new("sysbench");
    cmd.args(args)
        .env_remove("LD_PRELOAD")
        .env("SCALELOCK_LOCK", mode);
    if let Some(lib) = lib {
        cmd.env("LD_PRELOAD", lib);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let what = format!(
        "sysbench {args:?} (preload: {}, mode {mode})",
        lib.is_some()
    );
    let (status, out, err) =
        run_with_timeout(cmd, PROGRAM_TIMEOUT).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed: {status}\n{out}\n{err}");
    assert!(
        !out.contains("FATAL") && !err.contains("FATAL"),
        "{what}:\n{out}\n{err}"
    );
    let events = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("total number of events:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what}: no event count in\n{out}"));
    (events, out)
}

fn same_events_with_and_without(args: &[&str]) {
    let lib = preload_lib();
    let (plain, _) = run(args, None, "scalelock", &[]);
    assert!(plain > 0);
    for mode in ["scalelock", "glibc"] {
        let (events, out) = run(args, Some(&lib), mode, &[]);
        assert_eq!(
            events, plain,
            "sysbench {args:?} under the library ({mode}):\n{out}"
        );
    }
    eprintln!("sysbench {args:?}: {plain} events with and without the library");
}

#[test]
fn sysbench_threads_same_event_count() {
    if sysbench().is_none() {
        return;
    }
    same_events_with_and_without(&[
        "threads",
        "--threads=8",
        "--thread-yields=50",
        "--thread-locks=4",
        "--events=2000",
        "--time=0",
        "run",
    ]);
}

#[test]
fn sysbench_mutex_same_event_count() {
    if sysbench().is_none() {
        return;
    }
    same_events_with_and_without(&[
        "mutex",
        "--threads=8",
        "--mutex-num=16",
        "--mutex-locks=20000",
        "--mutex-loops=20",
        "run",
    ]);
}

/// The dynamic linker's own record shows sysbench's `pthread_mutex_lock` bound to the library.
#[test]
fn sysbench_calls_bind_to_the_library() {
    if sysbench().is_none() {
        return;
    }
    let lib = preload_lib();
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ld-debug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let prefix = dir.join("bindings");
    let prefix_s = prefix.to_str().expect("utf-8 temp path");
    run(
        &["threads", "--threads=2", "--events=100", "--time=0", "run"],
        Some(&lib),
        "scalelock",
        &[("LD_DEBUG", "bindings"), ("LD_DEBUG_OUTPUT", prefix_s)],
    );
    let mut log = String::new();
    for entry in std::fs::read_dir(&dir).expect("LD_DEBUG output") {
        log += &std::fs::read_to_string(entry.expect("entry").path()).unwrap_or_default();
    }
    std::fs::remove_dir_all(&dir).ok();
    let lib_name = lib.to_str().expect("utf-8 path");
    for sym in ["pthread_mutex_lock", "pthread_mutex_unlock"] {
        let bound = log.lines().any(|l| {
            l.contains("binding file sysbench")
                && l.contains(lib_name)
                && l.contains(&format!("`{sym}'"))
        });
        assert!(bound, "sysbench's {sym} did not bind to {lib_name}");
    }
}
