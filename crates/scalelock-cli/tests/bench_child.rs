//! `large-alloc` runs each point in a child process of its own: the points report memory
//! figures from that process, and a child that fails says why.

use std::process::Command;

fn scalelock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scalelock"))
}

#[test]
fn each_allocator_point_reports_its_own_process_memory() {
    let dir = std::env::temp_dir().join(format!("scalelock-child-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let out = scalelock()
        .args([
            "bench",
            "--workload",
            "large-alloc",
            "--locks",
            "system,scalelock-pool",
        ])
        .args(["--threads", "2", "--duration-ms", "20", "--json"])
        .arg(&json)
        .arg("--report")
        .arg(dir.join("report"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        let p = &r["params"];
        let peak = p["peak_rss_mib"].as_f64().unwrap();
        let after_free = p["rss_after_free_mib"].as_f64().unwrap();
        let after_decay = p["rss_after_decay_mib"].as_f64().unwrap();
        let start = p["rss_at_start_mib"].as_f64().unwrap();
        // A fresh process: it starts small, whatever ran before it in the bench.
        assert!(start < 64.0, "{r}");
        // The phase's blocks were resident: two threads holding blocks of up to 1 MiB each.
        assert!(peak > start + 1.0, "{r}");
        assert!(after_free <= peak && after_decay <= peak, "{r}");
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_child_that_cannot_run_its_point_says_why() {
    let out = scalelock()
        .env(
            "SCALELOCK_BENCH_CHILD",
            r#"{"workload":"large-alloc","lock":"no-such-allocator","threads":1,
                "warmup_ns":1000000,"duration_ns":1000000,"sample_every":1}"#,
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"error\"") && stdout.contains("no-such-allocator"),
        "{stdout}"
    );
}

#[test]
fn a_child_on_the_wrong_global_allocator_refuses_to_measure() {
    let out = scalelock()
        .env(
            "SCALELOCK_BENCH_CHILD",
            r#"{"workload":"large-alloc","lock":"mimalloc","threads":1,
                "warmup_ns":1000000,"duration_ns":1000000,"sample_every":1}"#,
        )
        .env("SCALELOCK_BENCH_GLOBAL_ALLOC", "jemalloc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("runs on jemalloc, not mimalloc"),
        "{stdout}"
    );
}
