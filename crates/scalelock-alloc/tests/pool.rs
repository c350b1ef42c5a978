//! LargePool's promises, one test each.

mod common;

use common::{watchdog, Counting};
use scalelock_alloc::{Config, LargePool, PAGE};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

fn counting_pool(config: Config) -> LargePool<Counting> {
    LargePool::with_config(Counting::default(), config)
}

#[test]
fn sizes_outside_threshold_and_cap_and_big_alignments_go_to_the_backing_allocator() {
    let pool = counting_pool(Config::new().threshold(8 << 10).cap(1 << 20));
    let cases = [
        (100, 8),
        ((8 << 10) - 1, 8),
        ((1 << 20) + 1, 8),
        (64 << 10, 2 * PAGE),
    ];
    for (i, &(size, align)) in cases.iter().enumerate() {
        // SAFETY: non-zero sizes, freed with their layouts.
        unsafe {
            let p = pool.alloc(layout(size, align));
            assert!(!p.is_null());
            assert!(!pool.owns(p), "case {i}");
            assert_eq!(p as usize % align, 0);
            p.write_bytes(1, size);
            pool.dealloc(p, layout(size, align));
        }
        assert_eq!(pool.backing().get(), (i + 1, i + 1), "case {i}");
    }
    for size in [8 << 10, 100 << 10, 1 << 20] {
        // SAFETY: as above.
        unsafe {
            let p = pool.alloc(layout(size, 8));
            assert!(pool.owns(p), "size {size}");
            pool.dealloc(p, layout(size, 8));
        }
    }
    assert_eq!(pool.backing().get(), (cases.len(), cases.len()));
}

#[test]
fn pooled_blocks_are_page_aligned_distinct_and_hold_their_size() {
    let pool = LargePool::new();
    let mut blocks = Vec::new();
    for i in 0..200usize {
        let size = 4096 + (i * 37_813) % (4 << 20);
        let align = 1 << (i % 13);
        // SAFETY: non-zero size.
        let p = unsafe { pool.alloc(layout(size, align)) };
        assert!(pool.owns(p));
        assert_eq!(p as usize % PAGE, 0);
        // SAFETY: the block holds `size` bytes.
        unsafe {
            p.write_bytes(i as u8, size);
        }
        blocks.push((p, size, i as u8));
    }
    blocks.sort_by_key(|b| b.0 as usize);
    for w in blocks.windows(2) {
        assert!(w[0].0 as usize + w[0].1 <= w[1].0 as usize, "overlap");
    }
    for (p, size, v) in blocks {
        // SAFETY: live blocks written above, freed once.
        unsafe {
            assert_eq!(*p, v);
            assert_eq!(*p.add(size - 1), v);
            pool.dealloc(p, layout(size, 8));
        }
    }
}

#[test]
fn realloc_within_a_class_is_in_place_and_across_classes_keeps_contents() {
    let pool = LargePool::new();
    // SAFETY: non-zero sizes, each pointer used with the layout it currently has.
    unsafe {
        let p = pool.alloc(layout(40 << 10, 8)); // class of 40 KiB
        p.write_bytes(0xAB, 40 << 10);
        let q = pool.realloc(p, layout(40 << 10, 8), 38 << 10);
        assert_eq!(p, q, "shrink within the class");
        let q = pool.realloc(q, layout(38 << 10, 8), 40 << 10);
        assert_eq!(p, q, "grow within the class");
        let r = pool.realloc(q, layout(40 << 10, 8), 300 << 10);
        assert_ne!(r, q);
        assert!(pool.owns(r));
        assert!((0..40 << 10).all(|i| *r.add(i) == 0xAB));
        // Down to the backing allocator and back up.
        let s = pool.realloc(r, layout(300 << 10, 8), 1000);
        assert!(!pool.owns(s));
        assert!((0..1000).all(|i| *s.add(i) == 0xAB));
        let t = pool.realloc(s, layout(1000, 8), 20 << 10);
        assert!(pool.owns(t));
        assert!((0..1000).all(|i| *t.add(i) == 0xAB));
        // Above the cap: backing allocator.
        let u = pool.realloc(t, layout(20 << 10, 8), 5 << 20);
        assert!(!pool.owns(u));
        assert!((0..1000).all(|i| *u.add(i) == 0xAB));
        pool.dealloc(u, layout(5 << 20, 8));
    }
}

