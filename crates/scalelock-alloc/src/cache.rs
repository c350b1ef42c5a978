//! Per-thread magazine caches: the lock-free, RMW-free fast path.
//!
//! # Structure
//!
//! ```text
//!   thread_local CACHE (const-initialised plain data: no lazy init, no destructor)
//!     state   UNINIT -> BUSY -> LIVE -> DEAD
//!     ticks   operations; every 4th runs decay if due, every 1024th also flushes the classes
//!             unused since the previous one
//!     slots[4]  { inner: pool bound to the slot (holds one ref),
//!                 bytes: cached in the slot, kept under the pool's thread-cache budget,
//!                 classes[c]: { loaded, prev, used } }
//!
//!   thread_local GUARD (a zero-sized value whose destructor flushes CACHE)
//! ```
//!
//! Bonwick's two-magazine scheme per class: `alloc` pops from `loaded`; when it is empty and
//! `prev` is not, the two swap; otherwise a full magazine comes from the depot (the empty one
//! goes back). `free` is the mirror image. Both fast paths are a TLS access, a slot match, and a
//! load/store on the magazine: no lock, no atomic read-modify-write.
//!
//! # Thread states
//!
//! ```text
//!   UNINIT --first pool operation--> BUSY  registering GUARD's destructor (std may allocate
//!                                          here; a nested pool operation sees BUSY and takes the
//!                                          direct depot path)
//!   BUSY   --registered-----------> LIVE   caching
//!   BUSY   --TLS being destroyed--> DEAD
//!   LIVE   --GUARD dropped--------> DEAD   every slot flushed to its depot, refs released;
//!                                          allocations made by later TLS destructors go
//!                                          straight to the depot, so nothing is stranded
//! ```
//!
//! A slot holds a reference to its pool, so a pool dropped while threads still cache for it
//! stays mapped until they flush. When all four slots are taken, binding a fifth pool evicts one
//! (round robin): flush, release.

use core::cell::Cell;
use core::ptr;

use crate::class::{class_size, magazine_cap, MAX_CLASSES};
use crate::depot::Inner;

const SLOTS: usize = 4;
/// Every 1024th operation of a thread returns the classes it stopped using to the depot.
const TICK_MASK: u32 = 1023;
/// Every 4th operation of a thread gives decay its chance (a coarse clock read when not due),
/// so that a pool with any traffic at all returns idle memory on time.
const DECAY_MASK: u32 = 3;

const UNINIT: u8 = 0;
const BUSY: u8 = 1;
const LIVE: u8 = 2;
const DEAD: u8 = 3;

struct ClassCache {
    loaded: Cell<u32>,
    prev: Cell<u32>,
    /// Used since the last tick; a class idle for a whole tick is flushed to the depot.
    used: Cell<bool>,
}

struct Slot {
    inner: Cell<*const Inner>,
    /// Bytes of the blocks in this slot's magazines (at most the pool's thread-cache budget,
    /// give or take one magazine).
    bytes: Cell<usize>,
    classes: [ClassCache; MAX_CLASSES],
}

struct ThreadCache {
    state: Cell<u8>,
    ticks: Cell<u32>,
    victim: Cell<u8>,
    slots: [Slot; SLOTS],
}

impl ThreadCache {
    const fn new() -> ThreadCache {
        ThreadCache {
            state: Cell::new(UNINIT),
            ticks: Cell::new(0),
            victim: Cell::new(0),
            slots: [const {
                Slot {
                    inner: Cell::new(ptr::null()),
                    bytes: Cell::new(0),
                    classes: [const {
                        ClassCache {
                            loaded: Cell::new(0),
                            prev: Cell::new(0),
                            used: Cell::new(false),
                        }
                    }; MAX_CLASSES],
                }
            }; SLOTS],
        }
    }
}

thread_local! {
    static CACHE: ThreadCache = const { ThreadCache::new() };
    static GUARD: Guard = const { Guard };
}

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = CACHE.try_with(|tc| {
            tc.state.set(DEAD);
            for s in &tc.slots {
                // SAFETY: this thread's own slot.
                unsafe { unbind(s) };
            }
        });
    }
}

/// Returns every magazine of a slot to its pool and releases the slot's reference.
///
/// # Safety
/// `s` belongs to the calling thread's cache.
unsafe fn unbind(s: &Slot) {
    let p = s.inner.replace(ptr::null());
    if p.is_null() {
        return;
    }
    // SAFETY: the slot's reference keeps the pool mapped until `release`.
    let inner = unsafe { &*p };
    for c in 0..MAX_CLASSES {
        flush_class(s, inner, c);
    }
    debug_assert_eq!(s.bytes.get(), 0, "thread-cache byte count out of step");
    inner.maintain();
    // SAFETY: the reference taken when the slot was bound; `inner` is not used afterwards.
    unsafe { Inner::release(p) };
}

