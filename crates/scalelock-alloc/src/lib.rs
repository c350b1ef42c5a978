//! # scalelock-alloc
//!
//! [`LargePool`]: a [`GlobalAlloc`] for allocations from a page (4 KiB) to a few MiB, with
//! lock-free, RMW-free per-thread fast paths. Everything else goes to a backing allocator
//! (`System` by default).
//!
//! MySQL on OSv stalled on its large-`malloc` path, one global sleeping mutex; glibc answers
//! 128 KiB and up with `mmap`/`munmap` pairs and fresh page faults; jemalloc caches 32 KiB per
//! thread, tcmalloc sends anything over 256 KiB to one locked page heap. This pool is built for
//! exactly that range.
//!
//! # Design
//!
//! ```text
//!   alloc(size)                                  free(p)
//!     | size < threshold, > cap, align > 4096       | p outside the reservation
//!     +-------------> backing allocator <-----------+
//!     v                                             v
//!   class = class_of(size)                       class = (p - regions) >> span_shift
//!     |                                             |
//!   thread cache: magazines[class] (no lock, no atomic RMW)      <- hot path
//!     | empty / full
//!   depot[class]: lock-free tagged stacks of whole magazines     <- one CAS per magazine
//!     | nothing cached
//!   the closest larger class, thread cache then depot            <- already resident
//!     | nothing there either
//!   region[class]: bump pointer in a reserved range, committed in 4 MiB steps
//!     | region exhausted or commit refused
//!   backing allocator (null if it fails too: never an abort)
//! ```
//!
//! - Size classes: every page count up to 16 KiB, then four per power of two (at most 25 %
//!   waste); every block is page-aligned.
//! - One `mmap(PROT_NONE, MAP_NORESERVE)` reservation per pool holds its metadata and one region
//!   per class, so ownership is an address comparison and a block needs no header.
//! - A free from another thread goes into the freeing thread's cache: as cheap as a local one.
//! - When neither the thread cache nor the depot holds a block of the requested class, a free
//!   block of the closest larger class that has one, however much larger, is lent before new
//!   memory is carved: lending makes nothing resident, carving does. New memory is carved only
//!   when no free block of the pool is large enough, so the footprint follows the peak of all
//!   classes together rather than the sum of each class's own peak.
//! - `realloc` to a size of the block's class, or down to a quarter of its size, returns the
//!   same pointer (further down it moves, so that a large block serves a large request again); `alloc_zeroed` skips the memset when the block is known zero
//!   (fresh, or purged).
//! - Several pools can live in one process (each thread caches for up to four at a time); a
//!   dropped pool stays mapped until the last thread caching for it has flushed.
//!
//! # Footprint
//!
//! What the pool keeps resident beyond the blocks the program holds, and when it gives it back:
//!
//! - **A thread cache** holds at most [`Config::thread_cache_bytes`] (default 1 MiB) of free
//!   blocks per pool, all classes together, plus at most one block between two frees. A class
//!   the thread has not used in 1024 of its pool operations goes back to the depot, and
//!   everything goes back when the thread exits.
//! - **The depot** holds what thread caches return. Its free bytes beyond
//!   [`Config::retain_bytes`] (default 64 MiB), or beyond one thread cache's budget per thread
//!   using the pool if that is less (a single thread keeps 1 MiB), that nobody takes for half of
//!   [`Config::decay_ms`] (default 1 s) are given back to the OS (`madvise(MADV_DONTNEED)`):
//!   a block reaching the depot at time t is back before t + `decay_ms` (three quarters of it,
//!   plus the time to the next decay check), as long as some thread uses the pool meanwhile —
//!   each thread checks the clock every 4 of its pool operations, and when it exits. A process
//!   whose threads all stopped using the pool keeps the depot until the next use or
//!   [`LargePool::trim`], which gives back everything the depot holds at once.
//! - **Rounding and lending**: a block is at most 25% larger than the request above four pages;
//!   pages of it the program never writes are not resident. A free block lent to a smaller
//!   request (any larger class, when the request's own class has none free) keeps the pages an
//!   earlier, larger use wrote, as does a block reused for a smaller request of its own class:
//!   those pages were resident while the block was free, and lending adds none. The pool's
//!   resident memory beyond the blocks the program holds is thus the free blocks carved for
//!   earlier peaks that no request has since fitted, plus what an earlier use left in a block
//!   in use; it grows only when a request finds no free block of its size or larger.
//! - **Address space**: one `PROT_NONE` reservation (16 GiB per class by default) costs no
//!   memory; only what is carved is committed, in 4 MiB steps per class.
//!
//! The crate's `footprint` test holds the pool to this: a burst of 1 GiB of 1 MiB blocks, freed
//! by another thread, is back under a tenth of the peak within the decay time.
//!
//! See the comments at the top of `depot.rs` and `cache.rs` for the structures and their states.
//!
//! ```
//! use scalelock_alloc::LargePool;
//! use std::alloc::{GlobalAlloc, Layout};
//!
//! static POOL: LargePool = LargePool::new();
//! let layout = Layout::from_size_align(64 << 10, 8).unwrap();
//! // SAFETY: non-zero size; freed with the same layout.
//! unsafe {
//!     let p = POOL.alloc(layout);
//!     assert!(POOL.owns(p));
//!     p.write_bytes(7, layout.size());
//!     POOL.dealloc(p, layout);
//! }
//! ```
#![warn(missing_docs)]

