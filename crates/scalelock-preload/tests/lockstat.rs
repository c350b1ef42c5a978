//! `SCALELOCK_LOCKSTAT=1`: the library writes the lockstat table when the program exits, or dies
//! of SIGINT, naming each lock by address and its callers by function.

mod common;

use common::{compile_with, preload_lib, run_with_timeout, PROGRAM_TIMEOUT};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

fn report_path(tag: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lockstat-{tag}-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// Starts the program with SIGINT at its default action, as a shell in a terminal does: a test
/// run from a background job inherits it ignored, and the program could not die of it.
fn default_sigint(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only calls signal(2), which
    // is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
}

fn run(
    arg: Option<&str>,
    lockstat: Option<&str>,
    file: &PathBuf,
) -> (std::process::ExitStatus, String) {
    run_with(arg, lockstat, file, &[])
}

fn run_with(
    arg: Option<&str>,
    lockstat: Option<&str>,
    file: &PathBuf,
    env: &[(&str, &str)],
) -> (std::process::ExitStatus, String) {
    let exe = compile_with("lockstat", &["-rdynamic"]);
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied());
    cmd.env("LD_PRELOAD", preload_lib())
        .env("SCALELOCK_TEST_EXPECT", "scalelock")
        .env("SCALELOCK_LOCKSTAT_FILE", file)
        .env_remove("SCALELOCK_LOCK")
        .env_remove("SCALELOCK_LOCKSTAT");
    if let Some(v) = lockstat {
        cmd.env("SCALELOCK_LOCKSTAT", v);
    }
    if let Some(a) = arg {
        cmd.arg(a);
    }
    default_sigint(&mut cmd);
    let (status, out, err) = run_with_timeout(cmd, PROGRAM_TIMEOUT).expect("program ran");
    assert!(
        out.contains("ok contended"),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    (status, out)
}

/// The addresses the program printed: "mutex at 0x..., rwlock at 0x...".
fn addresses(out: &str) -> Vec<String> {
    out.lines()
        .find(|l| l.starts_with("mutex at "))
        .map(|l| {
            l.split_whitespace()
                .filter(|w| w.starts_with("0x"))
                .map(|w| w.trim_end_matches(',').to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn table_at_exit_names_locks_by_address_and_callers_by_function() {
    let file = report_path("exit");
    let (status, out) = run(None, Some("1"), &file);
    assert!(status.success(), "{status}");
    let table = std::fs::read_to_string(&file).expect("the library wrote the table");
    eprintln!("{table}");
    let addrs = addresses(&out);
    assert_eq!(addrs.len(), 2, "{out}");
    for a in &addrs {
        assert!(
            table.contains(a.as_str()),
            "lock {a} missing from:\n{table}"
        );
    }
    assert!(
        table.contains("hot_path_lock"),
        "caller not named:\n{table}"
    );
    // Each lock is also named by the function that first used it: `main` takes the mutex
    // first, `table_writer` the rwlock (the program prints the mutex, then the rwlock).
    for (a, first) in addrs.iter().zip(["main", "table_writer"]) {
        assert!(
            table.contains(&format!("{a}@{first}+")),
            "lock {a} not labelled with its first user {first}:\n{table}"
        );
    }
}

#[test]
fn table_is_written_when_the_program_dies_of_sigint() {
    let file = report_path("sigint");
    let (status, _) = run(Some("sigint"), Some("1"), &file);
    assert_eq!(status.signal(), Some(libc_sigint()), "{status}");
    let table = std::fs::read_to_string(&file).expect("the library wrote the table");
    assert!(table.contains("hot_path_lock"), "{table}");
}

#[test]
fn table_is_written_when_the_program_dies_of_sigterm() {
    let file = report_path("sigterm");
    let (status, _) = run(Some("sigterm"), Some("1"), &file);
    assert_eq!(status.signal(), Some(15), "{status}");
    let table = std::fs::read_to_string(&file).expect("the library wrote the table");
    assert!(table.contains("hot_path_lock"), "{table}");
}

/// The row of `table`'s per-lock part (after the header line that starts with `Acquired`)
/// whose lock column, the last, starts with `lock_prefix`, split into columns.
fn lock_row(table: &str, lock_prefix: &str) -> Option<Vec<String>> {
    table
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Acquired"))
        .find(|l| l.contains(&format!("  {lock_prefix}")))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
}

/// A program that creates and destroys 41 000 locks, more than lockstat's table holds: every
/// destroyed lock is folded into the row of the function that first used it, nothing is
/// dropped, and nothing goes to the overflow row; a lock initialised in the memory of one never
/// destroyed starts a row of its own, and a global lock destroyed keeps its row.
#[test]
fn destroyed_locks_are_folded_by_their_first_user() {
    let file = report_path("churn");
    let exe = compile_with("lockstat_churn", &["-rdynamic"]);
    let mut cmd = Command::new(exe);
    cmd.env("LD_PRELOAD", preload_lib())
        .env("SCALELOCK_TEST_EXPECT", "scalelock")
        .env("SCALELOCK_LOCKSTAT_FILE", &file)
        .env("SCALELOCK_LOCKSTAT", "1")
        .env_remove("SCALELOCK_LOCK");
    let (status, out, err) = run_with_timeout(cmd, PROGRAM_TIMEOUT).expect("program ran");
    assert!(
        status.success() && out.contains("ok churn"),
        "{status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    let table = std::fs::read_to_string(&file).expect("the library wrote the table");
    eprintln!("{table}");
    assert!(!table.contains("dropped"), "{table}");
    assert!(!table.contains("table full"), "{table}");
    // Every acquisition of the churned locks, in one row per first user.
    for (first, count) in [("churn_mutex", "40000"), ("churn_rwlock", "1000")] {
        let row = lock_row(&table, &format!("(destroyed)@{first}+"))
            .unwrap_or_else(|| panic!("no row of {first}'s destroyed locks:\n{table}"));
        assert_eq!(row[0], count, "{row:?}");
    }
    // A mutex initialised again in the memory of one never destroyed: two rows.
    let row = lock_row(&table, "(destroyed)@first_life+").expect("the first life");
    assert_eq!(row[0], "2", "{row:?}");
    let reused = out
        .lines()
        .find_map(|l| l.strip_prefix("reused at "))
        .expect("the program printed the address");
    let row = lock_row(&table, &format!("{reused}@second_life+")).expect("the second life");
    assert_eq!(row[0], "1", "{row:?}");
    // A global lock destroyed keeps its row.
    let global = out
        .lines()
        .find_map(|l| l.strip_prefix("global at "))
        .expect("the program printed the address");
    let row = lock_row(&table, &format!("{global}@use_global+")).expect("the global lock");
    assert_eq!(row[0], "3", "{row:?}");
    assert!(!table.contains("(destroyed)@use_global"), "{table}");
    // The waited mutex, first used by main, keeps its wait at its call site.
    let row = lock_row(&table, "(destroyed)@main+").expect("main's destroyed lock");
    assert_eq!((row[0].as_str(), row[1].as_str()), ("2", "1"), "{row:?}");
    assert!(
        table
            .lines()
            .any(|l| l.contains("(destroyed)@main+") && l.contains("blocked_locker+")),
        "the wait's call site:\n{table}"
    );
}

/// `SCALELOCK_LOCKSTAT_FORMAT=dump` (what `scalelock profile` reads): every lock with its
/// counters and hold times, the memory map, and with `SCALELOCK_LOCKSTAT_STACKS` sampled stacks.
#[test]
fn dump_has_every_lock_the_memory_map_holds_and_stacks() {
    let file = report_path("dump");
    let (status, out) = run_with(
        None,
        Some("1"),
        &file,
        &[
            ("SCALELOCK_LOCKSTAT_FORMAT", "dump"),
            ("SCALELOCK_LOCKSTAT_STACKS", "4"),
        ],
    );
    assert!(status.success(), "{status}");
    // Written as FILE.PID.
    let dir = file.parent().unwrap();
    let prefix = format!("{}.", file.file_name().unwrap().to_str().unwrap());
    let written: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&prefix)
        })
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let file = written[0].clone();
    let dump = std::fs::read_to_string(&file).expect("the library wrote the dump");
    assert!(dump.starts_with("scalelock-lockstat-dump 2\n"), "{dump}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the report is private");
    let addrs = addresses(&out);
    assert_eq!(addrs.len(), 2, "{out}");
    for a in &addrs {
        let line = dump
            .lines()
            .find(|l| l.starts_with(&format!("lock {a} ")))
            .unwrap_or_else(|| panic!("lock {a} missing from:\n{dump}"));
        let fields: Vec<u64> = line
            .split(' ')
            .skip(2)
            .take(11)
            .map(|f| f.parse().unwrap())
            .collect();
        assert!(fields[0] >= 10000, "acquisitions: {line}");
        assert!(fields[8] > 0, "hold samples: {line}");
        assert!(fields[10] > 0, "max hold: {line}");
    }
    let maps = dump
        .split("\nmaps\n")
        .nth(1)
        .and_then(|m| m.split("\nend\n").next())
        .expect("a maps section");
    assert!(maps.contains("libscalelock_preload.so"), "{maps}");
    // The first contended acquisition is sampled: the certain wait in hot_path_lock.
    assert!(
        dump.lines().any(|l| l.starts_with("stack ")),
        "no stack in:\n{dump}"
    );
}

#[test]
fn nothing_is_written_without_lockstat() {
    let file = report_path("off");
    let (status, _) = run(None, None, &file);
    assert!(status.success());
    assert!(!file.exists(), "a table was written with lockstat off");
}

fn libc_sigint() -> i32 {
    2
}