/// Returns a class's magazines to the depot.
fn flush_class(s: &Slot, inner: &Inner, c: usize) {
    let cc = &s.classes[c];
    for m in [cc.loaded.replace(0), cc.prev.replace(0)] {
        if m == 0 {
            continue;
        }
        // SAFETY: the thread cache owned `m`; now the depot does.
        unsafe {
            let n = inner.mag(m).count();
            if n > 0 {
                s.bytes.set(s.bytes.get() - n * class_size(c));
                inner.push_full(c, m);
            } else {
                inner.push_empty(c, m);
            }
        }
    }
}

/// Called when a free took the slot over its budget: the freeing class's magazines go to the
/// depot, and if that is not enough, every class's.
#[cold]
fn shed(s: &Slot, inner: &Inner, c: usize) {
    flush_class(s, inner, c);
    if s.bytes.get() > inner.thread_cache_budget() {
        for c in 0..MAX_CLASSES {
            flush_class(s, inner, c);
        }
    }
}

/// The calling thread's slot for `inner`, binding one if needed; `None` when the thread cannot
/// cache (exiting, or inside registration).
#[inline]
fn slot<'a>(tc: &'a ThreadCache, inner: &Inner) -> Option<&'a Slot> {
    let p = inner as *const Inner;
    tc.slots
        .iter()
        .find(|s| s.inner.get() == p)
        .or_else(|| bind(tc, inner))
}

#[cold]
fn bind<'a>(tc: &'a ThreadCache, inner: &Inner) -> Option<&'a Slot> {
    match tc.state.get() {
        LIVE => {}
        UNINIT => {
            tc.state.set(BUSY);
            // Registers GUARD's destructor; fails when TLS is being torn down.
            let ok = GUARD.try_with(|_| ()).is_ok();
            tc.state.set(if ok { LIVE } else { DEAD });
            if !ok {
                return None;
            }
        }
        _ => return None,
    }
    let i = match tc.slots.iter().position(|s| s.inner.get().is_null()) {
        Some(i) => i,
        None => {
            let v = tc.victim.get() as usize % SLOTS;
            tc.victim.set(((v + 1) % SLOTS) as u8);
            // SAFETY: our own slot.
            unsafe { unbind(&tc.slots[v]) };
            v
        }
    };
    inner.acquire();
    tc.slots[i].inner.set(inner);
    Some(&tc.slots[i])
}

/// Counts an operation on class `c`; every 4th checks decay, every 1024th runs [`tick_slow`].
#[inline]
fn tick(tc: &ThreadCache, s: &Slot, inner: &Inner, c: usize) {
    s.classes[c].used.set(true);
    let t = tc.ticks.get().wrapping_add(1);
    tc.ticks.set(t);
    if t & DECAY_MASK == 0 {
        if t & TICK_MASK == 0 {
            tick_slow(s, inner);
        } else {
            inner.maintain();
        }
    }
}

/// Flushes the classes of this slot that were not used since the last tick (so that a thread
/// does not keep blocks it stopped needing), then gives decay its chance.
#[cold]
fn tick_slow(s: &Slot, inner: &Inner) {
    for c in 0..MAX_CLASSES {
        if !s.classes[c].used.replace(false) {
            flush_class(s, inner, c);
        }
    }
    inner.maintain();
}

/// A block of class `c`: `(block, known_zero)`; null when the pool's region is exhausted.
#[inline]
pub fn alloc(inner: &Inner, c: usize) -> (*mut u8, bool) {
    CACHE
        .try_with(|tc| match slot(tc, inner) {
            Some(s) => {
                tick(tc, s, inner, c);
                let m = s.classes[c].loaded.get();
                if m != 0 {
                    // SAFETY: the thread cache owns `loaded`.
                    if let Some(r) = unsafe { inner.mag(m).pop() } {
                        s.bytes.set(s.bytes.get() - class_size(c));
                        return r;
                    }
                }
                alloc_slow(s, inner, c)
            }
            None => inner.alloc_direct(c),
        })
        .unwrap_or_else(|_| inner.alloc_direct(c))
}

#[cold]
fn alloc_slow(s: &Slot, inner: &Inner, c: usize) -> (*mut u8, bool) {
    let cc = &s.classes[c];
    let size = class_size(c);
    // Takes the top block of a magazine this slot holds.
    let take = |m: u32| {
        // SAFETY: `m` is owned by this thread cache.
        match unsafe { inner.mag(m).pop() } {
            Some(r) => {
                s.bytes.set(s.bytes.get() - size);
                r
            }
            None => (ptr::null_mut(), false),
        }
    };
    let loaded = cc.loaded.get();
    let prev = cc.prev.get();
    // SAFETY (all blocks below): `loaded` and `prev` are owned by this thread cache; magazines
    // popped from the depot are owned by us until pushed back.
    unsafe {
        if prev != 0 && inner.mag(prev).count() > 0 {
            cc.loaded.set(prev);
            cc.prev.set(loaded);
            return take(prev);
        }
        // Both magazines are empty or absent.
        let full = inner.pop_nonempty(c);
        if full != 0 {
            if prev != 0 {
                inner.push_empty(c, prev);
            }
            cc.prev.set(loaded);
            cc.loaded.set(full);
            s.bytes.set(s.bytes.get() + inner.mag(full).count() * size);
            return take(full);
        }
        // Nothing of this class anywhere: a free block of a slightly larger class is already
        // resident, where carving would make more memory resident.
        if let Some(r) = borrow(s, inner, c) {
            return r;
        }
        // Carve fresh blocks into an empty magazine.
        let m = if loaded != 0 {
            loaded
        } else if prev != 0 {
            cc.prev.set(0);
            prev
        } else {
            inner.get_empty(c)
        };
        if m == 0 {
            return inner.alloc_direct(c);
        }
        cc.loaded.set(m);
        if !inner.carve_into(c, m) {
            return (ptr::null_mut(), false);
        }
        s.bytes.set(s.bytes.get() + inner.mag(m).count() * size);
        take(m)
    }
}

