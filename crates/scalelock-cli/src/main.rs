//! The `scalelock` command line: `bench`, `profile`, `run`.
//!
//! ```text
//! scalelock bench [--workload W,..] [--locks L,..] [--threads 1,2,4,..] [--duration-ms N]
//!                 [--repeat N] [--isolate] [--metric M,..] [--json FILE] [--csv FILE]
//!                 [--markdown FILE] [--report DIR] [--quick]
//! scalelock bench --compare A.json[,A2.json..] B.json[,B2.json..] [--metric M,..]
//! scalelock profile [--top N] [--sort wait|count|max|hold] [--json FILE] [--stacks N] -- CMD ARGS..
//! scalelock run --lock KIND [--spin POLICY] -- CMD ARGS..
//! ```

mod bench;
mod embedded;
mod launch;
mod profile;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// glibc, unless a `large-alloc` child process is told to run on another allocator.
#[global_allocator]
static GLOBAL: bench::global_alloc::Switch = bench::global_alloc::Switch;

/// Self-tuning locks for database servers on many-core machines.
#[derive(Parser, Debug)]
#[command(name = "scalelock", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every workload against std, parking_lot, spin, glibc pthread and crossbeam; print a
    /// table, write JSON/CSV/markdown and an HTML report. Or compare two JSON results.
    Bench(BenchArgs),
    /// Run CMD with the preload library and print its lock statistics, locks and callers named
    /// from the program's symbols, when it exits (also when SIGINT or SIGTERM ends it).
    Profile(ProfileArgs),
    /// Run CMD with the preload library and the chosen lock kind, without profiling.
    Run {
        /// Lock kind to substitute (e.g. scalelock).
        #[arg(long)]
        lock: String,
        /// Spin policy: auto, 0 / never, always, or a number of nanoseconds.
        #[arg(long)]
        spin: Option<String>,
        /// The command and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        cmd: Vec<OsString>,
    },
}

#[derive(clap::Args, Debug)]
struct ProfileArgs {
    /// How many rows of each table to show.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(usize))]
    top: usize,
    /// What the tables are sorted by.
    #[arg(long, value_enum, default_value_t = profile::SortKey::Wait)]
    sort: profile::SortKey,
    /// Also write the whole report (every row) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Sample the stacks of contended acquisitions and show their top N frames, grouped.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=16))]
    stacks: u8,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    cmd: Vec<OsString>,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Workloads to run, comma-separated (default: all; listed below).
    #[arg(
        long = "workload",
        alias = "workloads",
        value_delimiter = ',',
        value_name = "W,.."
    )]
    workloads: Option<Vec<String>>,
    /// Locks to compare, comma-separated (default: all; listed below).
    #[arg(
        long = "locks",
        alias = "lock",
        value_delimiter = ',',
        value_name = "L,.."
    )]
    locks: Option<Vec<String>>,
    /// Thread counts to sweep, comma-separated (default 1,2,4,8,32,128; --quick 1,4,32).
    #[arg(long, value_delimiter = ',', value_name = "N,..", value_parser = parse_threads,
          allow_hyphen_values = true)]
    threads: Option<Vec<usize>>,
    /// Measured milliseconds of each run of a point (default 100; --quick 20).
    #[arg(long, value_name = "N", value_parser = parse_duration_ms, allow_hyphen_values = true)]
    duration_ms: Option<u64>,
    /// Measure every point N times, the rounds interleaved across the locks of each cell in a
    /// shuffled order; report medians with their spread (default 1).
    #[arg(long, value_name = "N", value_parser = parse_repeat, allow_hyphen_values = true)]
    repeat: Option<usize>,
    /// Run every run of every point in a process of its own (the bench starts itself again per
    /// run), so that `--repeat`'s rounds sample what differs between processes (where a lock's
    /// cache line lands, how threads are placed) instead of sharing one process's draw.
    #[arg(long)]
    isolate: bool,
    /// Figures the table shows per cell, comma-separated: ops, cpu, p99, p999, max, stall,
    /// switches (context switches per 1000 operations) (default: all). With --compare: the
    /// figures compared, one table each (default: ops).
    #[arg(long = "metric", alias = "metrics", value_delimiter = ',', value_name = "M,..",
          value_parser = parse_metric)]
    metrics: Option<Vec<bench::output::Metric>>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the results as CSV.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write a results file in markdown: machine, commit, date, command, medians with spread
    /// (e.g. docs/results.md).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Directory for the HTML report.
    #[arg(long, value_name = "DIR", default_value = "report")]
    report: PathBuf,
    /// Fewer thread counts and shorter points.
    #[arg(long)]
    quick: bool,
    /// Compare two `--json` results instead of measuring: B ÷ A per cell, with spread, and
    /// how many cells got better, worse or stayed undecided (throughput, or the figures
    /// --metric names). Either side may be several files, comma-separated, whose runs are
    /// pooled per cell.
    #[arg(long, num_args = 2, value_names = ["A.json[,..]", "B.json[,..]"],
          conflicts_with_all = ["workloads", "locks", "threads", "duration_ms", "repeat", "isolate",
                                "json", "csv", "markdown", "quick"])]
    compare: Option<Vec<PathBuf>>,
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 && n as usize <= bench::MAX_THREADS => Ok(n as usize),
        Ok(n) => Err(format!(
            "thread count must be between 1 and {}, got {n}",
            bench::MAX_THREADS
        )),
        Err(_) => Err(format!("`{s}` is not a thread count")),
    }
}

