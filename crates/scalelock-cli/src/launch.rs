//! `scalelock profile` and `scalelock run`: start a command under `libscalelock_preload.so`.
//!
//! Both use the library at `$SCALELOCK_PRELOAD_LIB`, else the copy built into this binary (see
//! [`crate::embedded`]).
//! The command gets the library added to `LD_PRELOAD` and the configuration in `SCALELOCK_*`
//! variables; this process waits for it, ignoring the SIGINT that the terminal sends to both (the
//! command decides what Ctrl-C means) and passing a SIGTERM on to it, and exits with the
//! command's status (128 + N if it died of signal N).
//!
//! Programs the dynamic linker will not preload into are refused before they start: statically
//! linked ones (no dynamic linker runs) and set-user-ID or set-group-ID ones that would change
//! identity (the linker ignores `LD_PRELOAD` in that secure-execution mode).
//!
//! `profile` also sets `SCALELOCK_LOCKSTAT=1`, `SCALELOCK_LOCKSTAT_FORMAT=dump` and
//! `SCALELOCK_LOCKSTAT_FILE` to a name in a private directory it creates (mode 0700, removed
//! afterwards): the library in each process of the command writes its lockstat dump there, as
//! `lockstat.PID`, when the process exits or dies of SIGINT or SIGTERM, and `profile` names what
//! they hold from the programs' object files ([`crate::profile`]) and prints the tables.
//!
//! Owned by the preload work; the bench's `main.rs` only calls these two functions.

use crate::profile::{self, SortKey};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};

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

/// What `scalelock profile` shows.
#[derive(Clone, Debug, Default)]
pub struct ProfileOptions {
    /// Rows per table.
    pub top: usize,
    /// Sort key of the tables.
    pub sort: SortKey,
    /// Where to write the whole report as JSON.
    pub json: Option<PathBuf>,
    /// Frames per sampled stack (0: no stacks).
    pub stacks: usize,
}