/// A free block of the smallest class above `c` that holds one, whatever its size: for each
/// class from the closest up, this thread's cache, then the depot. The block keeps its class
/// (its address says which), so it goes back to that class when freed.
///
/// Why any larger block, not only one a few times the size: lending a free block makes nothing
/// resident (its pages already are), while carving makes the new block's pages resident. With
/// lending bounded by a ratio, each class holds free blocks for its own worst moment and the
/// footprint is the sum of the classes' peaks; lent without a bound, the free blocks of every
/// larger class serve, and new memory is carved only when no free block of the pool is large
/// enough. The closest class first, because a larger block taken now is one a larger request
/// may have to carve again. The price is address space and, for the lent block's lifetime, the
/// pages an earlier, larger use wrote: they stay resident, as they were while the block was
/// free (see the crate docs' Footprint section).
#[cold]
fn borrow(s: &Slot, inner: &Inner, c: usize) -> Option<(*mut u8, bool)> {
    for b in c + 1..inner.classes().end {
        let cc = &s.classes[b];
        for m in [cc.loaded.get(), cc.prev.get()] {
            if m != 0 {
                // SAFETY: the thread cache owns its magazines.
                if let Some(r) = unsafe { inner.mag(m).pop() } {
                    s.bytes.set(s.bytes.get() - class_size(b));
                    return Some(r);
                }
            }
        }
        if let Some(r) = inner.take_one(b) {
            return Some(r);
        }
    }
    None
}

/// Frees a block of class `c`.
///
/// # Safety
/// `p` is a live block of class `c` of `inner`, not used afterwards.
#[inline]
pub unsafe fn free(inner: &Inner, c: usize, p: *mut u8) {
    let done = CACHE.try_with(|tc| match slot(tc, inner) {
        Some(s) => {
            tick(tc, s, inner, c);
            let m = s.classes[c].loaded.get();
            // SAFETY: the thread cache owns `loaded`; there is room.
            unsafe {
                if m != 0 && inner.mag(m).count() < magazine_cap(c) {
                    inner.mag(m).push(p);
                    s.bytes.set(s.bytes.get() + class_size(c));
                } else {
                    free_slow(s, inner, c, p);
                }
            }
            if s.bytes.get() > inner.thread_cache_budget() {
                shed(s, inner, c);
            }
            true
        }
        None => false,
    });
    if !matches!(done, Ok(true)) {
        // SAFETY: forwarded from the caller.
        unsafe { inner.free_direct(c, p) };
    }
}

#[cold]
unsafe fn free_slow(s: &Slot, inner: &Inner, c: usize, p: *mut u8) {
    let cc = &s.classes[c];
    let size = class_size(c);
    let loaded = cc.loaded.get();
    let prev = cc.prev.get();
    let cap = magazine_cap(c);
    // SAFETY (all blocks below): as in `alloc_slow`; `p` is forwarded from the caller.
    unsafe {
        if prev != 0 && inner.mag(prev).count() < cap {
            cc.loaded.set(prev);
            cc.prev.set(loaded);
            inner.mag(prev).push(p);
            s.bytes.set(s.bytes.get() + size);
            return;
        }
        // Both magazines are full or absent.
        let e = inner.get_empty(c);
        if e == 0 {
            inner.lose(c, p);
            return;
        }
        if prev != 0 {
            s.bytes.set(s.bytes.get() - inner.mag(prev).count() * size);
            inner.push_full(c, prev);
        }
        cc.prev.set(loaded);
        cc.loaded.set(e);
        inner.mag(e).push(p);
        s.bytes.set(s.bytes.get() + size);
    }
}

/// Flushes the calling thread's cache for `inner` back to the depot (and releases the slot).
pub fn flush(inner: &Inner) {
    let p = inner as *const Inner;
    let _ = CACHE.try_with(|tc| {
        if let Some(s) = tc.slots.iter().find(|s| s.inner.get() == p) {
            // SAFETY: our own slot. The caller's reference keeps the pool alive after the
            // slot's reference is released.
            unsafe { unbind(s) };
        }
    });
}