fn parse_duration_ms(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 && n as u64 <= bench::MAX_DURATION_MS => Ok(n as u64),
        Ok(n) => Err(format!(
            "duration must be between 1 and {} milliseconds, got {n}",
            bench::MAX_DURATION_MS
        )),
        Err(_) => Err(format!("`{s}` is not a number of milliseconds")),
    }
}

fn parse_repeat(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 && n as usize <= bench::MAX_REPEAT => Ok(n as usize),
        Ok(n) => Err(format!(
            "repeat count must be between 1 and {}, got {n}",
            bench::MAX_REPEAT
        )),
        Err(_) => Err(format!("`{s}` is not a repeat count")),
    }
}

fn parse_metric(s: &str) -> Result<bench::output::Metric, String> {
    bench::output::Metric::parse(s)
}

/// The command line as typed, program name shortened to `scalelock`, each argument quoted when
/// a shell would need it.
fn command_line() -> String {
    let mut words = vec!["scalelock".to_string()];
    for a in std::env::args_os().skip(1) {
        let a = a.to_string_lossy().into_owned();
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.,/=:+@".contains(c));
        words.push(if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        });
    }
    words.join(" ")
}

/// The workloads and lock names, for `scalelock bench --help`.
fn bench_after_help() -> String {
    let all = bench::workloads::all();
    let mut text = String::from("Workloads:\n");
    for w in &all {
        text.push_str(&format!("  {}\n", w.name()));
    }
    text.push_str("\nLocks:\n");
    for l in bench::workloads::known_columns(&all) {
        text.push_str(&format!("  {l:<18} {}\n", bench::locks::describe(l)));
    }
    text
}

