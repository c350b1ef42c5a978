//! Builds `libscalelock_preload.so` (release, debug info stripped, symbols kept) so that the
//! `scalelock` binary can carry it (`src/embedded.rs`): a `scalelock` installed with
//! `cargo install --path crates/scalelock-cli` runs and profiles programs on its own.
//!
//! The library is built by a nested `cargo build` of the workspace's `scalelock-preload` crate
//! into a target folder inside `OUT_DIR` (cargo cannot yet depend on a cdylib as an artifact).
//! Cargo reruns this script when the library's sources (or the crates it is made of) change.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let crates = manifest_dir
        .parent()
        .expect("crates/scalelock-cli has a parent folder")
        .to_path_buf();
    let preload = crates.join("scalelock-preload");
    for dir in ["scalelock-preload", "scalelock", "scalelock-alloc"] {
        for part in ["src", "csrc", "build.rs", "Cargo.toml"] {
            let p = crates.join(dir).join(part);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
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