mod cache;
mod class;
mod depot;
mod os;

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

pub use class::{MAX_CAP, PAGE};
use depot::Inner;
pub use depot::Stats;

/// Settings of a [`LargePool`]. Start from [`Config::new`] and change what you need.
///
/// ```
/// use scalelock_alloc::Config;
///
/// let c = Config::new().threshold(16 << 10).cap(1 << 20).retain_bytes(0).decay_ms(100);
/// assert_eq!(c.threshold, 16 << 10);
/// assert_eq!(Config::new().cap, 4 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Smallest size served by the pool (default 4 KiB; rounded up to a page).
    pub threshold: usize,
    /// Largest size served by the pool (default 4 MiB; at most [`MAX_CAP`]).
    pub cap: usize,
    /// Freed bytes the depot keeps resident indefinitely (default 64 MiB), but never more than
    /// [`Config::thread_cache_bytes`] per thread using the pool.
    pub retain_bytes: usize,
    /// Freed bytes beyond `retain_bytes` that stay unused in the depot for half this time are
    /// purged, at the latest this long after they reached the depot (default 1000 ms; see the
    /// crate docs' Footprint section).
    pub decay_ms: u64,
    /// Address space reserved per size class (default 16 GiB; a power of two, at least 1 GiB).
    /// A class whose region is full forwards to the backing allocator.
    pub class_span: usize,
    /// Bytes of free blocks one thread may keep in its cache, all classes together (default
    /// 1 MiB). Beyond it, a free sends the class's magazines to the depot. Bounds the memory
    /// idle threads hold: a server with 500 threads caches at most 500 MiB.
    pub thread_cache_bytes: usize,
}

