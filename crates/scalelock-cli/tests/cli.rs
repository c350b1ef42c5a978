//! The `scalelock` binary as a user runs it.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn scalelock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scalelock"))
        .args(args)
        .env_remove("SCALELOCK_SPIN")
        .output()
        .expect("run scalelock")
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("scalelock-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn number(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

fn check_schema(json: &Value) {
    let m = &json["machine"];
    assert!(m["cpus"].as_u64().unwrap() >= 1, "{m}");
    assert!(!m["model"].as_str().unwrap().is_empty(), "{m}");
    assert!(m["kernel"].as_str().unwrap().starts_with("Linux"), "{m}");
    let results = json["results"].as_array().expect("results array");
    assert!(!results.is_empty());
    for r in results {
        assert!(r["workload"].is_string(), "{r}");
        assert!(r["lock"].is_string(), "{r}");
        assert!(r["threads"].as_u64().unwrap() >= 1, "{r}");
        assert!(number(&r["ops_per_sec"], "ops_per_sec") >= 0.0);
        assert!(number(&r["cpu_ns_per_op"], "cpu_ns_per_op") >= 0.0, "{r}");
        let l = &r["latency_ns"];
        let (p50, p99, max) = (
            number(&l["p50"], "p50"),
            number(&l["p99"], "p99"),
            number(&l["max"], "max"),
        );
        assert!(p50 <= p99 && p99 <= max, "{r}");
        let f = &r["fairness"];
        assert!(
            number(&f["min_thread_ops"], "min") <= number(&f["max_thread_ops"], "max"),
            "{r}"
        );
    }
}

/// The `<h2 id="workload">` sections of the report and whether each holds an SVG.
fn sections_with_svg(html: &str) -> Vec<(String, bool)> {
    html.split("<h2 id=\"")
        .skip(1)
        .map(|s| {
            let name = s.split('"').next().unwrap().to_string();
            (name, s.contains("<svg"))
        })
        .collect()
}

#[test]
fn quick_bench_writes_json_csv_and_a_report_with_an_svg_per_workload() {
    let dir = scratch("quick");
    let (json, csv, report) = (dir.join("r.json"), dir.join("r.csv"), dir.join("report"));
    let out = scalelock(&[
        "bench",
        "--quick",
        "--workload",
        "mutex-short,read-mostly",
        "--duration-ms",
        "10",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_schema(&v);
    let results = v["results"].as_array().unwrap();
    let mut workloads: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    workloads.dedup();
    assert_eq!(workloads, ["mutex-short", "read-mostly"]);
    for (w, locks) in [
        (
            "mutex-short",
            &[
                "scalelock",
                "std",
                "parking_lot",
                "spin",
                "pthread",
                "pthread-adaptive",
            ][..],
        ),
        (
            "read-mostly",
            &[
                "scalelock",
                "scalelock-biased",
                "std",
                "parking_lot",
                "spin",
                "pthread",
                "crossbeam-sharded",
            ][..],
        ),
    ] {
        for l in locks {
            let threads: Vec<u64> = results
                .iter()
                .filter(|r| r["workload"] == *w && r["lock"] == *l)
                .map(|r| r["threads"].as_u64().unwrap())
                .collect();
            assert_eq!(threads, [1, 4, 32], "{w} {l}");
        }
    }

    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), results.len() + 1);

    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    let sections = sections_with_svg(&html);
    assert_eq!(
        sections,
        [
            ("mutex-short".to_string(), true),
            ("read-mostly".to_string(), true)
        ]
    );
    assert!(html.contains(v["machine"]["model"].as_str().unwrap()));

    assert!(
        stdout.contains("mutex-short") && stdout.contains("scalelock ÷ best other"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn default_report_directory_is_report() {
    let dir = scratch("default-report");
    let out = Command::new(env!("CARGO_BIN_EXE_scalelock"))
        .current_dir(&dir)
        .args([
            "bench",
            "--workload",
            "uncontended",
            "--locks",
            "tas,std",
            "--duration-ms",
            "5",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("report").join("index.html")).unwrap();
    assert_eq!(
        sections_with_svg(&html),
        [("uncontended".to_string(), true)]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("tas") && stdout.contains("ns/op"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn assert_clean_failure(args: &[&str], message: &str) {
    let out = scalelock(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(
        stderr.contains(message),
        "{args:?}: stderr lacks {message:?}:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "{args:?}:\n{stderr}");
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    assert_clean_failure(&["bench", "--workload", "nope"], "unknown workload `nope`");
    assert_clean_failure(&["bench", "--locks", "futex9"], "unknown lock `futex9`");
    assert_clean_failure(
        &["bench", "--threads", "1,0"],
        "thread count must be between 1",
    );
    assert_clean_failure(&["bench", "--threads", "two"], "is not a thread count");
    assert_clean_failure(
        &["bench", "--duration-ms", "-5"],
        "duration must be between 1",
    );
    assert_clean_failure(
        &["bench", "--duration-ms", "0"],
        "duration must be between 1",
    );
    assert_clean_failure(
        &["bench", "--duration-ms", "soon"],
        "is not a number of milliseconds",
    );
    assert_clean_failure(&["bench", "--frobnicate"], "unexpected argument");
    assert_clean_failure(&["run", "--lock", "scalelock"], "required");
    assert_clean_failure(&["profile"], "required");
    // A workload with none of the selected locks measures nothing: say so rather than succeed.
    assert_clean_failure(
        &[
            "bench",
            "--workload",
            "read-mostly",
            "--locks",
            "pthread-adaptive",
            "--report",
            "/nonexistent/x",
        ],
        "nothing to run",
    );
}

#[test]
fn no_subcommand_prints_usage_and_fails() {
    let out = scalelock(&[]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("bench") && text.contains("profile") && text.contains("run"),
        "{text}"
    );
}

#[test]
fn reader_tail_reports_the_readers_rate_and_the_writers_rate_apart() {
    let dir = scratch("reader-tail");
    let json_path = dir.join("out.json");
    let out = scalelock(&[
        "bench",
        "--workload",
        "reader-tail",
        "--locks",
        "scalelock,std",
        "--threads",
        "1,3",
        "--duration-ms",
        "20",
        "--json",
        json_path.to_str().unwrap(),
        "--report",
        dir.join("report").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    check_schema(&json);
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        let writes = number(&r["params"]["writes_per_sec"], "writes_per_sec");
        let f = &r["fairness"];
        // Only the reader's operations are counted.
        assert_eq!(f["min_thread_ops"], f["max_thread_ops"], "{r}");
        assert_eq!(r["total_ops"], f["min_thread_ops"], "{r}");
        if r["threads"] == 1 {
            assert_eq!(writes, 0.0, "one thread is the reader alone: {r}");
            assert!(number(&r["ops_per_sec"], "ops_per_sec") > 0.0, "{r}");
        } else {
            // Two writers in a loop: some write in 10 ms whatever the lock.
            assert!(writes > 0.0, "{r}");
        }
        // The reader's CPU share is a fraction of one CPU (it may not have run at all in a
        // short window on a loaded machine: then both figures are left out).
        if let Some(share) = r["params"].get("reader_cpu_share") {
            let share = number(share, "reader_cpu_share");
            assert!(share > 0.0 && share <= 1.2, "{r}");
            assert!(
                number(
                    &r["params"]["reads_per_reader_cpu_sec"],
                    "reads_per_reader_cpu_sec"
                ) >= 0.0,
                "{r}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