/// `scalelock profile [--top N] [--sort K] [--json FILE] [--stacks N] -- CMD ARGS..`
pub fn profile(o: &ProfileOptions, cmd: &[OsString]) -> ExitCode {
    let (opts, cmd) = match Options::parse(cmd) {
        Ok(x) => x,
        Err(e) => return usage_error("profile", &e),
    };
    let top = opts.top.unwrap_or(o.top);
    let mut env = match lock_env(
        opts.lock.as_deref().unwrap_or("scalelock"),
        opts.spin.as_deref(),
    ) {
        Ok(env) => env,
        Err(e) => return usage_error("profile", &e),
    };
    let dir = match PrivateDir::create() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("scalelock profile: {e}");
            return ExitCode::from(2);
        }
    };
    let report = dir.path.join("lockstat");
    env.push(("SCALELOCK_LOCKSTAT".into(), "1".into()));
    env.push(("SCALELOCK_LOCKSTAT_FORMAT".into(), "dump".into()));
    env.push(("SCALELOCK_LOCKSTAT_FILE".into(), report.clone().into()));
    if o.stacks > 0 {
        env.push((
            "SCALELOCK_LOCKSTAT_STACKS".into(),
            o.stacks.to_string().into(),
        ));
    }
    let code = match launch(cmd, &env) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("scalelock profile: {e}");
            return ExitCode::from(2);
        }
    };
    // One dump per process of the command (`lockstat.PID`), in the order they were written.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir.path)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("lockstat."))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.is_empty() {
        eprintln!(
            "scalelock profile: the command left no lockstat report (it may have exited \
             through _exit, or been killed by a signal other than SIGINT or SIGTERM)"
        );
        return code;
    }
    let mut dumps = Vec::new();
    for f in &files {
        let parsed = std::fs::read_to_string(f)
            .map_err(|e| e.to_string())
            .and_then(|t| profile::dump::parse(&t));
        match parsed {
            Ok(d) => dumps.push(d),
            Err(e) => {
                eprintln!("scalelock profile: the lockstat report is damaged: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let p = profile::build_all(&dumps, o.sort, o.stacks);
    eprintln!("\n== scalelock profile: {}", cmd[0].to_string_lossy());
    eprint!("{}", p.text(top));
    if let Some(path) = &o.json {
        if let Err(e) = std::fs::write(path, p.json()) {
            eprintln!("scalelock profile: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    code
}

/// A directory only this user can enter, removed when dropped: the report's way back, which no
/// other local user can predict or plant a link in.
struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    fn create() -> Result<PrivateDir, String> {
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let template = base.join("scalelock-profile-XXXXXX");
        let mut bytes = template.as_os_str().as_encoded_bytes().to_vec();
        bytes.push(0);
        // SAFETY: a NUL-terminated, writable template ending in XXXXXX; mkdtemp creates the
        // directory with mode 0700 and writes its name over the Xs.
        let p = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if p.is_null() {
            return Err(format!(
                "cannot create a private directory in {}: {}",
                base.display(),
                std::io::Error::last_os_error()
            ));
        }
        bytes.pop();
        // SAFETY: the bytes came from an OsStr and mkdtemp only replaced ASCII Xs with ASCII.
        let path = PathBuf::from(unsafe { OsString::from_encoded_bytes_unchecked(bytes) });
        Ok(PrivateDir { path })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
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
         scalelock profile [--top N] [--sort wait|count|max|hold] [--json FILE] [--stacks N] -- CMD ARGS.."
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

/// Where the preload library is: `$SCALELOCK_PRELOAD_LIB`, else the copy built into this
/// binary.
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
    crate::embedded::library()
}

/// The program `name` runs, found as `execvp` would (through `PATH` when it has no slash).
fn resolve_program(name: &OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if name.as_encoded_bytes().contains(&b'/') {
        return Some(p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|d| d.join(p)).find(|c| {
        c.metadata()
            .is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
    })
}

/// Why the dynamic linker would not preload the library into `program`, if it would not.
pub(crate) fn refusal(program: &Path) -> Option<String> {
    refusal_at(program, 0)
}

fn refusal_at(program: &Path, depth: u32) -> Option<String> {
    let meta = program.metadata().ok()?;
    // SAFETY: geteuid and getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let secure = "the dynamic linker ignores LD_PRELOAD for a program that changes identity \
                  (secure-execution mode), so the library would not be loaded";
    if meta.mode() & 0o4000 != 0 && meta.uid() != euid {
        return Some(format!(
            "{} is set-user-ID (owner uid {}): {secure}",
            program.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o2000 != 0 && meta.gid() != egid {
        return Some(format!(
            "{} is set-group-ID (group gid {}): {secure}",
            program.display(),
            meta.gid()
        ));
    }
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(program).ok()?, &mut head).ok()?;
    let head = head.get(..n)?;
    if let Some(rest) = head.strip_prefix(b"#!") {
        // A script: what runs is its interpreter.
        let line = rest.split(|&b| b == b'\n').next()?;
        let interp = line
            .split(|b| b.is_ascii_whitespace())
            .find(|w| !w.is_empty())?;
        let interp = PathBuf::from(OsStr::from_bytes(interp));
        return if depth < 4 {
            refusal_at(&interp, depth + 1)
        } else {
            None
        };
    }
    if head.starts_with(b"\x7fELF") && !has_interpreter(program)? {
        return Some(format!(
            "{} is statically linked: no dynamic linker runs for it, so nothing can preload \
             {LIB_NAME} under its locks",
            program.display()
        ));
    }
    None
}

/// Whether the ELF file has a program interpreter (`PT_INTERP`): dynamically linked.
fn has_interpreter(program: &Path) -> Option<bool> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let data = std::fs::read(program).ok()?;
    let kind = object::FileKind::parse(&*data).ok()?;
    fn check<H: FileHeader>(data: &[u8]) -> Option<bool> {
        let h = H::parse(data).ok()?;
        let e = h.endian().ok()?;
        let phdrs = h.program_headers(e, data).ok()?;
        Some(phdrs.iter().any(|p| p.p_type(e) == object::elf::PT_INTERP))
    }
    match kind {
        object::FileKind::Elf64 => check::<object::elf::FileHeader64<object::Endianness>>(&data),
        object::FileKind::Elf32 => check::<object::elf::FileHeader32<object::Endianness>>(&data),
        _ => None,
    }
}

/// The PID of the command while this process waits for it (0: none), for [`pass_sigterm`].
static CHILD: AtomicI32 = AtomicI32::new(0);

/// SIGTERM to this process goes on to the command, whose report this process still prints.
extern "C" fn pass_sigterm(_sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; `pid` is our child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

/// Runs `cmd` with the library preloaded and `env` set; returns its exit status as ours.
fn launch(cmd: &[OsString], env: &[(OsString, OsString)]) -> Result<ExitCode, String> {
    let (program, args) = cmd.split_first().ok_or("no command given")?;
    let path = resolve_program(program)
        .ok_or_else(|| format!("{}: command not found", program.to_string_lossy()))?;
    if let Some(why) = refusal(&path) {
        return Err(why);
    }
    let lib = find_library()?;
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
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    // The terminal's Ctrl-C reaches the command too; it decides, and we report what it did.
    // SAFETY: setting SIGINT's disposition to "ignore" and SIGTERM's to a handler that only
    // calls kill (async-signal-safe), and both back afterwards.
    let (old_int, old_term) = unsafe {
        (
            libc::signal(libc::SIGINT, libc::SIG_IGN),
            libc::signal(
                libc::SIGTERM,
                pass_sigterm as extern "C" fn(libc::c_int) as usize,
            ),
        )
    };
    let status = child.wait();
    // SAFETY: as above, restoring the previous dispositions.
    unsafe {
        libc::signal(libc::SIGINT, old_int);
        libc::signal(libc::SIGTERM, old_term);
    }
    CHILD.store(0, Ordering::Relaxed);
    let status = status.map_err(|e| format!("waiting for the command: {e}"))?;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from(128u8.saturating_add(sig.clamp(0, 127) as u8)),
        (None, None) => ExitCode::FAILURE,
    })
}