#[test]
fn alloc_zeroed_is_zero_after_reuse_of_dirty_blocks() {
    let pool = LargePool::new();
    let l = layout(24 << 10, 8);
    // SAFETY: non-zero sizes; blocks freed once.
    unsafe {
        let mut ps = Vec::new();
        for _ in 0..100 {
            let p = pool.alloc(l);
            p.write_bytes(0xFF, l.size());
            ps.push(p);
        }
        for p in ps.drain(..) {
            pool.dealloc(p, l);
        }
        for _ in 0..100 {
            let p = pool.alloc_zeroed(l);
            assert!((0..l.size()).all(|i| *p.add(i) == 0));
            p.write_bytes(0xEE, l.size());
            ps.push(p);
        }
        for p in ps {
            pool.dealloc(p, l);
        }
    }
}

#[test]
fn a_block_freed_by_another_thread_is_reused_without_carving_more() {
    let pool = LargePool::new();
    let l = layout(128 << 10, 8);
    let n = 64;
    let ptrs: Vec<usize> = (0..n)
        // SAFETY: non-zero size.
        .map(|_| unsafe { pool.alloc(l) } as usize)
        .collect();
    let carved = pool.stats().carved_bytes;
    std::thread::scope(|s| {
        s.spawn(|| {
            for &p in &ptrs {
                // SAFETY: allocated above, freed once, here.
                unsafe { pool.dealloc(p as *mut u8, l) };
            }
            pool.flush_thread_cache();
        });
    });
    for _ in 0..n {
        // SAFETY: non-zero size; leaked into the pool, freed with it.
        let p = unsafe { pool.alloc(l) };
        assert!(ptrs.contains(&(p as usize)), "not a recycled block");
    }
    assert_eq!(pool.stats().carved_bytes, carved);
}

#[test]
fn threads_that_exit_return_their_cached_blocks() {
    let pool: &'static LargePool = Box::leak(Box::new(LargePool::new()));
    let l = layout(64 << 10, 8);
    let t = std::thread::spawn(move || {
        // SAFETY: non-zero size; each block freed once.
        unsafe {
            let ps: Vec<_> = (0..10).map(|_| pool.alloc(l)).collect();
            for p in ps {
                pool.dealloc(p, l);
            }
        }
        assert_eq!(pool.stats().cached_bytes, 0, "still in the thread cache");
    });
    t.join().unwrap(); // pthread_join: TLS destructors have run.
    let s = pool.stats();
    // The 10 freed blocks and the fresh ones carved with them: all of it is back in the depot.
    assert!(s.carved_bytes >= 10 * (64 << 10), "{s:?}");
    assert_eq!(s.cached_bytes, s.carved_bytes, "{s:?}");
    let carved = s.carved_bytes;
    for _ in 0..10 {
        // SAFETY: non-zero size (leaked: the pool is leaked too).
        unsafe { pool.alloc(l) };
    }
    assert_eq!(pool.stats().carved_bytes, carved);
}

