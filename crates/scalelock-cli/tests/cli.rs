//! The `scalelock` binary as a user runs it.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn scalelock(args: &[&str]) -> Output {
    scalelock_in(std::path::Path::new("."), args)
}

/// [`scalelock`], run in the folder `dir`.
fn scalelock_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scalelock"))
        .current_dir(dir)
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

/// `git rev-parse HEAD` of this source tree, or `None` where git cannot tell (no checkout).
fn source_head() -> Option<String> {
    Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
fn a_results_file_names_the_commit_the_binary_was_built_from_wherever_it_runs() {
    // Run from a folder outside the checkout: the commit must still be the source tree's.
    let dir = scratch("commit");
    let json = dir.join("r.json");
    let out = scalelock_in(
        &dir,
        &[
            "bench",
            "--workload",
            "mutex-short",
            "--threads",
            "1",
            "--locks",
            "scalelock",
            "--repeat",
            "1",
            "--duration-ms",
            "5",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let recorded = v["config"]["commit"].as_str().expect("config.commit");
    match source_head() {
        Some(head) => assert_eq!(recorded.trim_end_matches("-dirty"), head, "{recorded}"),
        None => assert_eq!(recorded, "unknown"),
    }
    let _ = std::fs::remove_dir_all(&dir);
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
        "--repeat",
        "3",
        "--duration-ms",
        "100",
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
    // Two writers in a loop write in 100 ms whatever the lock, unless the machine is so loaded
    // that they got no CPU in the median run: for one lock of two they did.
    let mut writers_wrote = false;
    for r in results {
        let writes = number(&r["params"]["writes_per_sec"], "writes_per_sec");
        let f = &r["fairness"];
        // Only the reader's operations are counted.
        assert_eq!(f["min_thread_ops"], f["max_thread_ops"], "{r}");
        assert_eq!(r["total_ops"], f["min_thread_ops"], "{r}");
        if r["threads"] == 1 {
            assert_eq!(writes, 0.0, "one thread is the reader alone: {r}");
            // On a loaded machine the reader may not get a CPU in one short window; in one of
            // three it does.
            let best = r["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| number(&k["ops_per_sec"], "runs[].ops_per_sec"))
                .fold(0.0, f64::max);
            assert!(best > 0.0, "{r}");
        } else {
            writers_wrote |= writes > 0.0;
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
    assert!(writers_wrote, "no writes counted at 3 threads");
    let _ = std::fs::remove_dir_all(&dir);
}

fn json_of(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A tiny run: `extra` arguments after a short, narrow selection.
fn tiny(dir: &std::path::Path, name: &str, extra: &[&str]) -> (Output, PathBuf) {
    let json = dir.join(format!("{name}.json"));
    let mut args = vec![
        "bench",
        "--duration-ms",
        "20",
        "--json",
        json.to_str().unwrap(),
    ];
    let report = dir.join(format!("{name}-report"));
    args.extend(["--report", report.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let out = scalelock(&args);
    assert!(
        out.status.success(),
        "{args:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, json)
}

#[test]
fn isolate_measures_every_run_in_a_process_of_its_own_and_says_so() {
    let dir = scratch("isolate");
    let md = dir.join("results.md");
    let sel = [
        "--workload",
        "mutex-short,rwlock-hammer",
        "--locks",
        "scalelock,parking_lot",
        "--threads",
        "2",
        "--repeat",
        "2",
    ];
    let mut args = sel.to_vec();
    args.extend(["--isolate", "--markdown", md.to_str().unwrap()]);
    let (_, json) = tiny(&dir, "iso", &args);
    let v = json_of(&json);
    check_schema(&v);
    assert_eq!(v["config"]["isolate"], true);
    let results = v["results"].as_array().unwrap();
    // Two locks: one point each in mutex-short, one per case (two) in rwlock-hammer, whose
    // children must find the case's point.
    assert_eq!(results.len(), 6, "{v}");
    let mut seen = std::collections::HashSet::new();
    for r in results {
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{r}");
        for k in runs {
            let pid = k["process"]
                .as_u64()
                .unwrap_or_else(|| panic!("a run without its process: {r}"));
            assert!(seen.insert(pid), "two runs in process {pid}: {v}");
        }
        assert!(number(&r["ops_per_sec"], "ops_per_sec") > 0.0, "{r}");
    }
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("each in a process of its own"), "{text}");

    // Without it, the runs are the bench's own and name no process.
    let (_, json) = tiny(&dir, "in-process", &sel);
    let v = json_of(&json);
    assert_eq!(v["config"]["isolate"], false);
    for r in v["results"].as_array().unwrap() {
        for k in r["runs"].as_array().unwrap() {
            assert!(k.get("process").is_none(), "{r}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repeat_keeps_every_run_and_reports_the_median_with_its_spread() {
    let dir = scratch("repeat");
    let md = dir.join("results.md");
    let (out, json) = tiny(
        &dir,
        "r",
        &[
            "--workload",
            "mutex-short",
            "--locks",
            "scalelock,std,spin",
            "--threads",
            "1,2",
            "--repeat",
            "3",
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    let v = json_of(&json);
    check_schema(&v);
    assert_eq!(v["config"]["repeat"], 3);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for r in results {
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{r}");
        let mut ops: Vec<f64> = runs
            .iter()
            .map(|k| number(&k["ops_per_sec"], "runs[].ops_per_sec"))
            .collect();
        ops.sort_by(f64::total_cmp);
        assert_eq!(number(&r["ops_per_sec"], "ops_per_sec"), ops[1], "{r}");
        let s = &r["ops_per_sec_spread"];
        assert_eq!(number(&s["min"], "min"), ops[0]);
        assert_eq!(number(&s["max"], "max"), ops[2]);
        assert_eq!(number(&s["median"], "median"), ops[1]);
        let l = &r["latency_ns"];
        assert!(
            number(&l["p99"], "p99") <= number(&l["p999"], "p999"),
            "{r}"
        );
        assert!(
            number(&l["p999"], "p999") <= number(&l["max"], "max"),
            "{r}"
        );
    }
    // Our series carries its ratio with spread and whether it is decided (where the other
    // locks completed an operation at all: on a loaded machine a 20 ms window may pass without
    // one).
    let ratios: Vec<&Value> = results
        .iter()
        .filter(|r| r["lock"] == "scalelock")
        .map(|r| &r["params"])
        .filter(|p| !p["ratio_to_best_other"].is_null())
        .collect();
    assert!(!ratios.is_empty(), "{results:?}");
    for p in ratios {
        let (lo, mid, hi) = (
            number(&p["ratio_min"], "ratio_min"),
            number(&p["ratio_to_best_other"], "ratio"),
            number(&p["ratio_max"], "ratio_max"),
        );
        assert!(lo <= mid && mid <= hi, "{p}");
        assert!(p["ratio_undecided"].is_boolean(), "{p}");
    }

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Medians of 3 runs"), "{stdout}");
    assert!(stdout.contains("  spread"), "{stdout}");
    for heading in ["p99]", "p99.9]", "max]", "[CPU time per operation]"] {
        assert!(stdout.contains(heading), "{heading}: {stdout}");
    }
    assert!(
        stdout.contains("=> scalelock: ") && stdout.contains(" overall (geometric mean"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("measured in") && stderr.contains("estimated"),
        "{stderr}"
    );

    let md = std::fs::read_to_string(&md).unwrap();
    for needle in [
        "| Command | `scalelock bench --duration-ms 20",
        "--repeat 3",
        "| Commit | `",
        "| Date | 20",
        "| Kernel | Linux",
        "| CPU | ",
        "## mutex-short",
        "scalelock ÷ best other",
    ] {
        assert!(md.contains(needle), "{needle}:\n{md}");
    }
    let html = std::fs::read_to_string(dir.join("r-report").join("index.html")).unwrap();
    assert!(html.contains("Commit") && html.contains("--repeat 3"));
    // Every line plot carries its own legend: each series is named inside each SVG.
    for svg in html.split("<svg").skip(1) {
        let svg = svg.split("</svg>").next().unwrap();
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').map(|(_, rest)| rest))
            .map(|t| t.split("</text>").next().unwrap().trim())
            .collect();
        for s in ["scalelock", "std", "spin"] {
            assert!(texts.contains(&s), "legend lacks {s}: {texts:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_reports_each_common_cell_and_a_summary() {
    let dir = scratch("compare");
    let sel = [
        "--workload",
        "mutex-short",
        "--locks",
        "scalelock,std",
        "--threads",
        "2",
        "--repeat",
        "2",
    ];
    let (_, a) = tiny(&dir, "a", &sel);
    let (_, b) = tiny(&dir, "b", &sel);
    let out = scalelock(&[
        "bench",
        "--compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Two cells, unless a lock completed no operation at all in one file's runs (a loaded
    // machine): then there is no ratio for that cell.
    assert!(
        stdout.contains("2 cells in common:") || stdout.contains("1 cells in common:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("better") && stdout.contains("worse") && stdout.contains("undecided"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Our verdict against the best other changed at"),
        "{stdout}"
    );
    // --metric: one table per figure, the latency ones lower-is-better.
    let out = scalelock(&[
        "bench",
        "--compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--metric",
        "ops,max",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(stdout.matches("B ÷ A per cell").count(), 2, "{stdout}");
    assert!(
        stdout.contains("median of the runs' own maxima (lower is better)"),
        "{stdout}"
    );

    // Several files a side, comma-separated: their runs are pooled per cell.
    let both = format!("{},{}", a.display(), b.display());
    let out = scalelock(&["bench", "--compare", &both, b.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("A = {}, {}", a.display(), b.display())),
        "{stdout}"
    );
    assert!(stdout.contains("cells in common:"), "{stdout}");

    let (_, other) = tiny(
        &dir,
        "other",
        &["--workload", "uncontended", "--locks", "spin"],
    );
    let missing = dir.join("missing.json");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "not json").unwrap();
    let missing_in_list = format!("{},{}", a.display(), missing.display());
    for (args, message) in [
        (
            vec![a.to_str().unwrap(), missing.to_str().unwrap()],
            "cannot read",
        ),
        (
            vec![a.to_str().unwrap(), bad.to_str().unwrap()],
            "is not a JSON file",
        ),
        (vec![&missing_in_list, a.to_str().unwrap()], "cannot read"),
        (
            vec![a.to_str().unwrap(), other.to_str().unwrap()],
            "no cell (workload, case, lock, threads) in common",
        ),
    ] {
        let mut full = vec!["bench", "--compare"];
        full.extend(args);
        assert_clean_failure(&full, message);
    }
    assert_clean_failure(
        &["bench", "--compare", a.to_str().unwrap()],
        "2 values required",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_output_fails_before_anything_is_measured() {
    let dir = scratch("unwritable");
    for flag in ["--json", "--csv", "--markdown"] {
        let started = std::time::Instant::now();
        let out = scalelock(&[
            "bench",
            "--workload",
            "mutex-short",
            "--duration-ms",
            "400",
            "--repeat",
            "5",
            flag,
            "/nonexistent-dir/out.file",
            "--report",
            dir.join("report").to_str().unwrap(),
        ]);
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag}");
        assert!(
            stderr.contains(&format!(
                "{flag} /nonexistent-dir/out.file: cannot write there"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("measured in"), "{stderr}");
        // Five runs of every point would take minutes: it failed before measuring.
        assert!(took < std::time::Duration::from_secs(5), "{flag}: {took:?}");
    }
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    assert_clean_failure(
        &[
            "bench",
            "--workload",
            "mutex-short",
            "--report",
            file.join("sub").to_str().unwrap(),
        ],
        "--report",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_repeat_metric_and_names_list_the_valid_values() {
    assert_clean_failure(
        &["bench", "--repeat", "0"],
        "repeat count must be between 1 and",
    );
    assert_clean_failure(&["bench", "--repeat", "many"], "is not a repeat count");
    assert_clean_failure(&["bench", "--metric", "p42"], "ops, cpu, p99, p999, max");
    assert_clean_failure(&["bench", "--workload", "nope"], "mutex-hammer");
    assert_clean_failure(&["bench", "--locks", "futex9"], "parking_lot");
}

/// A tiny run of `workloads` at 3 threads, throughput only: its stdout and its JSON results
/// (schema-checked).
fn ops_at_3_threads(name: &str, workloads: &str) -> (String, Vec<Value>) {
    let dir = scratch(name);
    let (out, json) = tiny(
        &dir,
        "r",
        &["--workload", workloads, "--threads", "3", "--metric", "ops"],
    );
    let v = json_of(&json);
    check_schema(&v);
    let _ = std::fs::remove_dir_all(&dir);
    let results = v["results"].as_array().unwrap().clone();
    (String::from_utf8_lossy(&out.stdout).into_owned(), results)
}

#[test]
fn the_former_examples_are_workloads_of_the_bench() {
    let (stdout, results) = ops_at_3_threads("hammers", "mutex-hammer,rwlock-hammer,rcu-read");
    let count = |w: &str| results.iter().filter(|r| r["workload"] == w).count();
    assert_eq!(count("mutex-hammer"), 6);
    // Two cases (0.1% and 10% writes) of seven rwlocks.
    assert_eq!(count("rwlock-hammer"), 14);
    assert_eq!(count("rcu-read"), 5);
    assert!(stdout.contains("scalelock-rcu ÷ best other"), "{stdout}");
    assert!(!stdout.contains("[CPU time per operation]"), "{stdout}");
}

#[test]
fn reader_tail_labels_its_throughput_as_the_readers_reads() {
    let dir = scratch("reader-label");
    let (out, _) = tiny(
        &dir,
        "t",
        &[
            "--workload",
            "reader-tail",
            "--locks",
            "scalelock,std",
            "--threads",
            "2",
            "--metric",
            "ops,p99",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[reads/s of the one reader"), "{stdout}");
    assert!(!stdout.contains("all threads"), "{stdout}");
    assert!(stdout.contains("[whole-read latency, p99]"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn preload_hammer_measures_glibc_and_the_preloaded_library_each_in_its_own_process() {
    let (stdout, results) = ops_at_3_threads("preload-hammer", "preload-hammer");
    for lock in ["pthread", "pthread-adaptive", "scalelock-preload"] {
        let r = results
            .iter()
            .find(|r| r["workload"] == "preload-hammer" && r["lock"] == lock)
            .unwrap_or_else(|| panic!("no {lock} result in {results:?}"));
        assert!(number(&r["ops_per_sec"], "ops_per_sec") > 0.0, "{r}");
    }
    assert!(
        stdout.contains("scalelock-preload ÷ best other"),
        "{stdout}"
    );
}
