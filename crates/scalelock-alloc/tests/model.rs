//! Random operation sequences against a model, with many threads and cross-thread frees.
//!
//! Every live block carries a pattern derived from a unique tag (head, tail, and the first bytes
//! of every page); each thread checks it on every free and realloc, so two live blocks that
//! overlap, a block handed out twice, or a realloc that loses data fails the test. Zeroed
//! allocations are checked for zero. At the end, with every block freed and every thread gone,
//! the pool must hold exactly what it carved: nothing leaked, nothing freed twice.

mod common;

use common::{watchdog, Rng};
use scalelock_alloc::{Config, LargePool};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
struct Block {
    ptr: usize,
    size: usize,
    align: usize,
    tag: u64,
}

fn byte_at(tag: u64, off: usize) -> u8 {
    (tag.wrapping_mul(0x9E37_79B9)
        .wrapping_add((off >> 12) as u64)
        ^ (off as u64 & 0xFF)) as u8
}

/// The offsets a block's pattern covers below `size`.
fn offsets(size: usize, mut f: impl FnMut(usize)) {
    for o in 0..size.min(16) {
        f(o);
    }
    for o in size.saturating_sub(16).max(16)..size {
        f(o);
    }
    let mut page = 4096;
    while page < size {
        for o in page..(page + 8).min(size) {
            f(o);
        }
        page += 4096;
    }
}

fn stamp(b: &Block) {
    let p = b.ptr as *mut u8;
    // SAFETY: `p` is a live block of `b.size` bytes owned by the caller.
    offsets(b.size, |o| unsafe { *p.add(o) = byte_at(b.tag, o) });
}

fn check(b: &Block, upto: usize, what: &str) {
    let p = b.ptr as *const u8;
    offsets(b.size, |o| {
        if o < upto {
            // SAFETY: live block of at least `upto` bytes.
            let v = unsafe { *p.add(o) };
            assert_eq!(
                v,
                byte_at(b.tag, o),
                "{what}: block {:#x} size {} offset {o}",
                b.ptr,
                b.size
            );
        }
    });
}

fn check_zero(p: *const u8, size: usize) {
    let step = if size <= 64 << 10 { 1 } else { 61 };
    let mut o = 0;
    while o < size {
        // SAFETY: `p` holds `size` bytes.
        assert_eq!(
            unsafe { *p.add(o) },
            0,
            "alloc_zeroed: offset {o} of {size}"
        );
        o += step;
    }
    // SAFETY: as above.
    assert_eq!(unsafe { *p.add(size - 1) }, 0);
}

fn random_size(rng: &mut Rng) -> usize {
    match rng.below(100) {
        0..=14 => rng.range(16, 4095),
        15..=89 => {
            let bits = rng.range(12, 19); // 4 KiB .. 1 MiB, log-uniform
            rng.range(1 << bits, (2 << bits) - 1)
        }
        90..=97 => rng.range(1 << 20, 4 << 20),
        _ => rng.range((4 << 20) + 1, 6 << 20),
    }
}

fn random_align(rng: &mut Rng) -> usize {
    match rng.below(20) {
        0 => 8192,
        1 => 16384,
        n => 1 << (3 + n % 10), // 8 .. 4096
    }
}

static TAGS: AtomicU64 = AtomicU64::new(1);
static OPS: AtomicUsize = AtomicUsize::new(0);

