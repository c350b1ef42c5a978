//! The shared part of a pool: one reservation, per-class regions, magazines and the depot.
//!
//! # Reservation
//!
//! ```text
//!  base                                                                     base + len
//!  +--------+------------------------+-----------+-----------+-----+-----------+
//!  | Inner  | magazines (MAX_MAGS)   | class lo  | class lo+1| ... | class hi  |
//!  | header | committed 1024 at once | span      | span      |     | span      |
//!  +--------+------------------------+-----------+-----------+-----+-----------+
//!                                    ^ regions
//! ```
//!
//! Everything is one `mmap(PROT_NONE, MAP_NORESERVE)`; pieces are committed (`mprotect`) as a
//! per-region bump pointer advances, so "is this pointer mine" is `regions <= p < base + len`
//! and its class is `(p - regions) >> span_shift`: blocks carry no header. The header lives in the
//! zero-filled mapping itself; all its fields are valid when zero except the few written by
//! [`Inner::create`].
//!
//! # Magazines and the depot
//!
//! A magazine is a fixed array of up to [`MAG_SLOTS`] free blocks of one class, owned by exactly
//! one party at a time: a thread cache, or one of three lock-free stacks of its class's depot:
//!
//! ```text
//!   full   magazines holding freed (dirty) blocks; counted in `cached`, subject to decay
//!   clean  magazines whose blocks were purged (madvise DONTNEED): zero, no RSS
//!   empty  magazines holding nothing
//! ```
//!
//! Each stack is a Treiber stack of magazine *indices*. The head packs `tag:32 | index:32`
//! (index 0 = empty) and every successful CAS increments the tag, so a pop that read `head` and
//! `next` before being preempted fails if anything happened to the stack meanwhile (ABA needs 2^32
//! operations inside one preemption). Magazines are never unmapped while the pool lives, so
//! reading a popped magazine's `next` after it was reused is harmless: the value is discarded by
//! the failing CAS. `next` is atomic because of exactly that race.
//!
//! Inside a magazine, the slots `0..clean` hold blocks known to be zero (fresh from the region,
//! or purged); `clean <= count` always. Pushes land on top (dirty), pops take the top, so
//! `alloc_zeroed` skips the memset when the popped index is below `clean`.
//!
//! # Decay
//!
//! Each class counts the bytes in its `full` stack (`cached`), the lowest value it reached in
//! the current epoch (`low`) and in the previous one (`prev_low`). An epoch lasts a quarter of
//! the decay time, on a fixed grid. At the end of each epoch (seen by a thread cache every 4
//! of its operations, when it flushes, and when its thread exits), the thread that wins the
//! `next_decay` CAS purges the bytes that sat unused through the last two epochs,
//! `sum(min(prev_low, low)) - retain`, largest classes first, and moves those magazines to
//! `clean`. `retain` is the configured amount, but at most one thread cache's budget per thread
//! bound to the pool ([`Inner::retained`]): what the depot keeps is there to refill the threads'
//! caches after a pause, and a few threads cannot use 64 MiB of it. So a block that reaches the depot at time t is purged, if nobody takes it, at the
//! third epoch end after t: never before t + decay / 2, and by t + 3 decay / 4 plus the time to
//! the next decay check. Memory left idle goes back to the OS within the decay time as long as
//! some thread uses the pool now and then. [`Inner::trim`] purges everything at once.
//!
//! # Lifetime
//!
//! `refs` counts the owning `LargePool` plus every thread-cache slot bound to this pool. The last
//! release unmaps the reservation, so a thread exiting after the pool was dropped can still flush.

use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use crate::class::{class_of, class_size, magazine_cap, MAG_SLOTS, MAX_CLASSES, PAGE};
use crate::os;

/// Upper bound of magazines per pool (4 Mi: enough for 128 Mi cached blocks).
const MAX_MAGS: usize = 1 << 22;
/// Magazines committed at once (80 pages).
const MAG_CHUNK: usize = 1024;
/// Region bytes committed at once.
const REGION_CHUNK: usize = 4 << 20;

