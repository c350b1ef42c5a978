//! Per-thread magazine caches: the lock-free, RMW-free fast path.
//!
//! # Structure
//!
//! ```text
//!   thread_local CACHE (const-initialised plain data: no lazy init, no destructor)
//!     state   UNINIT -> BUSY -> LIVE -> DEAD
//!     ticks   operations; every 1024th flushes the classes unused since the previous one, and
//!             runs decay if due
//!     slots[4]  { inner: pool bound to the slot (holds one ref),
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

use crate::class::{magazine_cap, MAX_CLASSES};
use crate::depot::Inner;

const SLOTS: usize = 4;
const TICK_MASK: u32 = 1023;

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
    for (c, cc) in s.classes.iter().enumerate() {
        flush_class(inner, c, cc);
    }
    inner.maintain();
    // SAFETY: the reference taken when the slot was bound; `inner` is not used afterwards.
    unsafe { Inner::release(p) };
}

/// Returns a class's magazines to the depot.
fn flush_class(inner: &Inner, c: usize, cc: &ClassCache) {
    for m in [cc.loaded.replace(0), cc.prev.replace(0)] {
        if m == 0 {
            continue;
        }
        // SAFETY: the thread cache owned `m`; now the depot does.
        unsafe {
            if inner.mag(m).count() > 0 {
                inner.push_full(c, m);
            } else {
                inner.push_empty(c, m);
            }
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

/// Counts an operation on class `c`; every 1024th runs [`tick_slow`].
#[inline]
fn tick(tc: &ThreadCache, s: &Slot, inner: &Inner, c: usize) {
    s.classes[c].used.set(true);
    let t = tc.ticks.get().wrapping_add(1);
    tc.ticks.set(t);
    if t & TICK_MASK == 0 {
        tick_slow(s, inner);
    }
}

/// Flushes the classes of this slot that were not used since the last tick (so that a thread
/// does not keep blocks it stopped needing), then gives decay its chance.
#[cold]
fn tick_slow(s: &Slot, inner: &Inner) {
    for (c, cc) in s.classes.iter().enumerate() {
        if !cc.used.replace(false) {
            flush_class(inner, c, cc);
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
                let cc = &s.classes[c];
                let m = cc.loaded.get();
                if m != 0 {
                    // SAFETY: the thread cache owns `loaded`.
                    if let Some(r) = unsafe { inner.mag(m).pop() } {
                        return r;
                    }
                }
                alloc_slow(inner, cc, c)
            }
            None => inner.alloc_direct(c),
        })
        .unwrap_or_else(|_| inner.alloc_direct(c))
}

#[cold]
fn alloc_slow(inner: &Inner, cc: &ClassCache, c: usize) -> (*mut u8, bool) {
    let loaded = cc.loaded.get();
    let prev = cc.prev.get();
    // SAFETY (all blocks below): `loaded` and `prev` are owned by this thread cache; magazines
    // popped from the depot are owned by us until pushed back.
    unsafe {
        if prev != 0 && inner.mag(prev).count() > 0 {
            cc.loaded.set(prev);
            cc.prev.set(loaded);
            return inner.mag(prev).pop().unwrap_or((ptr::null_mut(), false));
        }
        // Both magazines are empty or absent.
        let full = inner.pop_nonempty(c);
        if full != 0 {
            if prev != 0 {
                inner.push_empty(c, prev);
            }
            cc.prev.set(loaded);
            cc.loaded.set(full);
            return inner.mag(full).pop().unwrap_or((ptr::null_mut(), false));
        }
        // Nothing cached anywhere: carve fresh blocks into an empty magazine.
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
        inner.mag(m).pop().unwrap_or((ptr::null_mut(), false))
    }
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
            let cc = &s.classes[c];
            let m = cc.loaded.get();
            // SAFETY: the thread cache owns `loaded`; there is room.
            unsafe {
                if m != 0 && inner.mag(m).count() < magazine_cap(c) {
                    inner.mag(m).push(p);
                } else {
                    free_slow(inner, cc, c, p);
                }
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
unsafe fn free_slow(inner: &Inner, cc: &ClassCache, c: usize, p: *mut u8) {
    let loaded = cc.loaded.get();
    let prev = cc.prev.get();
    let cap = magazine_cap(c);
    // SAFETY (all blocks below): as in `alloc_slow`; `p` is forwarded from the caller.
    unsafe {
        if prev != 0 && inner.mag(prev).count() < cap {
            cc.loaded.set(prev);
            cc.prev.set(loaded);
            inner.mag(prev).push(p);
            return;
        }
        // Both magazines are full or absent.
        let e = inner.get_empty(c);
        if e == 0 {
            inner.lose(c, p);
            return;
        }
        if prev != 0 {
            inner.push_full(c, prev);
        }
        cc.prev.set(loaded);
        cc.loaded.set(e);
        inner.mag(e).push(p);
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