#[test]
fn out_of_memory_returns_null_and_never_aborts() {
    let pool = counting_pool(Config::new().cap(64 << 20).class_span(1 << 30));
    let l = layout(64 << 20, 8);
    let mut got = Vec::new();
    pool.backing().fail.store(true, Ordering::Relaxed);
    loop {
        // SAFETY: non-zero size.
        let p = unsafe { pool.alloc(l) };
        if p.is_null() {
            break;
        }
        got.push(p);
        assert!(got.len() <= 16, "a 1 GiB region holds 16 blocks of 64 MiB");
    }
    assert_eq!(got.len(), 16);
    // SAFETY: non-zero sizes.
    unsafe {
        assert!(pool.alloc_zeroed(l).is_null());
        assert!(pool.realloc(got[0], l, (64 << 20) + 1).is_null());
        // A failed realloc leaves the block alone.
        for p in got {
            pool.dealloc(p, l);
        }
        // Freed blocks are served again.
        let p = pool.alloc(l);
        assert!(pool.owns(p));
        pool.dealloc(p, l);
    }
}

#[test]
fn trim_gives_every_cached_block_back() {
    let pool = LargePool::new();
    let l = layout(256 << 10, 8);
    // SAFETY: non-zero size; each block freed once.
    unsafe {
        let ps: Vec<_> = (0..40).map(|_| pool.alloc(l)).collect();
        for &p in &ps {
            p.write_bytes(1, l.size());
        }
        for p in ps {
            pool.dealloc(p, l);
        }
    }
    pool.trim();
    let s = pool.stats();
    assert_eq!(s.cached_bytes, 0, "{s:?}");
    assert_eq!(s.purged_bytes, 40 * (256 << 10), "{s:?}");
    assert_eq!(s.clean_bytes, 40 * (256 << 10), "{s:?}");
    // Purged blocks come back zero and are known zero.
    // SAFETY: non-zero size.
    unsafe {
        let p = pool.alloc_zeroed(l);
        assert!((0..l.size()).all(|i| *p.add(i) == 0));
        pool.dealloc(p, l);
    }
}

/// Allocates 64 blocks of 512 KiB, frees them all and flushes this thread's cache: 32 MiB in
/// the depot.
fn free_a_32_mib_burst<A: GlobalAlloc>(pool: &LargePool<A>) {
    let l = layout(512 << 10, 8);
    // SAFETY: non-zero size; each block freed once.
    unsafe {
        let ps: Vec<_> = (0..64).map(|_| pool.alloc(l)).collect();
        for p in ps {
            pool.dealloc(p, l);
        }
    }
    pool.flush_thread_cache();
    assert_eq!(pool.stats().cached_bytes, 32 << 20);
}