/// A fixed array of free blocks of one class.
#[repr(C, align(64))]
pub struct Magazine {
    /// Next magazine in a depot stack (index, 0 = none). Read racily by poppers, see above.
    next: AtomicU32,
    count: UnsafeCell<u32>,
    clean: UnsafeCell<u32>,
    slots: UnsafeCell<[usize; MAG_SLOTS]>,
}

const _: () = assert!(core::mem::size_of::<Magazine>() == 320);
const _: () = assert!((MAG_CHUNK * 320) % PAGE == 0);

impl Magazine {
    /// Number of blocks held.
    ///
    /// # Safety (for this and the other accessors)
    /// The caller owns the magazine: it popped it from a stack, or holds it in its thread cache.
    #[inline]
    pub unsafe fn count(&self) -> usize {
        // SAFETY: only the owner reads or writes `count`.
        unsafe { *self.count.get() as usize }
    }

    /// Takes the top block: `(block, known_zero)`, or `None` when empty.
    #[inline]
    pub unsafe fn pop(&self) -> Option<(*mut u8, bool)> {
        // SAFETY: the caller owns the magazine; slots below `count` hold blocks.
        unsafe {
            let n = *self.count.get();
            if n == 0 {
                return None;
            }
            let n = n - 1;
            *self.count.get() = n;
            let p = (*self.slots.get())[n as usize];
            let clean = n < *self.clean.get();
            if clean {
                *self.clean.get() = n;
            }
            Some((p as *mut u8, clean))
        }
    }

    /// Adds a (dirty) block; the caller checked `count < MAG_SLOTS`.
    #[inline]
    pub unsafe fn push(&self, p: *mut u8) {
        // SAFETY: the caller owns the magazine and checked there is room.
        unsafe {
            let n = *self.count.get();
            debug_assert!((n as usize) < MAG_SLOTS);
            (*self.slots.get())[n as usize] = p as usize;
            *self.count.get() = n + 1;
        }
    }
}

/// A lock-free stack of magazine indices with a tagged head (see the module comment).
#[derive(Default)]
struct Stack {
    head: AtomicU64,
}

impl Stack {
    fn push(&self, inner: &Inner, m: u32) {
        let mag = inner.mag(m);
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            mag.next.store(head as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(m);
            // Release: the magazine's contents (written by its owner) are published with it.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    fn pop(&self, inner: &Inner) -> u32 {
        // Acquire: pairs with the Release of the push that published the magazine.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let m = head as u32;
            if m == 0 {
                return 0;
            }
            let next = inner.mag(m).next.load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return m,
                Err(h) => head = h,
            }
        }
    }
}

/// The depot and region of one class.
#[derive(Default)]
struct ClassDepot {
    full: CachePadded<Stack>,
    clean: CachePadded<Stack>,
    empty: CachePadded<Stack>,
    /// Bytes carved from the region so far.
    bump: CachePadded<AtomicUsize>,
    /// Bytes of the region committed so far.
    committed: AtomicUsize,
    /// Bytes in `full`.
    cached: CachePadded<AtomicUsize>,
    /// The lowest `cached` seen this decay epoch.
    low: AtomicUsize,
    /// The lowest `cached` seen in the previous decay epoch (after its purge).
    prev_low: AtomicUsize,
    /// Bytes in `clean`.
    clean_bytes: AtomicUsize,
}

/// Counters and settings readable by anyone.
pub struct Inner {
    refs: AtomicUsize,
    base: usize,
    len: usize,
    mags: usize,
    mag_next: AtomicUsize,
    mag_committed: AtomicUsize,
    regions: usize,
    span: usize,
    span_shift: u32,
    lo: usize,
    nclasses: usize,
    retain: usize,
    decay_ns: u64,
    thread_cache: usize,
    next_decay: AtomicU64,
    purged: AtomicU64,
    lost: AtomicU64,
    classes: [ClassDepot; MAX_CLASSES],
}