impl Config {
    /// The defaults: 4 KiB to 4 MiB, 64 MiB retained, 1 s decay, 16 GiB per class, 1 MiB per
    /// thread cache.
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().threshold, 4096);
    /// ```
    pub const fn new() -> Config {
        Config {
            threshold: 4 << 10,
            cap: 4 << 20,
            retain_bytes: 64 << 20,
            decay_ms: 1000,
            class_span: 16 << 30,
            thread_cache_bytes: 1 << 20,
        }
    }

    /// Sets [`Config::threshold`].
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().threshold(8192).threshold, 8192);
    /// ```
    pub const fn threshold(mut self, bytes: usize) -> Config {
        self.threshold = bytes;
        self
    }

    /// Sets [`Config::cap`].
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().cap(1 << 20).cap, 1 << 20);
    /// ```
    pub const fn cap(mut self, bytes: usize) -> Config {
        self.cap = bytes;
        self
    }

    /// Sets [`Config::retain_bytes`].
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().retain_bytes(0).retain_bytes, 0);
    /// ```
    pub const fn retain_bytes(mut self, bytes: usize) -> Config {
        self.retain_bytes = bytes;
        self
    }

    /// Sets [`Config::decay_ms`].
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().decay_ms(10).decay_ms, 10);
    /// ```
    pub const fn decay_ms(mut self, ms: u64) -> Config {
        self.decay_ms = ms;
        self
    }

    /// Sets [`Config::thread_cache_bytes`].
    ///
    /// ```
    /// let c = scalelock_alloc::Config::new().thread_cache_bytes(1 << 20);
    /// assert_eq!(c.thread_cache_bytes, 1 << 20);
    /// ```
    pub const fn thread_cache_bytes(mut self, bytes: usize) -> Config {
        self.thread_cache_bytes = bytes;
        self
    }

    /// Sets [`Config::class_span`].
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::Config::new().class_span(1 << 30).class_span, 1 << 30);
    /// ```
    pub const fn class_span(mut self, bytes: usize) -> Config {
        self.class_span = bytes;
        self
    }

    /// The settings actually used: threshold a page multiple of at least a page, cap between
    /// threshold and [`MAX_CAP`], span a power of two of at least 1 GiB and 4 blocks.
    ///
    /// ```
    /// use scalelock_alloc::Config;
    /// let c = Config::new().threshold(100).cap(1 << 40).class_span(3).normalized();
    /// assert_eq!((c.threshold, c.cap, c.class_span), (4096, 64 << 20, 1 << 30));
    /// ```
    pub const fn normalized(mut self) -> Config {
        let t = if self.threshold < PAGE {
            PAGE
        } else {
            self.threshold
        };
        let t = if t > MAX_CAP { MAX_CAP } else { t };
        self.threshold = t.div_ceil(PAGE) * PAGE;
        if self.cap > MAX_CAP {
            self.cap = MAX_CAP;
        }
        if self.cap < self.threshold {
            self.cap = self.threshold;
        }
        let min_span = if 4 * MAX_CAP > (1 << 30) {
            4 * MAX_CAP
        } else {
            1 << 30
        };
        let s = if self.class_span < min_span {
            min_span
        } else {
            self.class_span
        };
        self.class_span = match s.checked_next_power_of_two() {
            Some(p) => p,
            None => min_span,
        };
        self
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}

/// A [`GlobalAlloc`] serving `threshold..=cap` bytes (alignment up to [`PAGE`]) from per-thread
/// magazines over a lock-free depot, and everything else from the backing allocator `A`.
///
/// Construction is `const` and maps nothing; the reservation is made on the first pooled
/// allocation. Use it as the global allocator, or as an explicit instance:
///
/// ```
/// use scalelock_alloc::{Config, LargePool};
/// use std::alloc::{GlobalAlloc, Layout, System};
///
/// let pool = LargePool::with_config(System, Config::new().cap(1 << 20));
/// let l = Layout::from_size_align(200 << 10, 4096).unwrap();
/// // SAFETY: non-zero sizes; each pointer freed once with its layout.
/// unsafe {
///     let p = pool.alloc_zeroed(l);
///     assert_eq!(*p.add(1000), 0);
///     assert_eq!(p as usize % 4096, 0);
///     let q = pool.realloc(p, l, 210 << 10); // same class: in place
///     assert_eq!(p, q);
///     pool.dealloc(q, Layout::from_size_align(210 << 10, 4096).unwrap());
/// }
/// ```
///
/// For the global allocator:
///
/// ```no_run
/// #[global_allocator]
/// static GLOBAL: scalelock_alloc::LargePool = scalelock_alloc::LargePool::new();
/// ```
pub struct LargePool<A: GlobalAlloc = System> {
    backing: A,
    config: Config,
    inner: AtomicPtr<Inner>,
    failed: AtomicBool,
}

impl LargePool<System> {
    /// A pool with the default [`Config`] over the system allocator.
    ///
    /// ```
    /// static POOL: scalelock_alloc::LargePool = scalelock_alloc::LargePool::new();
    /// ```
    pub const fn new() -> LargePool<System> {
        LargePool::with_config(System, Config::new())
    }
}

impl Default for LargePool<System> {
    fn default() -> Self {
        LargePool::new()
    }
}

