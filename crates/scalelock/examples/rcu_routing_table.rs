//! A routing table in an `Rcu` cell: lookups take no lock and write no shared cache line; a route
//! change copies the table, edits the copy and publishes it, and the old table is freed once no
//! lookup can still be reading it.
//!
//! Run: `cargo run -p scalelock --example rcu_routing_table`

use scalelock::rcu::{self, Rcu, RcuReader};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Prefix (network address, prefix length) to next hop.
type Table = BTreeMap<(u32, u8), &'static str>;

/// Longest-prefix match.
fn route(table: &Table, addr: Ipv4Addr) -> Option<&'static str> {
    let a = u32::from(addr);
    (0..=32u8).rev().find_map(|len| {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        table.get(&(a & mask, len)).copied()
    })
}

fn prefix(net: [u8; 4], len: u8) -> (u32, u8) {
    (u32::from(Ipv4Addr::from(net)), len)
}

fn main() {
    let table: Table = [
        (prefix([0, 0, 0, 0], 0), "default"),
        (prefix([10, 0, 0, 0], 8), "core"),
    ]
    .into_iter()
    .collect();
    let routes = Arc::new(Rcu::new(table));
    let stop = Arc::new(AtomicBool::new(false));

    let forwarders: Vec<_> = (0..3)
        .map(|_| {
            let (routes, stop) = (Arc::clone(&routes), Arc::clone(&stop));
            std::thread::spawn(move || {
                // A thread that looks up in a loop keeps itself pinned and reports a quiescent
                // state between packets: each lookup is then one load.
                let mut reader = RcuReader::new();
                let mut via_edge = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if reader.read(&routes).is_empty() {
                        unreachable!("the default route is never removed");
                    }
                    if route(reader.read(&routes), Ipv4Addr::new(10, 1, 2, 3)) == Some("edge") {
                        via_edge += 1;
                    }
                    reader.quiescent();
                }
                via_edge
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(20));
    // A more specific route appears: copy, edit, publish.
    routes.update(|t| {
        let mut t = t.clone();
        t.insert(prefix([10, 1, 0, 0], 16), "edge");
        t
    });
    // Occasional readers use `read()`, which pins for the guard's lifetime.
    assert_eq!(
        route(&routes.read(), Ipv4Addr::new(10, 1, 9, 9)),
        Some("edge")
    );
    assert_eq!(
        route(&routes.read(), Ipv4Addr::new(10, 2, 0, 1)),
        Some("core")
    );
    assert_eq!(
        route(&routes.read(), Ipv4Addr::new(192, 168, 0, 1)),
        Some("default")
    );
    std::thread::sleep(Duration::from_millis(20));
    stop.store(true, Ordering::Relaxed);
    for (i, f) in forwarders.into_iter().enumerate() {
        println!(
            "forwarder {i}: {} packets to 10.1.2.3 went via edge",
            f.join().unwrap()
        );
    }
    // Every reader that started before this call has finished: the old table is gone.
    rcu::synchronize();
    println!("routes: {:?}", *routes.read());
}
