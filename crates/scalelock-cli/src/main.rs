//! The `scalelock` command line.
mod launch;

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match args.first().and_then(|a| a.to_str()) {
        Some("run") => launch::run("scalelock", None, &args[1..]),
        Some("profile") => launch::profile(20, &args[1..]),
        _ => {
            eprintln!("scalelock: the bench is being built; see README.md");
            std::process::ExitCode::from(2)
        }
    }
}
