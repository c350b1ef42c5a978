//! Builds `libscalelock_preload.so` (release, debug info stripped, symbols kept) so that the
//! `scalelock` binary can carry it (`src/embedded.rs`): a `scalelock` installed with
//! `cargo install --path crates/scalelock-cli` runs and profiles programs on its own.
//!
//! The library is built by a nested `cargo build` of the workspace's `scalelock-preload` crate
//! into a target folder inside `OUT_DIR` (cargo cannot yet depend on a cdylib as an artifact).
//! Cargo reruns this script when the sources the binary is built from change (the library's,
//! the crates it is made of, this crate's own), and when the checkout's `HEAD` moves.
//!
//! It also names the commit the binary is built from (`SCALELOCK_BUILD_COMMIT`, see
//! [`build_commit`]): the bench writes it into every results file, so that a file says which
//! code it measured wherever the binary runs (a copy of it outside the checkout, or an older
//! build run in a checkout that has moved on).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace's crates whose sources the binary is built from (itself, and what it links or
/// embeds).
const CRATES: [&str; 4] = [
    "scalelock-cli",
    "scalelock-preload",
    "scalelock",
    "scalelock-alloc",
];

/// The parts of a crate the binary is built from.
const PARTS: [&str; 4] = ["src", "csrc", "build.rs", "Cargo.toml"];

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let crates = manifest_dir
        .parent()
        .expect("crates/scalelock-cli has a parent folder")
        .to_path_buf();
    let workspace = crates
        .parent()
        .expect("crates/ has a parent folder")
        .to_path_buf();
    let preload = crates.join("scalelock-preload");
    for dir in CRATES {
        for part in PARTS {
            rerun_if_changed(&crates.join(dir).join(part));
        }
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        rerun_if_changed(&workspace.join(file));
    }
    println!(
        "cargo:rustc-env=SCALELOCK_BUILD_COMMIT={}",
        build_commit(&workspace)
    );
    let target_dir = PathBuf::from(env("OUT_DIR")).join("preload-target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--lib", "--release", "--manifest-path"])
        .arg(preload.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        // The library as users run it: optimised, without the debug info the workspace's
        // release profile keeps for benchmarks (it would make this binary several times larger).
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // An outer `cargo clippy` must not lint (or `--cfg`) the nested build.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let target = env("TARGET");
    if target != env("HOST") {
        cmd.args(["--target", &target]);
    }
    let status = cmd
        .status()
        .expect("cargo must be runnable to build libscalelock_preload.so");
    assert!(status.success(), "building libscalelock_preload.so failed");
    let mut lib = target_dir.clone();
    if target != env("HOST") {
        lib.push(&target);
    }
    lib.push("release");
    lib.push("libscalelock_preload.so");
    let bytes = std::fs::read(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    println!("cargo:rustc-env=SCALELOCK_PRELOAD_EMBED={}", lib.display());
    println!(
        "cargo:rustc-env=SCALELOCK_PRELOAD_HASH={:016x}",
        fnv1a(&bytes)
    );
}

/// Asks cargo to rerun this script when `path` changes (paths that do not exist are left out:
/// cargo would rerun the script on every build for them).
fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// The commit the binary is built from: `git rev-parse HEAD` of the workspace at `root`, with
/// `-dirty` appended when the sources the binary is built from (each crate's [`PARTS`], the
/// workspace's manifest and lock file) differ from it, or `unknown` where the workspace is not
/// a git checkout (a source archive) or git is missing. Asks cargo to rerun this script when
/// the checkout's `HEAD` moves (a commit, a checkout), so the name follows it; an edit of the
/// sources reruns it anyway (see `main`).
fn build_commit(root: &Path) -> String {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty()) else {
        return "unknown".to_string();
    };
    // HEAD itself, the branch it names (a loose ref), and the packed refs (where a branch moves
    // once git has packed it). `--git-path` prints paths relative to `root`, or absolute ones.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(p) = git(&["rev-parse", "--git-path", &name]) {
            rerun_if_changed(&root.join(p));
        }
    }
    let mut status = vec![
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        "Cargo.toml",
        "Cargo.lock",
    ];
    // With glob magic `crates/*/PART` names a file (a build script, a manifest) and
    // `crates/*/PART/**` what a folder (`src`, `csrc`) holds; each part takes one of the two.
    let specs: Vec<String> = PARTS
        .iter()
        .map(|part| format!(":(glob)crates/*/{part}"))
        .chain(
            PARTS
                .iter()
                .map(|part| format!(":(glob)crates/*/{part}/**")),
        )
        .collect();
    status.extend(specs.iter().map(String::as_str));
    match git(&status) {
        Some(changes) if changes.is_empty() => head,
        // Changed sources, or a status git could not give: not the commit's code as it is.
        _ => format!("{head}-dirty"),
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

/// FNV-1a, 64 bits: names the cached copy of the library after its contents.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