fn run(pool: &LargePool<System>, threads: usize, ops_per_thread: usize, deadline: Duration) {
    let mailbox: Mutex<Vec<Block>> = Mutex::new(Vec::new());
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let mailbox = &mailbox;
            s.spawn(move || {
                let mut rng = Rng::new(t as u64 + 1);
                let mut live: Vec<Block> = Vec::new();
                let free = |b: Block| {
                    check(&b, b.size, "free");
                    let l = Layout::from_size_align(b.size, b.align).unwrap();
                    // SAFETY: live block allocated with `l`, freed once.
                    unsafe { pool.dealloc(b.ptr as *mut u8, l) };
                };
                for _ in 0..ops_per_thread {
                    if start.elapsed() > deadline {
                        break;
                    }
                    OPS.fetch_add(1, Ordering::Relaxed);
                    match rng.below(10) {
                        0..=3 if live.len() < 24 => {
                            let size = random_size(&mut rng);
                            let align = random_align(&mut rng);
                            let l = Layout::from_size_align(size, align).unwrap();
                            let zeroed = rng.below(4) == 0;
                            // SAFETY: non-zero size.
                            let p = unsafe {
                                if zeroed {
                                    pool.alloc_zeroed(l)
                                } else {
                                    pool.alloc(l)
                                }
                            };
                            assert!(!p.is_null(), "alloc {size} returned null");
                            assert_eq!(p as usize % align, 0, "alignment {align}");
                            if zeroed {
                                check_zero(p, size);
                            }
                            let b = Block {
                                ptr: p as usize,
                                size,
                                align,
                                tag: TAGS.fetch_add(1, Ordering::Relaxed),
                            };
                            stamp(&b);
                            live.push(b);
                        }
                        4 | 5 if !live.is_empty() => {
                            let i = rng.below(live.len() as u64) as usize;
                            free(live.swap_remove(i));
                        }
                        6 if !live.is_empty() => {
                            let i = rng.below(live.len() as u64) as usize;
                            let b = live[i];
                            check(&b, b.size, "before realloc");
                            let new_size = if rng.below(2) == 0 {
                                random_size(&mut rng)
                            } else {
                                // Near the old size: often the same class.
                                (b.size as i64 + rng.range(0, 8192) as i64 - 4096).max(16) as usize
                            };
                            let l = Layout::from_size_align(b.size, b.align).unwrap();
                            // SAFETY: live block with layout `l`; the new size is non-zero.
                            let q = unsafe { pool.realloc(b.ptr as *mut u8, l, new_size) };
                            assert!(!q.is_null(), "realloc returned null");
                            assert_eq!(q as usize % b.align, 0);
                            // The old pattern, up to the smaller size, at the new address.
                            let moved = Block {
                                ptr: q as usize,
                                ..b
                            };
                            check(&moved, b.size.min(new_size), "realloc kept contents");
                            let nb = Block {
                                ptr: q as usize,
                                size: new_size,
                                tag: TAGS.fetch_add(1, Ordering::Relaxed),
                                ..b
                            };
                            stamp(&nb);
                            live[i] = nb;
                        }
                        7 | 8 if !live.is_empty() => {
                            // Hand a block to whichever thread looks next.
                            let b = live.swap_remove(rng.below(live.len() as u64) as usize);
                            mailbox.lock().unwrap().push(b);
                        }
                        _ => {
                            let got = mailbox.lock().unwrap().pop();
                            if let Some(b) = got {
                                if rng.below(2) == 0 {
                                    free(b);
                                } else {
                                    check(&b, b.size, "received");
                                    live.push(b);
                                }
                            }
                        }
                    }
                }
                for b in live {
                    free(b);
                }
            });
        }
    });
    for b in mailbox.into_inner().unwrap() {
        check(&b, b.size, "mailbox");
        let l = Layout::from_size_align(b.size, b.align).unwrap();
        // SAFETY: live block, freed once.
        unsafe { pool.dealloc(b.ptr as *mut u8, l) };
    }
}

#[test]
fn random_operations_with_64_threads_match_the_model_and_leak_nothing() {
    let _w = watchdog("model test", Duration::from_secs(120));
    // Leaked so that exiting threads' caches can flush into it after the scope ends.
    let pool: &'static LargePool = Box::leak(Box::new(LargePool::with_config(
        System,
        Config::new().retain_bytes(16 << 20).decay_ms(20),
    )));
    let t0 = Instant::now();
    run(pool, 64, 1500, Duration::from_secs(8));
    // Threads are joined; their TLS destructors may still be running: wait for the counts to
    // settle (bounded).
    pool.flush_thread_cache();
    let settle = Instant::now();
    loop {
        let s = pool.stats();
        if s.cached_bytes + s.clean_bytes == s.carved_bytes {
            break;
        }
        assert!(
            s.cached_bytes + s.clean_bytes < s.carved_bytes,
            "more free bytes than carved: a block was freed twice: {s:?}"
        );
        assert!(
            settle.elapsed() < Duration::from_secs(5),
            "blocks leaked: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = pool.stats();
    assert_eq!(s.lost_bytes, 0);
    eprintln!(
        "{} ops in {:?}; {s:?}",
        OPS.load(Ordering::Relaxed),
        t0.elapsed()
    );
}
