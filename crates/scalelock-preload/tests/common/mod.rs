//! Helpers for the tests that run programs under the preload library.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one program may run before the test fails (these machines are shared and slow).
pub const PROGRAM_TIMEOUT: Duration = Duration::from_secs(240);

/// The library under test, `libscalelock_preload.so`.
///
/// `cargo test` links test binaries against the crate's rlib and never produces the cdylib, so a
/// fresh checkout has no `.so` to preload (and an old one would be stale). The first call builds it
/// with cargo into a target folder of its own (no contention with the build running these tests),
/// once per test binary; cargo rebuilds only what changed.
pub fn preload_lib() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preload-lib");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let cargo = std::env::var_os("CARGO")
            .or_else(|| option_env!("CARGO").map(Into::into))
            .unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--quiet", "--lib", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .stdin(Stdio::null())
            .output()
            .expect("cargo must be runnable to build libscalelock_preload.so");
        assert!(
            out.status.success(),
            "building libscalelock_preload.so failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lib = target.join("debug").join("libscalelock_preload.so");
        assert!(lib.is_file(), "cargo built no {}", lib.display());
        lib
    })
    .clone()
}

/// Compiles `tests/c/<name>.c` with gcc into the target's temporary folder; returns the binary.
/// Each call compiles to its own file, so tests running in parallel never share one.
pub fn compile(name: &str) -> PathBuf {
    compile_with(name, &[])
}

/// The C compiler's flags for every test program and library.
const GCC_FLAGS: [&str; 7] = [
    "-std=gnu11",
    "-O1",
    "-g",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pthread",
];

/// `tests/c/<file>`.
fn source(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(file)
}

/// Where a compiled test program or library named `file` goes (the folder is made if needed).
fn output(file: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preload-c");
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir.join(file)
}

/// A number of its own for each compiled program of this test binary.
fn next_seq() -> usize {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Runs the compiler `command` and fails the test if it fails on `src`.
fn build(mut command: Command, src: &Path) {
    let status = command.status().unwrap_or_else(|e| {
        panic!(
            "{:?} must be installed to build the test programs: {e}",
            command.get_program()
        )
    });
    assert!(
        status.success(),
        "{:?} failed on {}",
        command.get_program(),
        src.display()
    );
}

/// [`compile`] with more gcc flags.
pub fn compile_with(name: &str, flags: &[&str]) -> PathBuf {
    let src = source(&format!("{name}.c"));
    let out = output(&format!("{name}-{}-{}", std::process::id(), next_seq()));
    let mut gcc = Command::new("gcc");
    gcc.args(GCC_FLAGS)
        .arg("-o")
        .arg(&out)
        .args(flags)
        .arg(&src)
        .arg("-ldl");
    build(gcc, &src);
    out
}

/// Compiles `tests/c/<name>.cc` with g++ into the target's temporary folder; returns the binary.
pub fn compile_cpp(name: &str) -> PathBuf {
    let src = source(&format!("{name}.cc"));
    let out = output(&format!("{name}-cc-{}-{}", std::process::id(), next_seq()));
    let mut gxx = Command::new("g++");
    gxx.args(["-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-ldl");
    build(gxx, &src);
    out
}

/// Compiles `tests/c/<name>.c` into a shared library; returns its path.
pub fn compile_shared(name: &str) -> PathBuf {
    let src = source(&format!("{name}.c"));
    let out = output(&format!("lib{name}-{}.so", std::process::id()));
    let mut gcc = Command::new("gcc");
    gcc.args(GCC_FLAGS)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src);
    build(gcc, &src);
    out
}

/// One way to run a program.
pub struct Run<'a> {
    /// The library to preload, if any.
    pub preload: Option<&'a Path>,
    /// `SCALELOCK_LOCK`, if set.
    pub mode: Option<&'a str>,
    /// What the program should find serving it (`SCALELOCK_TEST_EXPECT`).
    pub expect: &'a str,
    /// More environment.
    pub env: &'a [(&'a str, &'a str)],
}

impl Run<'static> {
    /// Under plain glibc: nothing preloaded, nothing set.
    pub fn glibc() -> Self {
        Run {
            preload: None,
            mode: None,
            expect: "none",
            env: &[],
        }
    }
}

impl<'a> Run<'a> {
    /// Under the library `lib` with `SCALELOCK_LOCK` set to `mode` (`None`: unset), expecting
    /// `expect` to serve the program.
    pub fn preloaded(lib: &'a Path, mode: Option<&'a str>, expect: &'a str) -> Self {
        Run {
            preload: Some(lib),
            mode,
            expect,
            env: &[],
        }
    }

    /// The same run with `env` set too.
    pub fn with_env(self, env: &'a [(&'a str, &'a str)]) -> Self {
        Run { env, ..self }
    }
}

/// What a finished program printed.
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// Runs `exe` as `run` says; fails the test if it fails, prints nothing with "ok", or outlives
/// [`PROGRAM_TIMEOUT`].
pub fn run_program(exe: &Path, run: &Run<'_>) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env_remove("LD_PRELOAD")
        .env_remove("SCALELOCK_LOCK")
        .env_remove("SCALELOCK_SPIN");
    if let Some(lib) = run.preload {
        cmd.env("LD_PRELOAD", lib);
    }
    if let Some(extra) = run
        .env
        .iter()
        .find(|(k, _)| *k == "EXTRA_PRELOAD")
        .map(|(_, v)| *v)
    {
        let all = match run.preload {
            Some(lib) => format!("{}:{extra}", lib.display()),
            None => extra.to_string(),
        };
        cmd.env("LD_PRELOAD", all);
    }
    if let Some(mode) = run.mode {
        cmd.env("SCALELOCK_LOCK", mode);
    }
    cmd.env("SCALELOCK_TEST_EXPECT", run.expect);
    for (k, v) in run.env {
        cmd.env(k, v);
    }
    let out = run_with_timeout(cmd, PROGRAM_TIMEOUT);
    let what = format!(
        "{} (preload: {}, SCALELOCK_LOCK={:?})",
        exe.display(),
        run.preload.is_some(),
        run.mode
    );
    let (status, stdout, stderr) = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        status.success(),
        "{what} failed with {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("ok ")),
        "{what} printed no result:\n{stdout}"
    );
    eprintln!("{what}:\n{stdout}");
    Output { stdout, stderr }
}

/// Runs `cmd`, killing it after `timeout`.
pub fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String, String), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > timeout {
            child.kill().ok();
            child.wait().ok();
            let so = out_reader.join().unwrap_or_default();
            let se = err_reader.join().unwrap_or_default();
            return Err(format!(
                "timed out after {timeout:?}\nstdout:\n{so}\nstderr:\n{se}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok((
        status,
        out_reader.join().unwrap_or_default(),
        err_reader.join().unwrap_or_default(),
    ))
}