/// Keeps the pool busy with another class (its operations drive decay) until its depot holds
/// at most `limit` bytes; fails with `what` after 10 s.
fn drive_decay_until<A: GlobalAlloc>(pool: &LargePool<A>, limit: usize, what: &str) {
    let start = Instant::now();
    let small = layout(8 << 10, 8);
    while pool.stats().cached_bytes > limit {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: {:?}",
            pool.stats()
        );
        for _ in 0..2048 {
            // SAFETY: non-zero size; freed at once.
            unsafe { pool.dealloc(pool.alloc(small), small) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn memory_beyond_retain_decays_after_the_decay_time() {
    let pool = LargePool::with_config(
        std::alloc::System,
        Config::new().retain_bytes(2 << 20).decay_ms(60),
    );
    let _w = watchdog("decay", Duration::from_secs(30));
    free_a_32_mib_burst(&pool);
    let start = Instant::now();
    drive_decay_until(&pool, 2 << 20, "no decay");
    let s = pool.stats();
    // Never before half the decay time (less the coarse clock's 4 ms tick).
    assert!(
        start.elapsed() >= Duration::from_millis(25),
        "decayed before its time"
    );
    assert!(
        s.cached_bytes <= 2 << 20 && s.purged_bytes >= 30 << 20,
        "{s:?}"
    );
}

#[test]
fn the_depot_retains_at_most_a_thread_cache_per_thread_using_the_pool() {
    // Default retain (64 MiB), one thread: a freed 32 MiB burst decays down to one thread
    // cache's budget, not to the configured retain.
    let budget = Config::new().thread_cache_bytes;
    let pool = LargePool::with_config(std::alloc::System, Config::new().decay_ms(60));
    assert!(pool.config().retain_bytes >= 32 << 20);
    let _w = watchdog("retain per thread", Duration::from_secs(30));
    free_a_32_mib_burst(&pool);
    drive_decay_until(&pool, budget, "kept beyond one thread cache");
    assert!(pool.stats().purged_bytes >= (31 << 20) as u64);
}

#[test]
fn a_pool_dropped_while_other_threads_cache_for_it_stays_mapped_until_they_flush() {
    let pool = Box::new(LargePool::new());
    let l = layout(32 << 10, 8);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let p: &'static LargePool = Box::leak(pool);
    let addr = p as *const LargePool as usize;
    let t = std::thread::spawn(move || {
        // SAFETY: the pool outlives this use (it is dropped only after `done`).
        let pool = unsafe { &*(addr as *const LargePool) };
        // SAFETY: non-zero size; freed once.
        unsafe { pool.dealloc(pool.alloc(l), l) };
        done_tx.send(()).unwrap();
        rx.recv().unwrap();
        // The cache still holds the block; the thread exits and flushes after the drop.
    });
    done_rx.recv().unwrap();
    // SAFETY: leaked above, dropped once; the thread no longer touches the pool object.
    drop(unsafe { Box::from_raw(addr as *mut LargePool) });
    tx.send(()).unwrap();
    t.join().unwrap();
}

#[test]
fn more_pools_than_cache_slots_work_in_one_thread() {
    let pools: Vec<LargePool> = (0..7).map(|_| LargePool::new()).collect();
    let l = layout(16 << 10, 8);
    let mut live = Vec::new();
    for round in 0..50 {
        for (i, pool) in pools.iter().enumerate() {
            // SAFETY: non-zero size.
            let p = unsafe { pool.alloc(l) };
            assert!(pool.owns(p));
            // SAFETY: block of 16 KiB.
            unsafe { p.write_bytes((round + i) as u8, l.size()) };
            live.push((i, p, (round + i) as u8));
        }
        if round % 3 == 2 {
            for (i, p, v) in live.drain(..) {
                // SAFETY: live block of pool i, freed once.
                unsafe {
                    assert_eq!(*p.add(l.size() - 1), v);
                    pools[i].dealloc(p, l);
                }
            }
        }
    }
    for (i, p, _) in live {
        // SAFETY: as above.
        unsafe { pools[i].dealloc(p, l) };
    }
}

#[test]
fn a_thread_returns_blocks_of_a_class_it_stopped_using() {
    let pool = LargePool::with_config(
        std::alloc::System,
        Config::new().decay_ms(60_000).thread_cache_bytes(4 << 20),
    );
    let big = layout(256 << 10, 8);
    let small = layout(8 << 10, 8);
    // SAFETY: non-zero sizes; each block freed once.
    unsafe {
        // The small class gets a free block of its own (else a free big block is lent to it).
        let s0 = pool.alloc(small);
        let ps: Vec<_> = (0..6).map(|_| pool.alloc(big)).collect();
        for p in ps {
            pool.dealloc(p, big);
        }
        pool.dealloc(s0, small);
        assert_eq!(
            pool.stats().cached_bytes,
            0,
            "blocks stay in the thread cache at first"
        );
        for _ in 0..3000 {
            pool.dealloc(pool.alloc(small), small);
        }
    }
    let s = pool.stats();
    assert!(
        s.cached_bytes >= 6 * (256 << 10),
        "idle class not flushed: {s:?}"
    );
}

#[test]
fn a_thread_caches_no_more_than_its_budget() {
    let budget = 1 << 20;
    let pool = LargePool::with_config(std::alloc::System, Config::new().thread_cache_bytes(budget));
    // SAFETY: non-zero sizes; each block freed once.
    unsafe {
        for size in [16 << 10, 64 << 10, 200 << 10, 700 << 10] {
            let l = layout(size, 8);
            let ps: Vec<_> = (0..40).map(|_| pool.alloc(l)).collect();
            for p in ps {
                pool.dealloc(p, l);
            }
        }
    }
    // Everything is free: what the depot does not hold is in this thread's cache.
    let s = pool.stats();
    let in_cache = s.carved_bytes - s.cached_bytes - s.clean_bytes;
    // One magazine (at most 1 MiB) may come on top of the budget between two frees.
    assert!(
        in_cache <= budget + (1 << 20),
        "thread cache holds {in_cache} bytes: {s:?}"
    );
    assert!(s.cached_bytes > 0, "{s:?}");
}

#[test]
fn an_impossible_reservation_leaves_everything_to_the_backing_allocator() {
    let pool = counting_pool(Config::new().class_span(1 << 62));
    let l = layout(64 << 10, 8);
    // SAFETY: non-zero size; freed once.
    unsafe {
        let p = pool.alloc(l);
        assert!(!p.is_null());
        assert!(!pool.owns(p));
        pool.dealloc(p, l);
    }
    assert_eq!(pool.backing().get(), (1, 1));
}

#[test]
fn an_empty_class_takes_a_free_block_of_any_larger_class_before_carving() {
    let pool = LargePool::new();
    let big = layout(4 << 20, 8);
    let tiny = layout(16 << 10, 8);
    // SAFETY: non-zero sizes; each block freed once with the layout it was allocated with.
    unsafe {
        let p = pool.alloc(big);
        let big_class = pool.usable_size(p).unwrap();
        p.write_bytes(9, big.size());
        pool.dealloc(p, big);
        let carved = pool.stats().carved_bytes;
        let q = pool.alloc(tiny);
        assert_eq!(q, p, "the free 4 MiB block serves a 16 KiB request");
        assert_eq!(pool.stats().carved_bytes, carved, "nothing carved");
        assert_eq!(
            pool.usable_size(q),
            Some(big_class),
            "the block keeps its class"
        );
        q.write_bytes(3, tiny.size());
        // A realloc far below the block's size moves it, contents kept.
        let r = pool.realloc(q, tiny, 20 << 10);
        assert_ne!(r, q, "a 4 MiB block is not kept for 20 KiB");
        assert!((0..tiny.size()).all(|i| *r.add(i) == 3), "contents lost");
        let again = pool.alloc(big);
        assert_eq!(again, p, "freed back into its own class");
        pool.dealloc(again, big);
        pool.dealloc(r, layout(20 << 10, 8));
    }
}

#[test]
fn an_empty_class_takes_the_closest_larger_free_block() {
    // One thread frees a 1 MiB and a 640 KiB block into its cache, another frees a 400 KiB one
    // into the depot: a 300 KiB request takes the closest (400 KiB), wherever it is, then the
    // next closest; nothing is carved.
    let pool = LargePool::new();
    let sizes = [1 << 20, 600 << 10];
    // SAFETY: non-zero sizes; each block freed once with the layout it was allocated with.
    unsafe {
        let far = std::thread::scope(|s| {
            s.spawn(|| {
                let l = layout(400 << 10, 8);
                let p = pool.alloc(l);
                pool.dealloc(p, l);
                pool.flush_thread_cache();
                p as usize
            })
            .join()
            .unwrap()
        }) as *mut u8;
        let blocks: Vec<*mut u8> = sizes.iter().map(|&n| pool.alloc(layout(n, 8))).collect();
        for (&p, &n) in blocks.iter().zip(&sizes) {
            pool.dealloc(p, layout(n, 8));
        }
        let carved = pool.stats().carved_bytes;
        let want = layout(300 << 10, 8);
        let a = pool.alloc(want);
        let b = pool.alloc(want);
        let c = pool.alloc(want);
        assert_eq!(
            (a, b, c),
            (far, blocks[1], blocks[0]),
            "closest class first"
        );
        assert_eq!(pool.stats().carved_bytes, carved, "nothing carved");
        for p in [a, b, c] {
            pool.dealloc(p, want);
        }
    }
}
