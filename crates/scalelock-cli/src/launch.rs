//! `scalelock profile` and `scalelock run`: start a command under `libscalelock_preload.so`.
//!
//! Owned by the preload work; the bench's `main.rs` only calls these two functions.

use std::ffi::OsString;
use std::process::ExitCode;

/// `scalelock run --lock KIND [--spin POLICY] -- CMD ARGS..`
pub fn run(lock: &str, spin: Option<&str>, cmd: &[OsString]) -> ExitCode {
    let _ = (lock, spin, cmd);
    eprintln!("scalelock run: the preload library is not part of this build yet");
    ExitCode::from(2)
}

/// `scalelock profile [--top N] -- CMD ARGS..`
pub fn profile(top: usize, cmd: &[OsString]) -> ExitCode {
    let _ = (top, cmd);
    eprintln!("scalelock profile: the preload library is not part of this build yet");
    ExitCode::from(2)
}