impl<A: GlobalAlloc> LargePool<A> {
    /// A pool with the given settings (normalised, see [`Config::normalized`]) over `backing`.
    ///
    /// ```
    /// use scalelock_alloc::{Config, LargePool};
    /// let pool = LargePool::with_config(std::alloc::System, Config::new().threshold(64 << 10));
    /// assert_eq!(pool.config().threshold, 64 << 10);
    /// ```
    pub const fn with_config(backing: A, config: Config) -> LargePool<A> {
        LargePool {
            backing,
            config: config.normalized(),
            inner: AtomicPtr::new(ptr::null_mut()),
            failed: AtomicBool::new(false),
        }
    }

    /// The settings in use.
    ///
    /// ```
    /// assert_eq!(scalelock_alloc::LargePool::new().config().cap, 4 << 20);
    /// ```
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The backing allocator.
    ///
    /// ```
    /// let _sys: &std::alloc::System = scalelock_alloc::LargePool::new().backing();
    /// ```
    pub fn backing(&self) -> &A {
        &self.backing
    }

    /// Does this pool (rather than the backing allocator) own `p`? An address comparison.
    ///
    /// ```
    /// use scalelock_alloc::LargePool;
    /// use std::alloc::{GlobalAlloc, Layout};
    /// let pool = LargePool::new();
    /// let small = Layout::from_size_align(64, 8).unwrap();
    /// // SAFETY: non-zero size, freed with its layout.
    /// unsafe {
    ///     let p = pool.alloc(small);
    ///     assert!(!pool.owns(p));
    ///     pool.dealloc(p, small);
    /// }
    /// ```
    #[inline]
    pub fn owns(&self, p: *const u8) -> bool {
        match self.inner_if_ready() {
            Some(inner) => inner.owns(p),
            None => false,
        }
    }

    /// The usable size of a pool block (its class size, at least the size requested), or `None`
    /// when the pool does not own `p`. A C `malloc_usable_size` for pooled pointers.
    ///
    /// ```
    /// use scalelock_alloc::LargePool;
    /// use std::alloc::{GlobalAlloc, Layout};
    /// let pool = LargePool::new();
    /// let l = Layout::from_size_align(17 << 10, 8).unwrap();
    /// // SAFETY: non-zero size; freed once.
    /// unsafe {
    ///     let p = pool.alloc(l);
    ///     assert_eq!(pool.usable_size(p), Some(20 << 10)); // the 20 KiB class
    ///     pool.dealloc(p, l);
    /// }
    /// assert_eq!(pool.usable_size(std::ptr::null()), None);
    /// ```
    #[inline]
    pub fn usable_size(&self, p: *const u8) -> Option<usize> {
        let inner = self.inner_if_ready()?;
        inner
            .owns(p)
            .then(|| class::class_size(inner.class_of_ptr(p)))
    }

    /// Counters of the pool (all zero before its first pooled allocation).
    ///
    /// ```
    /// let pool = scalelock_alloc::LargePool::new();
    /// assert_eq!(pool.stats().carved_bytes, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        match self.inner_if_ready() {
            Some(inner) => inner.stats(),
            None => Stats::default(),
        }
    }

    /// Returns the calling thread's cached blocks to the depot. Threads do this themselves when
    /// they exit.
    ///
    /// ```
    /// let pool = scalelock_alloc::LargePool::new();
    /// pool.flush_thread_cache();
    /// ```
    pub fn flush_thread_cache(&self) {
        if let Some(inner) = self.inner_if_ready() {
            cache::flush(inner);
        }
    }

    /// Flushes the calling thread's cache and gives every freed block in the depot back to the
    /// OS now, without waiting for decay. Other threads' caches are untouched.
    ///
    /// ```
    /// let pool = scalelock_alloc::LargePool::new();
    /// pool.trim();
    /// assert_eq!(pool.stats().cached_bytes, 0);
    /// ```
    pub fn trim(&self) {
        if let Some(inner) = self.inner_if_ready() {
            cache::flush(inner);
            inner.trim();
        }
    }

    #[inline]
    fn serves(&self, size: usize, align: usize) -> bool {
        size >= self.config.threshold && size <= self.config.cap && align <= PAGE
    }

    #[inline]
    fn inner_if_ready(&self) -> Option<&Inner> {
        let p = self.inner.load(Ordering::Acquire);
        // SAFETY: a non-null `inner` was published by `init` and is kept mapped by the
        // reference this pool holds until it is dropped.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    #[inline]
    fn inner(&self) -> Option<&Inner> {
        match self.inner_if_ready() {
            Some(i) => Some(i),
            None => self.init(),
        }
    }

    #[cold]
    fn init(&self) -> Option<&Inner> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        let c = &self.config;
        let new = Inner::create(&depot::Layout {
            threshold: c.threshold,
            cap: c.cap,
            span: c.class_span,
            retain: c.retain_bytes,
            decay_ns: c.decay_ms.saturating_mul(1_000_000),
            thread_cache: c.thread_cache_bytes,
        }) as *mut Inner;
        if new.is_null() {
            self.failed.store(true, Ordering::Relaxed);
            return None;
        }
        // Release: the header written by `create` is visible to whoever loads the pointer.
        match self
            .inner
            .compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: just published; this pool holds its reference.
            Ok(_) => Some(unsafe { &*new }),
            Err(existing) => {
                // SAFETY: ours alone, never published.
                unsafe { Inner::release(new) };
                // SAFETY: published by the winner, kept alive by this pool.
                Some(unsafe { &*existing })
            }
        }
    }

    /// A pooled block of `size` bytes: `(block, known_zero)`, or null.
    #[inline]
    fn pool_alloc(&self, size: usize) -> (*mut u8, bool) {
        match self.inner() {
            Some(inner) => cache::alloc(inner, class::class_of(size)),
            None => (ptr::null_mut(), false),
        }
    }
}

