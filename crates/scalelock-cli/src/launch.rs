//! `scalelock profile` and `scalelock run`: start a command under `libscalelock_preload.so`.
//!
//! Both find the library next to their own binary (`target/release/scalelock` next to
//! `target/release/libscalelock_preload.so`; one folder up for a binary under `deps/`), or at
//! `$SCALELOCK_PRELOAD_LIB`. The command gets the library added to `LD_PRELOAD` and the
//! configuration in `SCALELOCK_*` variables; this process waits for it, ignoring the SIGINT that
//! the terminal sends to both (the command decides what Ctrl-C means), and exits with the
//! command's status (128 + N if it died of signal N).
//!
//! `profile` also sets `SCALELOCK_LOCKSTAT=1` and `SCALELOCK_LOCKSTAT_FILE`: the library writes its
//! lockstat table there when the command exits (or dies of SIGINT), and `profile` prints it.
//!
//! Owned by the preload work; the bench's `main.rs` only calls these two functions.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const LIB_NAME: &str = "libscalelock_preload.so";

/// `scalelock run --lock KIND [--spin POLICY] -- CMD ARGS..`
pub fn run(lock: &str, spin: Option<&str>, cmd: &[OsString]) -> ExitCode {
    let (opts, cmd) = match Options::parse(cmd) {
        Ok(x) => x,
        Err(e) => return usage_error("run", &e),
    };
    let lock = opts.lock.as_deref().unwrap_or(lock);
    let spin = opts.spin.as_deref().or(spin);
    let mut env = match lock_env(lock, spin) {
        Ok(env) => env,
        Err(e) => return usage_error("run", &e),
    };
    env.push(("SCALELOCK_LOCKSTAT".into(), "0".into()));
    match launch(cmd, &env) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("scalelock run: {e}");
            ExitCode::from(2)
        }
    }
}

/// `scalelock profile [--top N] -- CMD ARGS..`
pub fn profile(top: usize, cmd: &[OsString]) -> ExitCode {
    let (opts, cmd) = match Options::parse(cmd) {
        Ok(x) => x,
        Err(e) => return usage_error("profile", &e),
    };
    let top = opts.top.unwrap_or(top);
    let mut env = match lock_env(
        opts.lock.as_deref().unwrap_or("scalelock"),
        opts.spin.as_deref(),
    ) {
        Ok(env) => env,
        Err(e) => return usage_error("profile", &e),
    };
    let report =
        std::env::temp_dir().join(format!("scalelock-lockstat-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&report);
    env.push(("SCALELOCK_LOCKSTAT".into(), "1".into()));
    env.push(("SCALELOCK_LOCKSTAT_TOP".into(), top.to_string().into()));
    env.push(("SCALELOCK_LOCKSTAT_FILE".into(), report.clone().into()));
    let code = match launch(cmd, &env) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("scalelock profile: {e}");
            return ExitCode::from(2);
        }
    };
    match std::fs::read_to_string(&report) {
        Ok(table) => {
            eprintln!("\n== scalelock lockstat (top {top})");
            eprint!("{table}");
            let _ = std::fs::remove_file(&report);
        }
        Err(_) => eprintln!(
            "scalelock profile: the command left no lockstat report (it may be statically \
             linked, have exited through _exit, or been killed by a signal other than SIGINT)"
        ),
    }
    code
}

/// Options that `main.rs` may have left in front of the command.
#[derive(Default)]
struct Options {
    lock: Option<String>,
    spin: Option<String>,
    top: Option<usize>,
}

impl Options {
    /// Splits `[--lock K] [--spin P] [--top N] [--] CMD ARGS..`.
    fn parse(args: &[OsString]) -> Result<(Options, &[OsString]), String> {
        let mut o = Options::default();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let Some(s) = a.to_str() else { break };
            let value = |i: usize| {
                args.get(i + 1)
                    .and_then(|v| v.to_str())
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{s} needs a value"))
            };
            match s {
                "--" => {
                    i += 1;
                    break;
                }
                "--lock" => o.lock = Some(value(i)?),
                "--spin" => o.spin = Some(value(i)?),
                "--top" => {
                    let v = value(i)?;
                    o.top = Some(v.parse().map_err(|_| format!("--top {v}: not a number"))?);
                }
                _ if s.starts_with("--") => return Err(format!("unknown option {s}")),
                _ => break,
            }
            i += 2;
        }
        let cmd = args.get(i..).unwrap_or(&[]);
        if cmd.is_empty() {
            return Err("no command given".into());
        }
        Ok((o, cmd))
    }
}

fn usage_error(which: &str, e: &str) -> ExitCode {
    eprintln!("scalelock {which}: {e}");
    eprintln!(
        "usage: scalelock run --lock scalelock|spin|glibc [--spin auto|NS|0|always] -- CMD ARGS..\n       \
         scalelock profile [--top N] -- CMD ARGS.."
    );
    ExitCode::from(2)
}

/// The environment for `--lock` and `--spin`, validated here so that a typo fails loudly
/// instead of becoming a warning inside the command's output.
fn lock_env(lock: &str, spin: Option<&str>) -> Result<Vec<(OsString, OsString)>, String> {
    let kind = match lock {
        "scalelock" => "scalelock",
        "spin" => "spin",
        "glibc" | "pthread" => "glibc",
        other => return Err(format!("--lock {other}: expected scalelock, spin or glibc")),
    };
    let mut env = vec![("SCALELOCK_LOCK".into(), kind.into())];
    if let Some(spin) = spin {
        spin.parse::<scalelock::wait::SpinPolicy>()
            .map_err(|e| format!("--spin {spin}: {e}"))?;
        env.push(("SCALELOCK_SPIN".into(), spin.into()));
    }
    Ok(env)
}

/// Where the preload library is: `$SCALELOCK_PRELOAD_LIB`, else next to this binary or one
/// folder up.
pub(crate) fn find_library() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SCALELOCK_PRELOAD_LIB") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "SCALELOCK_PRELOAD_LIB={} does not exist",
                p.display()
            ))
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join(LIB_NAME), dir.join("..").join(LIB_NAME)];
    for c in &candidates {
        if c.is_file() {
            return Ok(c.clone());
        }
    }
    Err(format!(
        "{LIB_NAME} not found at {} or {}; build it with `cargo build --release -p scalelock-preload` \
         (or point SCALELOCK_PRELOAD_LIB at it)",
        candidates[0].display(),
        candidates[1].display()
    ))
}

/// Runs `cmd` with the library preloaded and `env` set; returns its exit status as ours.
fn launch(cmd: &[OsString], env: &[(OsString, OsString)]) -> Result<ExitCode, String> {
    let lib = find_library()?;
    let (program, args) = cmd.split_first().ok_or("no command given")?;
    let mut preload = OsString::from(lib.as_os_str());
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut command = Command::new(program);
    command.args(args).env("LD_PRELOAD", &preload);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", OsStr::to_string_lossy(program)))?;
    // The terminal's Ctrl-C reaches the command too; it decides, and we report what it did.
    // SAFETY: setting SIGINT's disposition to "ignore" and back; no handler code runs.
    let old = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let status = child.wait();
    // SAFETY: as above, restoring the previous disposition.
    unsafe { libc::signal(libc::SIGINT, old) };
    let status = status.map_err(|e| format!("waiting for the command: {e}"))?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from(128u8.saturating_add(sig.clamp(0, 127) as u8)),
        (None, None) => ExitCode::FAILURE,
    })
}
