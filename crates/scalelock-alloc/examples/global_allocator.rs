//! `LargePool` as the program's global allocator: allocations from a page to a few MiB come from
//! per-thread magazines of the pool, everything else from the system allocator.
//!
//! Run: `cargo run --release -p scalelock-alloc --example global_allocator`

use scalelock_alloc::LargePool;

#[global_allocator]
static ALLOC: LargePool = LargePool::new();

fn main() {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut checksum = 0u64;
                for i in 0..2_000usize {
                    // 16 KiB to ~1 MiB buffers, the range the pool serves.
                    let len = 16 << 10 << (i % 7);
                    let mut buf = vec![0u8; len];
                    buf[len - 1] = (t + i) as u8;
                    checksum += u64::from(buf[len - 1]);
                }
                checksum
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let s = ALLOC.stats();
    println!("checksum {total}");
    println!(
        "pool: {} KiB carved from its regions, {} KiB cached for reuse, {} KiB committed",
        s.carved_bytes >> 10,
        s.cached_bytes >> 10,
        s.committed_bytes >> 10
    );
    assert!(s.carved_bytes > 0, "the pool served the large allocations");
}