fn main() -> ExitCode {
    if let Some(code) = bench::child::serve(bench::run_child_point) {
        return code;
    }
    let command = Cli::command().mut_subcommand("bench", |c| c.after_help(bench_after_help()));
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match cli.command {
        Command::Bench(a) => {
            if let Some(files) = &a.compare {
                let metrics = a.metrics.clone().unwrap_or_default();
                let (a_files, b_files) = (
                    bench::compare::side_files(&files[0]),
                    bench::compare::side_files(&files[1]),
                );
                return match bench::compare::run(&a_files, &b_files, &metrics) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("scalelock bench --compare: error: {e}");
                        ExitCode::from(1)
                    }
                };
            }
            let opts = bench::Options {
                workloads: a.workloads,
                locks: a.locks,
                threads: a.threads,
                duration_ms: a.duration_ms,
                json: a.json,
                csv: a.csv,
                report: a.report,
                quick: a.quick,
                repeat: a.repeat,
                isolate: a.isolate,
                markdown: a.markdown,
                metrics: a
                    .metrics
                    .unwrap_or_else(|| bench::output::Metric::ALL.to_vec()),
                command: command_line(),
            };
            match bench::run(&opts) {
                Ok(()) => ExitCode::SUCCESS,
                Err(bench::Error::Usage(e)) => {
                    eprintln!("scalelock bench: error: {e}");
                    ExitCode::from(2)
                }
                Err(bench::Error::Failed(e)) => {
                    eprintln!("scalelock bench: error: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Profile(a) => launch::profile(
            &launch::ProfileOptions {
                top: a.top,
                sort: a.sort,
                json: a.json,
                stacks: a.stacks.into(),
            },
            &a.cmd,
        ),
        Command::Run { lock, spin, cmd } => launch::run(&lock, spin.as_deref(), &cmd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bench_help_lists_every_workload_and_lock() {
        let text = bench_after_help();
        for w in ["uncontended", "adaptive-grid", "log-append"] {
            assert!(text.contains(w), "{text}");
        }
        for l in [
            "scalelock-biased",
            "pthread-adaptive",
            "crossbeam-sharded",
            "tas",
        ] {
            assert!(text.contains(l), "{text}");
        }
    }

    #[test]
    fn numbers_are_validated() {
        assert_eq!(parse_threads("4"), Ok(4));
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("-3").is_err());
        assert!(parse_threads("x").is_err());
        assert_eq!(parse_duration_ms("250"), Ok(250));
        assert!(parse_duration_ms("-5")
            .unwrap_err()
            .contains("between 1 and"));
        assert!(parse_duration_ms("0").is_err());
        assert_eq!(parse_repeat("5"), Ok(5));
        assert!(parse_repeat("0").unwrap_err().contains("between 1 and"));
        assert!(parse_repeat("x")
            .unwrap_err()
            .contains("not a repeat count"));
        assert!(parse_metric("p999").is_ok());
        assert!(parse_metric("stall").is_ok());
        assert!(parse_metric("p42")
            .unwrap_err()
            .contains("ops, cpu, p99, p999, max, stall"));
    }

    #[test]
    fn compare_takes_two_files_and_nothing_that_measures() {
        let cli =
            Cli::try_parse_from(["scalelock", "bench", "--compare", "a.json", "b.json"]).unwrap();
        match cli.command {
            Command::Bench(a) => assert_eq!(a.compare.unwrap().len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["scalelock", "bench", "--compare", "a.json"]).is_err());
        assert!(Cli::try_parse_from([
            "scalelock",
            "bench",
            "--compare",
            "a.json",
            "b.json",
            "--repeat",
            "3"
        ])
        .is_err());
    }

    #[test]
    fn run_and_profile_take_the_command_after_dashes() {
        let cli = Cli::try_parse_from([
            "scalelock",
            "run",
            "--lock",
            "scalelock",
            "--spin",
            "auto",
            "--",
            "ls",
            "-l",
        ])
        .unwrap();
        match cli.command {
            Command::Run { lock, spin, cmd } => {
                assert_eq!(lock, "scalelock");
                assert_eq!(spin.as_deref(), Some("auto"));
                assert_eq!(cmd, vec![OsString::from("ls"), OsString::from("-l")]);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["scalelock", "profile", "--top", "5", "--", "sleep", "1"])
            .unwrap();
        assert!(matches!(cli.command, Command::Profile(ref a) if a.top == 5 && a.cmd.len() == 2));
        let cli = Cli::try_parse_from([
            "scalelock",
            "profile",
            "--sort",
            "hold",
            "--json",
            "p.json",
            "--stacks",
            "4",
            "--",
            "sleep",
            "1",
        ])
        .unwrap();
        assert!(matches!(cli.command, Command::Profile(ref a)
            if a.sort == profile::SortKey::Hold && a.stacks == 4 && a.json.is_some()));
        assert!(
            Cli::try_parse_from(["scalelock", "profile", "--sort", "x", "--", "true"]).is_err()
        );
        assert!(
            Cli::try_parse_from(["scalelock", "profile", "--stacks", "17", "--", "true"]).is_err()
        );
    }
}
