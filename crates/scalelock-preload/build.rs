//! Turns on the caller-capturing entry points (`cfg(caller_trampolines)`) where the compiler has
//! naked functions (Rust 1.88) and the target is x86_64; elsewhere lockstat attributes
//! acquisitions to an unknown call site.

use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(caller_trampolines)");
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    if arch == "x86_64" && minor.is_some_and(|m| m >= 88) {
        println!("cargo:rustc-cfg=caller_trampolines");
    }
}
