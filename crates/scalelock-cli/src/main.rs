//! The `scalelock` command line.
fn main() {
    eprintln!("scalelock: the bench is being built; see README.md");
    std::process::exit(2);
}
