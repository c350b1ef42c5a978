//! Turns on the caller-capturing entry points (`cfg(caller_trampolines)`) where the compiler has
//! naked functions (Rust 1.88) and the target is x86_64; elsewhere lockstat attributes
//! acquisitions to an unknown call site.
//!
//! Compiles `csrc/cond_wait.c`, the condvar's cancellation points (see `cond.rs`).

use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(caller_trampolines)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/cond_wait.c");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .and_then(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    let trampolines = arch == "x86_64" && minor.is_some_and(|m| m >= 88);
    if trampolines {
        println!("cargo:rustc-cfg=caller_trampolines");
    }
    let mut c = cc::Build::new();
    c.file("csrc/cond_wait.c")
        .flag_if_supported("-fasynchronous-unwind-tables")
        .warnings(true)
        .extra_warnings(true);
    if trampolines {
        c.define("SCALELOCK_CALLER_TRAMPOLINES", None);
    }
    c.compile("scalelock_cond_wait");
}
