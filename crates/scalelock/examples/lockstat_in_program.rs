//! Lockstat inside a program: name the locks that matter, turn recording on around the phase to
//! study, and print (or inspect) which lock and which call site cost the waiting time.
//! (`SCALELOCK_LOCKSTAT=exit` does the same for a whole run without code changes.)
//!
//! Run: `cargo run --release -p scalelock --example lockstat_in_program`

use scalelock::{stats, Mutex, RwLock};
use std::sync::Arc;

fn main() {
    let cache = Arc::new(Mutex::with_name("cache", Vec::<u64>::new()));
    let index = Arc::new(RwLock::with_name("index", 0u64));

    stats::reset();
    stats::enable();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (cache, index) = (Arc::clone(&cache), Arc::clone(&index));
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    cache.lock().push(t * i); // the hot call site
                    if i % 100 == 0 {
                        *index.write() += 1;
                    }
                    let _ = *index.read();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    stats::disable();

    // As a table (the same as the exit-time report)...
    print!("{}", stats::report());
    // ...or as data.
    let report = stats::report();
    if let Some(hot) = report.locks.iter().find(|l| l.lock.name == Some("cache")) {
        println!(
            "cache: {} acquisitions, {} contended, {} ns waited",
            hot.counters.acquisitions, hot.counters.contended, hot.counters.wait_ns
        );
    } else {
        println!("lockstat is compiled out (the `lockstat` feature is off)");
    }
}
