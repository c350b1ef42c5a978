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

/// `name` in the test's temporary folder.
fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// A stand-in for the library (the dynamic linker warns that it cannot preload it and goes on).
fn stand_in_lib() -> PathBuf {
    let p = tmp("libscalelock_preload.so");
    std::fs::write(&p, b"not an ELF file").expect("write stand-in");
    p
}

/// `scalelock` with the stand-in library.
fn scalelock_stand_in() -> Command {
    let mut c = scalelock();
    c.env("SCALELOCK_PRELOAD_LIB", stand_in_lib());
    c
}

/// Runs `scalelock` as `c` says, to its end.
fn run(c: &mut Command) -> Output {
    c.output().expect("run scalelock")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn run_sets_the_environment_and_returns_the_command_status() {
    let script = r#"
        test "$SCALELOCK_LOCK" = spin || exit 11
        test "$SCALELOCK_SPIN" = 500 || exit 12
        case "$LD_PRELOAD" in *libscalelock_preload.so:/other.so) ;; *) exit 13 ;; esac
        exit 7"#;
    let o = run(scalelock_stand_in()
        .args([
            "run", "--lock", "spin", "--spin", "500", "--", "sh", "-c", script,
        ])
        .env("LD_PRELOAD", "/other.so"));
    assert_eq!(o.status.code(), Some(7), "stderr: {}", stderr(&o));
}

#[test]
fn run_reports_death_by_signal_as_128_plus_the_signal() {
    let o = run(scalelock_stand_in().args([
        "run",
        "--lock",
        "glibc",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]));
    assert_eq!(o.status.code(), Some(128 + 15), "stderr: {}", stderr(&o));
}

#[test]
fn bad_lock_or_spin_fails_before_starting_the_command() {
    for args in [
        ["--lock", "ticket", "--spin", "auto"],
        ["--lock", "scalelock", "--spin", "soon"],
    ] {
        let o = run(scalelock_stand_in().arg("run").args(args).args([
            "--",
            "sh",
            "-c",
            "echo started",
        ]));
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
    let o = run(scalelock()
        .args(["run", "--lock", "scalelock", "--", "true"])
        .env(
            "SCALELOCK_PRELOAD_LIB",
            "/nonexistent/libscalelock_preload.so",
        ));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/libscalelock_preload.so"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn profile_reads_the_report_from_a_private_directory_and_removes_it() {
    let json = tmp("private-dir-profile.json");
    let seen = tmp("private-dir-seen");
    let script = r#"
        test "$SCALELOCK_LOCKSTAT" = 1 || exit 11
        test "$SCALELOCK_LOCKSTAT_FORMAT" = dump || exit 12
        d=$(dirname "$SCALELOCK_LOCKSTAT_FILE")
        test "$(stat -c %a "$d")" = 700 || exit 13
        test "$(stat -c %u "$d")" = "$(id -u)" || exit 14
        echo "$d" > "$SEEN"
        f="$SCALELOCK_LOCKSTAT_FILE.$$"
        printf 'scalelock-lockstat-dump 1\ninterval_ns 1000\nsample_period 1\ndropped 0\n' > "$f"
        printf 'lock 0x1234 5 2 0 0 1 0 3000 2000 0 0 0 first 0x99\n' >> "$f"
        printf 'site 0x1234 0 2 0 0 1 0 3000 2000 0 0 0 addr 0x99\nmaps\nend\n' >> "$f"
        exit 0"#;
    let o = run(scalelock_stand_in()
        .args(["profile", "--top", "3", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", script])
        .env("SEEN", &seen));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("0x1234@0x99"), "{}", stderr(&o));
    let dir = std::fs::read_to_string(&seen).expect("the script ran");
    assert!(
        !std::path::Path::new(dir.trim()).exists(),
        "{dir} left behind"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).unwrap();
    assert_eq!(j["locks"][0]["wait_ns"], 3000);
    assert_eq!(j["sites"][0]["caller_addr"], 0x99);
}

#[test]
fn profile_says_so_when_no_report_was_left() {
    let o = run(scalelock_stand_in().args(["profile", "--", "true"]));
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("no lockstat report"), "{}", stderr(&o));
}

/// Compiles `tests/c/NAME.c` with gcc and `flags` into the test's temporary folder.
fn compile(name: &str, flags: &[&str]) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    // Each call gets its own file: tests run in parallel, and a binary being written cannot
    // be started (ETXTBSY).
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = tmp(&format!(
        "{name}-{}-{}-{n}",
        flags.join("").replace(['-', ' '], ""),
        std::process::id()
    ));
    let st = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .arg("-pthread")
        .status()
        .expect("gcc must be installed");
    assert!(st.success(), "gcc failed on {}", src.display());
    out
}

/// `scalelock` with the library it carries, cached under the test's temporary folder.
fn scalelock_embedded() -> Command {
    let mut c = scalelock();
    c.env_remove("SCALELOCK_PRELOAD_LIB")
        .env("XDG_CACHE_HOME", tmp("cache"));
    c
}

