//! Helpers shared by the test binaries: a small RNG, a watchdog, RSS, a counting allocator.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// xorshift64*: deterministic per seed, good enough to pick operations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }
}

/// Aborts the process with a message if it is still alive after `limit` (a hang must fail, not
/// stall CI). Dropping the returned guard disarms it.
pub struct Watchdog(Arc<AtomicBool>);

pub fn watchdog(what: &'static str, limit: Duration) -> Watchdog {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < limit {
            if d.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("watchdog: {what} still running after {limit:?}: hang");
        std::process::exit(101);
    });
    Watchdog(done)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Resident set size of this process, in bytes (from /proc/self/statm).
pub fn rss_bytes() -> usize {
    let s = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let pages: usize = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// A backing allocator that counts what reaches it, and can be told to fail.
#[derive(Default)]
pub struct Counting {
    pub allocs: AtomicUsize,
    pub deallocs: AtomicUsize,
    pub fail: AtomicBool,
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if self.fail.load(Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        self.allocs.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        self.deallocs.fetch_add(1, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

impl<'a> Counting {
    pub fn get(&'a self) -> (usize, usize) {
        (
            self.allocs.load(Ordering::Relaxed),
            self.deallocs.load(Ordering::Relaxed),
        )
    }
}