// SAFETY: every pointer handed out is either a pool block (page-aligned, at least `size` bytes,
// owned by the caller until freed) or comes from `A`; `dealloc`/`realloc` route by address, so a
// block always returns to the allocator that produced it.
unsafe impl<A: GlobalAlloc> GlobalAlloc for LargePool<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.serves(layout.size(), layout.align()) {
            let (p, _) = self.pool_alloc(layout.size());
            if !p.is_null() {
                return p;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.backing.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.serves(layout.size(), layout.align()) {
            let (p, zero) = self.pool_alloc(layout.size());
            if !p.is_null() {
                if !zero {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { p.write_bytes(0, layout.size()) };
                }
                return p;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.backing.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if let Some(inner) = self.inner_if_ready() {
            if inner.owns(p) {
                // SAFETY: `p` is a live block of ours (caller contract), of the class its address
                // says.
                unsafe { cache::free(inner, inner.class_of_ptr(p), p) };
                return;
            }
        }
        // SAFETY: not ours, so `A` allocated it.
        unsafe { self.backing.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let inner = self.inner_if_ready();
        let ours = inner.is_some_and(|i| i.owns(p));
        let fits = self.serves(new_size, layout.align());
        if let (true, Some(inner)) = (ours, inner) {
            let c = inner.class_of_ptr(p);
            // In place when the block could have been handed out for `new_size`: its own class,
            // or one at most four times the size (a block taken from a larger class stays put).
            if fits && class::may_serve(c, class::class_of(new_size)) {
                return p;
            }
            // SAFETY: the caller guarantees `new_size` with `layout.align()` is a valid layout.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: non-zero size (caller contract).
            let q = unsafe { self.alloc(new_layout) };
            if !q.is_null() {
                // SAFETY: both blocks hold at least the copied length and do not overlap; `p` is
                // ours and dead afterwards.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    cache::free(inner, c, p);
                }
            }
            return q;
        }
        if fits {
            let (q, _) = self.pool_alloc(new_size);
            if !q.is_null() {
                // SAFETY: as above; `p` came from `A` with `layout`.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    self.backing.dealloc(p, layout);
                }
                return q;
            }
        }
        // SAFETY: forwarded from the caller; `p` came from `A`.
        unsafe { self.backing.realloc(p, layout, new_size) }
    }
}

impl<A: GlobalAlloc> Drop for LargePool<A> {
    /// Releases the pool's reservation once no thread cache refers to it any more. Blocks still
    /// allocated from the pool must not be used afterwards.
    fn drop(&mut self) {
        let p = self.inner.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            cache::flush(
                // SAFETY: still referenced by this pool.
                unsafe { &*p },
            );
            // SAFETY: the pool's own reference, not used afterwards.
            unsafe { Inner::release(p) };
        }
    }
}
