//! `scalelock run` and `scalelock profile`: how they start the command and report its end.
//!
//! These tests point `SCALELOCK_PRELOAD_LIB` at a stand-in file so they do not depend on the
//! preload library having been built; the preload crate's own tests run real programs under the
//! real library.

use std::path::PathBuf;
use std::process::{Command, Output};

fn scalelock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scalelock"))
}

/// A stand-in for the library (the dynamic linker warns that it cannot preload it and goes on).
fn stand_in_lib() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libscalelock_preload.so");
    std::fs::write(&p, b"not an ELF file").expect("write stand-in");
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn run_sets_the_environment_and_returns_the_command_status() {
    let lib = stand_in_lib();
    let script = r#"
        test "$SCALELOCK_LOCK" = spin || exit 11
        test "$SCALELOCK_SPIN" = 500 || exit 12
        case "$LD_PRELOAD" in *libscalelock_preload.so:/other.so) ;; *) exit 13 ;; esac
        exit 7"#;
    let o = scalelock()
        .args([
            "run", "--lock", "spin", "--spin", "500", "--", "sh", "-c", script,
        ])
        .env("SCALELOCK_PRELOAD_LIB", &lib)
        .env("LD_PRELOAD", "/other.so")
        .output()
        .expect("run scalelock");
    assert_eq!(o.status.code(), Some(7), "stderr: {}", stderr(&o));
}

#[test]
fn run_reports_death_by_signal_as_128_plus_the_signal() {
    let o = scalelock()
        .args(["run", "--lock", "glibc", "--", "sh", "-c", "kill -TERM $$"])
        .env("SCALELOCK_PRELOAD_LIB", stand_in_lib())
        .output()
        .expect("run scalelock");
    assert_eq!(o.status.code(), Some(128 + 15), "stderr: {}", stderr(&o));
}

#[test]
fn bad_lock_or_spin_fails_before_starting_the_command() {
    for args in [
        ["--lock", "ticket", "--spin", "auto"],
        ["--lock", "scalelock", "--spin", "soon"],
    ] {
        let o = scalelock()
            .arg("run")
            .args(args)
            .args(["--", "sh", "-c", "echo started"])
            .env("SCALELOCK_PRELOAD_LIB", stand_in_lib())
            .output()
            .expect("run scalelock");
        assert_eq!(o.status.code(), Some(2));
        assert!(o.stdout.is_empty(), "the command must not start");
        assert!(
            stderr(&o).contains(args[1]) || stderr(&o).contains(args[3]),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_missing_library_is_a_clear_error() {
    let o = scalelock()
        .args(["run", "--lock", "scalelock", "--", "true"])
        .env(
            "SCALELOCK_PRELOAD_LIB",
            "/nonexistent/libscalelock_preload.so",
        )
        .output()
        .expect("run scalelock");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/libscalelock_preload.so"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn profile_turns_lockstat_on_and_prints_the_report_the_command_left() {
    let script = r#"
        test "$SCALELOCK_LOCKSTAT" = 1 || exit 11
        test "$SCALELOCK_LOCKSTAT_TOP" = 3 || exit 12
        printf 'lock 0x1234 table\n' > "$SCALELOCK_LOCKSTAT_FILE"
        exit 0"#;
    let o = scalelock()
        .args(["profile", "--top", "3", "--", "sh", "-c", script])
        .env("SCALELOCK_PRELOAD_LIB", stand_in_lib())
        .output()
        .expect("run scalelock");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("lock 0x1234 table"), "{}", stderr(&o));
}

#[test]
fn profile_says_so_when_no_report_was_left() {
    let o = scalelock()
        .args(["profile", "--", "true"])
        .env("SCALELOCK_PRELOAD_LIB", stand_in_lib())
        .output()
        .expect("run scalelock");
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("no lockstat report"), "{}", stderr(&o));
}
