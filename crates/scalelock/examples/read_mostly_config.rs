//! Read-mostly configuration behind a `BiasedRwLock`: request threads read it on every request
//! (readers on different cores write no common cache line while the bias is on), an admin thread
//! replaces it now and then (the writer revokes the bias and pays for it, not the readers).
//!
//! Run: `cargo run -p scalelock --example read_mostly_config`

use scalelock::BiasedRwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
struct Config {
    version: u32,
    max_connections: u32,
    greeting: String,
}

fn main() {
    let config = Arc::new(BiasedRwLock::with_name(
        "config",
        Config {
            version: 1,
            max_connections: 100,
            greeting: "hello".into(),
        },
    ));
    let stop = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (config, stop) = (Arc::clone(&config), Arc::clone(&stop));
            std::thread::spawn(move || {
                let (mut requests, mut newest) = (0u64, 0);
                while !stop.load(Ordering::Relaxed) {
                    // A request: read what it needs, keep the read section short.
                    let c = config.read();
                    assert!(c.max_connections >= 100 && !c.greeting.is_empty());
                    newest = newest.max(c.version);
                    drop(c);
                    requests += 1;
                }
                (requests, newest)
            })
        })
        .collect();

    // The admin: a few reloads, each building the new value outside the lock.
    for version in 2..=5 {
        std::thread::sleep(Duration::from_millis(20));
        let mut next = config.read().clone();
        next.version = version;
        next.max_connections += 50;
        *config.write() = next;
    }
    std::thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);

    for (i, r) in readers.into_iter().enumerate() {
        let (requests, newest) = r.join().unwrap();
        println!("reader {i}: {requests} requests, saw up to version {newest}");
    }
    println!("final: {:?}", *config.read());
}