#[test]
fn run_and_profile_refuse_a_statically_linked_program() {
    let exe = compile("profiled", &["-O2", "-static"]);
    for sub in [&["run", "--lock", "scalelock"][..], &["profile"][..]] {
        let o = run(scalelock_embedded().args(sub).arg("--").arg(&exe));
        assert_eq!(o.status.code(), Some(2), "{sub:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "the program must not start");
        assert!(stderr(&o).contains("statically linked"), "{}", stderr(&o));
    }
}

#[test]
fn run_refuses_a_setuid_program_that_changes_identity() {
    let exe = compile("profiled", &["-O2"]);
    let run_exe = |args: &[&str]| run(scalelock_embedded().args(args).arg("--").arg(&exe));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    use std::os::unix::fs::PermissionsExt;
    // Set-user-ID to this user: no change of identity, the linker preloads as usual.
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let o = run_exe(&["run", "--lock", "scalelock"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    if root {
        // Owned by another user, it would run as that user: refused.
        std::os::unix::fs::chown(&exe, Some(65534), None).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let o = run_exe(&["run", "--lock", "scalelock"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "the program must not start");
        assert!(stderr(&o).contains("set-user-ID"), "{}", stderr(&o));
        std::os::unix::fs::chown(&exe, None, Some(65534)).unwrap();
        std::os::unix::fs::chown(&exe, Some(0), None).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o2755)).unwrap();
        let o = run_exe(&["profile"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("set-group-ID"), "{}", stderr(&o));
    }
}

/// The table of `profile` on an -O2 -g PIE without -rdynamic names the static locks by their
/// symbols and the callers by function, for each way the program can end.
#[test]
fn profile_names_locks_and_callers_of_an_optimised_pie() {
    let exe = compile("profiled", &["-O2", "-g", "-fPIE", "-pie"]);
    let json = tmp("profiled.json");
    for (how, code) in [("exit", 0), ("sigint", 128 + 2)] {
        let mut cmd = scalelock_embedded();
        // SIGINT at its default action, as a shell in a terminal starts a command: a test run
        // from a background job inherits it ignored, and the program could not die of it.
        // SAFETY: the closure runs in the forked child before exec and only calls signal(2),
        // which is async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let o = run(cmd
            .args([
                "profile", "--top", "10", "--sort", "count", "--stacks", "3", "--json",
            ])
            .arg(&json)
            .arg("--")
            .arg(&exe)
            .arg(how));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{how}: {err}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("rows 80000"));
        assert!(err.contains("Call sites, by count"), "{how}: {err}");
        for name in [
            "table_lock",
            "index_lock",
            "update_table+0x",
            "rebuild_index+0x",
        ] {
            assert!(err.contains(name), "{how}: no {name} in\n{err}");
        }
        assert!(
            err.contains("profiled.c:"),
            "{how}: no source line in\n{err}"
        );
        // The heap lock is named by its first user.
        assert!(err.contains("@touch_heap+0x"), "{how}: {err}");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let locks = j["locks"].as_array().unwrap();
        let table = locks.iter().find(|l| l["lock"] == "table_lock").unwrap();
        assert_eq!(table["static_symbol"], true);
        assert!(table["acquisitions"].as_u64().unwrap() >= 80000);
        assert!(table["contended"].as_u64().unwrap() >= 1);
        assert!(table["hold_samples"].as_u64().unwrap() > 0);
        let index = locks.iter().find(|l| l["lock"] == "index_lock").unwrap();
        assert!(
            index["hold_samples"].as_u64().unwrap() > 0,
            "rwlock holds: {index}"
        );
        // The first contended acquisition is sampled: update_table's wait, called by worker.
        let stacks = j["stacks"].as_array().unwrap();
        assert!(
            stacks.iter().any(|s| {
                let f = s["frames"].as_array().unwrap();
                f.len() >= 2
                    && f[0]["name"]
                        .as_str()
                        .unwrap()
                        .starts_with("update_table+0x")
                    && f[1]["name"].as_str().unwrap().starts_with("worker+0x")
            }),
            "{how}: {stacks:?}"
        );
        assert!(err.contains("Contended stacks"), "{how}: {err}");
        let sites = j["sites"].as_array().unwrap();
        assert!(sites.iter().any(
            |s| s["caller"].as_str().unwrap().starts_with("update_table+0x")
                && s["hold_samples"].as_u64().unwrap() > 0
        ));
    }
}

/// A program started by a shell: both processes leave a dump, and the program's locks are in the
/// report.
#[test]
fn profile_of_a_shell_that_starts_the_program_reports_the_program() {
    let exe = compile("profiled", &["-O2", "-g", "-fPIE", "-pie"]);
    let o = run(scalelock_embedded()
        .args(["profile", "--", "sh", "-c"])
        .arg(format!("{} exit; true", exe.display())));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("table_lock"), "{err}");
    assert!(err.contains("update_table+0x"), "{err}");
}

/// A SIGTERM to `scalelock profile` goes on to the program, whose report is still printed.
#[test]
fn profile_passes_sigterm_on_and_still_prints_the_table() {
    use std::io::BufRead;
    let exe = compile("profiled", &["-O2", "-g", "-fPIE", "-pie"]);
    let mut child = scalelock_embedded()
        .args(["profile", "--"])
        .arg(&exe)
        .arg("wait")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run scalelock");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap() > 0 && !line.contains("ready") {}
    assert!(line.contains("ready"), "{line}");
    // SAFETY: kill with our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(128 + 15), "{err}");
    assert!(err.contains("table_lock"), "{err}");
}