/// What [`Inner::create`] needs to know.
pub struct Layout {
    pub threshold: usize,
    pub cap: usize,
    pub span: usize,
    pub retain: usize,
    pub decay_ns: u64,
    pub thread_cache: usize,
}

/// A snapshot of the pool's counters (see `LargePool::stats`).
///
/// ```
/// use scalelock_alloc::LargePool;
/// use std::alloc::{GlobalAlloc, Layout};
///
/// let pool = LargePool::new();
/// let l = Layout::from_size_align(1 << 20, 8).unwrap();
/// // SAFETY: non-zero size; freed once.
/// unsafe { pool.dealloc(pool.alloc(l), l) };
/// let s = pool.stats();
/// assert!(s.carved_bytes >= 1 << 20 && s.committed_bytes >= s.carved_bytes);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Address space reserved.
    pub reserved_bytes: usize,
    /// Bytes of class regions committed (mprotect'ed read/write).
    pub committed_bytes: usize,
    /// Bytes carved into blocks so far (high-water mark of the regions).
    pub carved_bytes: usize,
    /// Bytes of free blocks in the depot (freed, or carved and handed back unused by an exiting
    /// thread): resident at most, until they decay.
    pub cached_bytes: usize,
    /// Freed bytes held in the depot after purging (no RSS).
    pub clean_bytes: usize,
    /// Bytes given back to the OS by decay or trim, in total.
    pub purged_bytes: u64,
    /// Magazines created.
    pub magazines: usize,
    /// Bytes given back to the OS and never reused because no magazine was left (expected 0).
    pub lost_bytes: u64,
}

impl Inner {
    /// Reserves and initialises a pool. Null when the reservation fails or the page size is not
    /// 4 KiB (the pool then forwards everything).
    pub fn create(l: &Layout) -> *const Inner {
        if os::page_size() != PAGE {
            return ptr::null();
        }
        let lo = class_of(l.threshold);
        let hi = class_of(l.cap);
        let nclasses = hi - lo + 1;
        let header = core::mem::size_of::<Inner>().next_multiple_of(PAGE);
        let meta = header + MAX_MAGS * core::mem::size_of::<Magazine>();
        let Some(len) = nclasses
            .checked_mul(l.span)
            .and_then(|r| r.checked_add(meta))
        else {
            return ptr::null();
        };
        let base = os::reserve(len);
        if base.is_null() {
            return ptr::null();
        }
        // SAFETY: `header` bytes at `base` belong to the fresh reservation.
        if !unsafe { os::commit(base, header) } {
            // SAFETY: nobody else knows the reservation.
            unsafe { os::release(base, len) };
            return ptr::null();
        }
        let inner = base.cast::<Inner>();
        // SAFETY: the header is committed, zero-filled, suitably aligned (page), and zero is a
        // valid value of every field (atomics, integers); we write the non-zero ones before
        // anybody else can see the pointer.
        unsafe {
            ptr::addr_of_mut!((*inner).refs).write(AtomicUsize::new(1));
            ptr::addr_of_mut!((*inner).base).write(base as usize);
            ptr::addr_of_mut!((*inner).len).write(len);
            ptr::addr_of_mut!((*inner).mags).write(base as usize + header);
            ptr::addr_of_mut!((*inner).regions).write(base as usize + meta);
            ptr::addr_of_mut!((*inner).span).write(l.span);
            ptr::addr_of_mut!((*inner).span_shift).write(l.span.trailing_zeros());
            ptr::addr_of_mut!((*inner).lo).write(lo);
            ptr::addr_of_mut!((*inner).nclasses).write(nclasses);
            ptr::addr_of_mut!((*inner).retain).write(l.retain);
            ptr::addr_of_mut!((*inner).decay_ns).write(l.decay_ns);
            ptr::addr_of_mut!((*inner).thread_cache).write(l.thread_cache);
            // Magazine index 0 means "none": start at 1.
            ptr::addr_of_mut!((*inner).mag_next).write(AtomicUsize::new(1));
        }
        inner
    }

