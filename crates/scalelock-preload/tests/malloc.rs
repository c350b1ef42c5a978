//! `SCALELOCK_MALLOC=pool`: the malloc family interposed, large sizes from scalelock's pool.
//!
//! `tests/c/malloc.c` runs under plain glibc, under the library with the pool off (the default:
//! everything to glibc), and with the pool on; then real programs run with the pool on: Python
//! with threads, and sysbench when it is installed.

mod common;

use common::{compile, preload_lib, run_program, run_with_timeout, Run, PROGRAM_TIMEOUT};
use std::process::Command;

fn run_malloc_c(preload: bool, pool: bool, expect: &str) {
    let exe = compile("malloc");
    let lib = preload_lib();
    // Set either way, so that a SCALELOCK_MALLOC in the caller's environment cannot leak in.
    let env = [
        ("SCALELOCK_TEST_MALLOC", expect),
        ("SCALELOCK_MALLOC", if pool { "pool" } else { "off" }),
    ];
    run_program(
        &exe,
        &Run {
            preload: preload.then_some(lib.as_path()),
            mode: None,
            expect: if preload { "scalelock" } else { "none" },
            env: &env,
        },
    );
}

#[test]
fn malloc_family_under_plain_glibc() {
    run_malloc_c(false, false, "none");
}

#[test]
fn malloc_family_with_the_pool_off_goes_to_glibc() {
    run_malloc_c(true, false, "glibc");
}

#[test]
fn malloc_family_with_the_pool_on_serves_large_sizes_from_the_pool() {
    run_malloc_c(true, true, "pool");
}

const PYTHON: &str = r#"
import ctypes, random, threading
owns = ctypes.CDLL(None).scalelock_malloc_owns
owns.argtypes = [ctypes.c_void_p]
def addr(b):
    return ctypes.addressof((ctypes.c_char * len(b)).from_buffer(b))
big = bytearray(300 * 1024)
assert owns(addr(big)) == 1, "a 300 KiB bytearray is not pooled"
shared, lock, errors = [], threading.Lock(), []
def work(seed):
    try:
        r = random.Random(seed)
        for i in range(400):
            n = r.randrange(1, 2 << 20)
            b = bytearray([i % 251]) * n
            with lock:
                shared.append(b)
                if len(shared) > 32:
                    o = shared.pop(r.randrange(len(shared)))
                    assert o.count(o[0]) == len(o), "corrupted block"
            s = bytes(b[: r.randrange(1, n + 1)])
            assert s.count(s[0]) == len(s)
    except Exception as e:
        errors.append(e)
ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errors, errors
print("ok python threads")
"#;

#[test]
fn python_with_threads_runs_on_the_pool() {
    let lib = preload_lib();
    let mut cmd = Command::new("python3");
    cmd.args(["-c", PYTHON])
        .env("LD_PRELOAD", &lib)
        .env("SCALELOCK_MALLOC", "pool");
    let (status, out, err) = run_with_timeout(cmd, PROGRAM_TIMEOUT).expect("python3 must run");
    assert!(status.success(), "python3 failed: {status}\n{out}\n{err}");
    assert!(out.contains("ok python threads"), "{out}\n{err}");
}

#[test]
fn sysbench_runs_on_the_pool() {
    if Command::new("sysbench").arg("--version").output().is_err() {
        eprintln!("sysbench is not installed: skipped");
        return;
    }
    let lib = preload_lib();
    for test in [
        &[
            "memory",
            "--memory-block-size=256K",
            "--memory-total-size=2G",
        ][..],
        &["cpu", "--cpu-max-prime=2000"][..],
    ] {
        let mut cmd = Command::new("sysbench");
        cmd.args(test)
            .args(["--threads=4", "--time=2", "run"])
            .env("LD_PRELOAD", &lib)
            .env("SCALELOCK_MALLOC", "pool");
        let (status, out, err) = run_with_timeout(cmd, PROGRAM_TIMEOUT).expect("sysbench runs");
        assert!(
            status.success(),
            "sysbench {test:?}: {status}\n{out}\n{err}"
        );
        assert!(out.contains("total number of events"), "{out}\n{err}");
    }
}
