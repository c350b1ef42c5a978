//! Lending: a request whose class has no free block takes a free block of any larger class.
//! Many threads (far more than cores) allocate sizes over the whole range, in waves that free
//! large blocks and then ask for small ones, so that most small requests are served by lent
//! blocks; half the frees happen on another thread. Every live block is registered by address
//! range and carries a pattern: two live blocks that overlap, a block handed out twice, a block
//! smaller than asked, or a write that does not stay put fails the test.

mod common;

use common::{watchdog, Rng};
use scalelock_alloc::{Config, LargePool};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const THREADS: usize = 24;
const RUN: Duration = Duration::from_secs(2);

struct Live {
    /// start -> (end, tag) of every block handed out and not yet freed.
    ranges: Mutex<BTreeMap<usize, (usize, u64)>>,
}

impl Live {
    /// Registers `[p, p + len)`; panics if it overlaps a live block.
    fn add(&self, p: usize, len: usize, tag: u64) {
        let mut r = self.ranges.lock().unwrap();
        if let Some((&s, &(e, t))) = r.range(..p + len).next_back() {
            assert!(
                e <= p,
                "block {p:#x}+{len} overlaps live block {s:#x}..{e:#x} (tag {t})"
            );
        }
        r.insert(p, (p + len, tag));
    }

    fn remove(&self, p: usize) {
        assert!(
            self.ranges.lock().unwrap().remove(&p).is_some(),
            "{p:#x} freed but not live"
        );
    }
}

/// The page stamps stop short of the last 8 bytes, which hold the tail stamp.
fn stamp(p: *mut u8, size: usize, tag: u64) {
    let mut off = 0;
    while off + 16 <= size {
        // SAFETY: inside a live block of `size` bytes owned by the caller.
        unsafe { p.add(off).cast::<u64>().write_unaligned(tag ^ off as u64) };
        off += 4096;
    }
    // SAFETY: as above; the last 8 bytes of the block.
    unsafe { p.add(size - 8).cast::<u64>().write_unaligned(!tag) };
}

fn verify(p: *const u8, size: usize, tag: u64) {
    let mut off = 0;
    while off + 16 <= size {
        // SAFETY: inside a live block of `size` bytes owned by the caller.
        let v = unsafe { p.add(off).cast::<u64>().read_unaligned() };
        assert_eq!(v, tag ^ off as u64, "block {p:?} changed at {off}");
        off += 4096;
    }
    // SAFETY: as above.
    assert_eq!(
        unsafe { p.add(size - 8).cast::<u64>().read_unaligned() },
        !tag
    );
}

#[test]
fn lent_blocks_are_never_handed_out_twice_hold_their_size_and_keep_their_contents() {
    let _w = watchdog("lending stress", RUN * 15);
    let pool = LargePool::with_config(System, Config::new().cap(1 << 20));
    let live = Live {
        ranges: Mutex::new(BTreeMap::new()),
    };
    let handoff: Mutex<Vec<(usize, usize, u64)>> = Mutex::new(Vec::new());
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (pool, live, handoff) = (&pool, &live, &handoff);
            s.spawn(move || {
                let mut rng = Rng::new(t as u64 + 1);
                let mut mine: Vec<(usize, usize, u64)> = Vec::new();
                let mut tag = (t as u64) << 40;
                let free = |(p, size, tag): (usize, usize, u64)| {
                    verify(p as *const u8, size, tag);
                    live.remove(p);
                    // SAFETY: allocated from `pool` with this layout, freed once.
                    unsafe {
                        pool.dealloc(p as *mut u8, Layout::from_size_align(size, 8).unwrap())
                    };
                };
                let mut wave = 0u64;
                while start.elapsed() < RUN {
                    wave += 1;
                    // Large blocks first, then small ones that find the large ones free.
                    let (lo, hi) = if wave % 2 == 1 {
                        (512 << 10, 1 << 20)
                    } else {
                        (4 << 10, 64 << 10)
                    };
                    for _ in 0..8 {
                        let size = rng.range(lo, hi);
                        let l = Layout::from_size_align(size, 8).unwrap();
                        // SAFETY: non-zero size.
                        let p = unsafe { pool.alloc(l) };
                        assert!(!p.is_null());
                        assert!(pool.owns(p), "{size} not pooled");
                        assert!(
                            pool.usable_size(p).unwrap() >= size,
                            "block smaller than asked"
                        );
                        tag += 1;
                        live.add(p as usize, size, tag);
                        stamp(p, size, tag);
                        mine.push((p as usize, size, tag));
                    }
                    // Free everything: half here, half by whichever thread takes the hand-off.
                    for b in mine.drain(..) {
                        if rng.below(2) == 0 {
                            free(b);
                        } else {
                            handoff.lock().unwrap().push(b);
                        }
                    }
                    let theirs = std::mem::take(&mut *handoff.lock().unwrap());
                    for b in theirs {
                        free(b);
                    }
                }
            });
        }
    });
    for b in handoff.into_inner().unwrap() {
        verify(b.0 as *const u8, b.1, b.2);
        live.remove(b.0);
        // SAFETY: as above.
        unsafe { pool.dealloc(b.0 as *mut u8, Layout::from_size_align(b.1, 8).unwrap()) };
    }
    assert!(live.ranges.lock().unwrap().is_empty());
    assert_eq!(pool.stats().lost_bytes, 0);
}

#[test]
fn small_requests_after_large_frees_carve_nothing() {
    // One thread frees eight 1 MiB blocks; 4 KiB..64 KiB requests then take them, one each,
    // before anything new is carved.
    let pool = LargePool::with_config(System, Config::new().cap(1 << 20));
    let big = Layout::from_size_align(1 << 20, 8).unwrap();
    // SAFETY: non-zero sizes; each block freed once with its layout.
    unsafe {
        let bigs: Vec<_> = (0..8).map(|_| pool.alloc(big)).collect();
        for &p in &bigs {
            pool.dealloc(p, big);
        }
        let carved = pool.stats().carved_bytes;
        let mut rng = Rng::new(7);
        let smalls: Vec<_> = (0..8)
            .map(|_| {
                let l = Layout::from_size_align(rng.range(4 << 10, 64 << 10), 8).unwrap();
                (pool.alloc(l), l)
            })
            .collect();
        assert_eq!(
            pool.stats().carved_bytes,
            carved,
            "carved while 1 MiB blocks were free"
        );
        let mut got: Vec<_> = smalls.iter().map(|s| s.0).collect();
        let mut want = bigs.clone();
        got.sort();
        want.sort();
        assert_eq!(
            got, want,
            "every small request took one of the free large blocks"
        );
        for (p, l) in smalls {
            pool.dealloc(p, l);
        }
    }
}