    /// Bytes of blocks one thread may cache for this pool.
    #[inline]
    pub fn thread_cache_budget(&self) -> usize {
        self.thread_cache
    }

    /// Adds a reference (a thread cache binding to the pool).
    pub fn acquire(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops a reference; the last one unmaps the pool.
    ///
    /// # Safety
    /// The caller owns one reference and does not use `inner` afterwards.
    pub unsafe fn release(inner: *const Inner) {
        // SAFETY: the caller's reference keeps the header mapped until the decrement.
        unsafe {
            // Release/Acquire: every use of the pool by other holders happens before the unmap.
            if (*inner).refs.fetch_sub(1, Ordering::Release) == 1 {
                fence(Ordering::Acquire);
                let (base, len) = ((*inner).base, (*inner).len);
                os::release(base as *mut u8, len);
            }
        }
    }

    /// Is `p` inside one of the class regions?
    #[inline]
    pub fn owns(&self, p: *const u8) -> bool {
        let a = p as usize;
        a >= self.regions && a < self.base + self.len
    }

    /// The class of a block this pool owns.
    #[inline]
    pub fn class_of_ptr(&self, p: *const u8) -> usize {
        self.lo + ((p as usize - self.regions) >> self.span_shift)
    }

    /// The magazine with index `m` (`1 <= m < mag_next`).
    #[inline]
    pub fn mag(&self, m: u32) -> &Magazine {
        // SAFETY: indices below `mag_next` were committed by `new_mag` before being handed out,
        // and stay mapped as long as `self` is.
        unsafe { &*(self.mags as *const Magazine).add(m as usize) }
    }

    fn depot(&self, c: usize) -> &ClassDepot {
        &self.classes[c]
    }

    /// Commits `[start + committed, start + end)` rounded up to `chunk`, not past `limit`.
    fn ensure_committed(
        committed: &AtomicUsize,
        start: usize,
        end: usize,
        chunk: usize,
        limit: usize,
    ) -> bool {
        let c = committed.load(Ordering::Acquire);
        if end <= c {
            return true;
        }
        let new_end = end.next_multiple_of(chunk).min(limit);
        // SAFETY: `[c, new_end)` lies inside this reservation piece (`new_end <= limit`) and is
        // page-aligned (chunk and limit are page multiples). Concurrent commits of overlapping
        // ranges are idempotent.
        if !unsafe { os::commit((start + c) as *mut u8, new_end - c) } {
            return false;
        }
        committed.fetch_max(new_end, Ordering::Release);
        true
    }

    /// A new empty magazine, or 0 when none can be made.
    pub fn new_mag(&self) -> u32 {
        let mut m = self.mag_next.load(Ordering::Relaxed);
        loop {
            if m >= MAX_MAGS {
                return 0;
            }
            let size = core::mem::size_of::<Magazine>();
            if !Self::ensure_committed(
                &self.mag_committed,
                self.mags,
                (m + 1) * size,
                MAG_CHUNK * size,
                MAX_MAGS * size,
            ) {
                return 0;
            }
            match self.mag_next.compare_exchange_weak(
                m,
                m + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                // A fresh magazine is zero: empty, next = 0.
                Ok(_) => return m as u32,
                Err(x) => m = x,
            }
        }
    }

    /// An empty magazine from the depot or a new one (0 when none).
    pub fn get_empty(&self, c: usize) -> u32 {
        let m = self.depot(c).empty.pop(self);
        if m != 0 {
            m
        } else {
            self.new_mag()
        }
    }

    pub fn push_empty(&self, c: usize, m: u32) {
        self.depot(c).empty.push(self, m);
    }

    /// Returns a magazine holding blocks (any count) to the depot.
    ///
    /// # Safety
    /// The caller owns `m`; it holds blocks of class `c`.
    pub unsafe fn push_full(&self, c: usize, m: u32) {
        let d = self.depot(c);
        // SAFETY: owned by the caller.
        let n = unsafe { self.mag(m).count() };
        // Count before publishing, so that the matching subtraction never underflows.
        d.cached.fetch_add(n * class_size(c), Ordering::Relaxed);
        d.full.push(self, m);
    }

    /// A magazine holding at least one block (dirty ones first, then purged), or 0.
    pub fn pop_nonempty(&self, c: usize) -> u32 {
        let d = self.depot(c);
        let m = d.full.pop(self);
        if m != 0 {
            // SAFETY: just popped: owned by us.
            let n = unsafe { self.mag(m).count() };
            let left = d.cached.fetch_sub(n * class_size(c), Ordering::Relaxed) - n * class_size(c);
            d.low.fetch_min(left, Ordering::Relaxed);
            return m;
        }
        let m = d.clean.pop(self);
        if m != 0 {
            // SAFETY: just popped: owned by us.
            let n = unsafe { self.mag(m).count() };
            d.clean_bytes
                .fetch_sub(n * class_size(c), Ordering::Relaxed);
        }
        m
    }

    /// Fills the empty magazine `m` with fresh (zero) blocks carved from the region: a quarter of
    /// a magazine at a time, so that a thread touching many classes once does not hoard fresh
    /// blocks other threads would have to carve again.
    ///
    /// # Safety
    /// The caller owns `m` and it is empty.
    pub unsafe fn carve_into(&self, c: usize, m: u32) -> bool {
        match self.carve(c, (magazine_cap(c) / 4).max(1)) {
            Some((start, k)) => {
                let mag = self.mag(m);
                let size = class_size(c);
                // SAFETY: the caller owns `m`.
                unsafe {
                    let slots = &mut *mag.slots.get();
                    for (i, s) in slots.iter_mut().enumerate().take(k) {
                        *s = start + i * size;
                    }
                    *mag.count.get() = k as u32;
                    *mag.clean.get() = k as u32;
                }
                true
            }
            None => false,
        }
    }

    /// Carves up to `n` (at least one) blocks: `(first block, count)`.
    fn carve(&self, c: usize, n: usize) -> Option<(usize, usize)> {
        let d = self.depot(c);
        let size = class_size(c);
        let start = self.regions + (c - self.lo) * self.span;
        let mut b = d.bump.load(Ordering::Relaxed);
        loop {
            let room = (self.span - b) / size;
            if room == 0 {
                return None;
            }
            let k = n.min(room);
            let end = b + k * size;
            if !Self::ensure_committed(&d.committed, start, end, REGION_CHUNK, self.span) {
                return None;
            }
            match d
                .bump
                .compare_exchange_weak(b, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some((start + b, k)),
                Err(x) => b = x,
            }
        }
    }

    /// One block without a thread cache (thread exiting, cache unavailable): `(block, zero)`.
    pub fn alloc_direct(&self, c: usize) -> (*mut u8, bool) {
        if let Some(r) = self.take_one(c) {
            return r;
        }
        match self.carve(c, 1) {
            Some((p, _)) => (p as *mut u8, true),
            None => (ptr::null_mut(), false),
        }
    }

    /// One free block of class `c` from the depot, if it holds any: `(block, zero)`.
    pub fn take_one(&self, c: usize) -> Option<(*mut u8, bool)> {
        let m = self.pop_nonempty(c);
        if m == 0 {
            return None;
        }
        let mag = self.mag(m);
        // SAFETY: `m` was just popped and is ours; it holds at least one block.
        unsafe {
            let r = mag.pop();
            if mag.count() > 0 {
                self.push_full(c, m);
            } else {
                self.push_empty(c, m);
            }
            r
        }
    }

    /// The classes this pool serves.
    #[inline]
    pub fn classes(&self) -> core::ops::Range<usize> {
        self.lo..self.lo + self.nclasses
    }

    /// Frees one block without a thread cache.
    ///
    /// # Safety
    /// `p` is a live block of class `c` of this pool, not used afterwards.
    pub unsafe fn free_direct(&self, c: usize, p: *mut u8) {
        let m = self.get_empty(c);
        if m == 0 {
            // SAFETY: forwarded from the caller.
            unsafe { self.lose(c, p) };
            return;
        }
        // SAFETY: `m` is ours and empty.
        unsafe {
            self.mag(m).push(p);
            self.push_full(c, m);
        }
    }

    /// Last resort when no magazine can be had: the block's pages go back to the OS and the
    /// block is never reused. Unreachable in practice (4 Mi magazines).
    ///
    /// # Safety
    /// As for [`Inner::free_direct`].
    #[cold]
    pub unsafe fn lose(&self, c: usize, p: *mut u8) {
        // SAFETY: the block is dead and committed.
        unsafe { os::purge(p, class_size(c)) };
        self.lost.fetch_add(class_size(c) as u64, Ordering::Relaxed);
    }

    /// Runs decay if its time has come (see the module comment). Cheap when it has not.
    pub fn maintain(&self) {
        let now = os::coarse_now_ns();
        let next = self.next_decay.load(Ordering::Relaxed);
        if now < next {
            return;
        }
        let epoch = (self.decay_ns / 4).max(1);
        // On the grid, unless the pool sat unused for more than an epoch past it.
        let new_next = if now - next < epoch {
            next + epoch
        } else {
            now + epoch
        };
        if self
            .next_decay
            .compare_exchange(next, new_next, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // Bytes that stayed cached through the last two epochs, per class.
        let mut idle = [0usize; MAX_CLASSES];
        let mut total = 0usize;
        for (c, slot) in idle
            .iter_mut()
            .enumerate()
            .skip(self.lo)
            .take(self.nclasses)
        {
            let d = self.depot(c);
            let cur = d.cached.load(Ordering::Relaxed);
            let low = d.low.load(Ordering::Relaxed);
            let prev = d.prev_low.load(Ordering::Relaxed);
            *slot = cur.min(low).min(prev);
            total += *slot;
        }
        let mut excess = total.saturating_sub(self.retained());
        for c in (self.lo..self.lo + self.nclasses).rev() {
            if excess == 0 {
                break;
            }
            let done = self.purge_class(c, idle[c].min(excess));
            excess = excess.saturating_sub(done);
        }
        // A new epoch: its low starts at what is cached now.
        for c in self.lo..self.lo + self.nclasses {
            let d = self.depot(c);
            let cur = d.cached.load(Ordering::Relaxed);
            let low = d.low.swap(cur, Ordering::Relaxed);
            d.prev_low.store(low.min(cur), Ordering::Relaxed);
        }
    }

    /// The bytes decay leaves in the depot: the configured `retain`, but at most one thread
    /// cache's budget per thread bound to the pool (at least one), since the depot's retained
    /// blocks are there to refill those caches.
    pub fn retained(&self) -> usize {
        // `refs` counts the owning pool (while it lives) plus one per bound thread-cache slot.
        let threads = self.refs.load(Ordering::Relaxed).saturating_sub(1).max(1);
        self.retain.min(threads.saturating_mul(self.thread_cache))
    }

    /// Purges every cached block now.
    pub fn trim(&self) {
        for c in self.lo..self.lo + self.nclasses {
            self.purge_class(c, usize::MAX);
            self.depot(c).low.store(0, Ordering::Relaxed);
            self.depot(c).prev_low.store(0, Ordering::Relaxed);
        }
    }

    /// Purges whole magazines of class `c` until at least `target` bytes went back to the OS.
    fn purge_class(&self, c: usize, target: usize) -> usize {
        let d = self.depot(c);
        let size = class_size(c);
        let mut done = 0;
        while done < target {
            let m = d.full.pop(self);
            if m == 0 {
                break;
            }
            let mag = self.mag(m);
            // SAFETY: `m` was just popped: ours. Its blocks are free and committed.
            let n = unsafe {
                let n = mag.count();
                let left = d.cached.fetch_sub(n * size, Ordering::Relaxed) - n * size;
                d.low.fetch_min(left, Ordering::Relaxed);
                let slots = &mut (&mut *mag.slots.get())[..n];
                slots.sort_unstable();
                // Coalesce neighbouring blocks into one madvise.
                let mut i = 0;
                while i < n {
                    let mut j = i + 1;
                    while j < n && slots[j] == slots[j - 1] + size {
                        j += 1;
                    }
                    os::purge(slots[i] as *mut u8, (j - i) * size);
                    i = j;
                }
                *mag.clean.get() = n as u32;
                n
            };
            d.clean_bytes.fetch_add(n * size, Ordering::Relaxed);
            d.clean.push(self, m);
            self.purged.fetch_add((n * size) as u64, Ordering::Relaxed);
            done += n * size;
        }
        done
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = Stats {
            reserved_bytes: self.len,
            purged_bytes: self.purged.load(Ordering::Relaxed),
            magazines: self.mag_next.load(Ordering::Relaxed).min(MAX_MAGS) - 1,
            lost_bytes: self.lost.load(Ordering::Relaxed),
            ..Stats::default()
        };
        for c in self.lo..self.lo + self.nclasses {
            let d = self.depot(c);
            s.committed_bytes += d.committed.load(Ordering::Relaxed);
            s.carved_bytes += d.bump.load(Ordering::Relaxed);
            s.cached_bytes += d.cached.load(Ordering::Relaxed);
            s.clean_bytes += d.clean_bytes.load(Ordering::Relaxed);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn inner() -> &'static Inner {
        let p = Inner::create(&Layout {
            threshold: PAGE,
            cap: 64 << 10,
            span: 1 << 30,
            retain: 0,
            decay_ns: 1_000_000,
            thread_cache: 4 << 20,
        });
        assert!(!p.is_null());
        // SAFETY: created above; never released (leaked for the test's duration).
        unsafe { &*p }
    }

    #[test]
    fn the_tagged_stack_never_hands_one_magazine_to_two_owners() {
        let inner = inner();
        let stack = Stack::default();
        const N: usize = 64;
        let owned: Vec<AtomicBool> = (0..=N).map(|_| AtomicBool::new(false)).collect();
        for _ in 0..N {
            let m = inner.new_mag();
            assert_ne!(m, 0);
            stack.push(inner, m);
        }
        let start = std::time::Instant::now();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    for i in 0..200_000 {
                        if start.elapsed() > std::time::Duration::from_secs(10) {
                            break;
                        }
                        if i % 3 != 2 {
                            let m = stack.pop(inner);
                            if m != 0 {
                                assert!(
                                    !owned[m as usize].swap(true, Ordering::Relaxed),
                                    "{m} popped twice"
                                );
                                mine.push(m);
                            }
                        } else if let Some(m) = mine.pop() {
                            owned[m as usize].store(false, Ordering::Relaxed);
                            stack.push(inner, m);
                        }
                    }
                    for m in mine {
                        owned[m as usize].store(false, Ordering::Relaxed);
                        stack.push(inner, m);
                    }
                });
            }
        });
        let mut seen = std::collections::HashSet::new();
        loop {
            let m = stack.pop(inner);
            if m == 0 {
                break;
            }
            assert!(seen.insert(m), "{m} twice in the stack");
        }
        assert_eq!(seen.len(), N, "magazines lost");
    }

    #[test]
    fn magazines_track_which_blocks_are_known_zero() {
        let inner = inner();
        let m = inner.new_mag();
        // SAFETY: `m` is new and ours; the blocks are carved from the pool.
        unsafe {
            assert!(inner.carve_into(0, m));
            let mag = inner.mag(m);
            let k = mag.count();
            assert_eq!(k, magazine_cap(0) / 4);
            let (a, za) = mag.pop().unwrap();
            assert!(za, "fresh block is zero");
            a.write(1);
            mag.push(a);
            let (b, zb) = mag.pop().unwrap();
            assert_eq!((a, zb), (b, false), "a pushed block is dirty");
            let (_, zc) = mag.pop().unwrap();
            assert!(zc, "blocks below remain clean");
        }
    }
}
