//! Sampled call stacks of contended acquisitions, for `scalelock profile --stacks N`
//! (`SCALELOCK_LOCKSTAT_STACKS=N`, 1 to [`MAX_FRAMES`]).
//!
//! One contended acquisition in [`SAMPLE_EVERY`] is sampled, by one thread at a time: it walks
//! its stack with the unwinder (`_Unwind_Backtrace`, libgcc's, which the library links already),
//! from the program's call into the library outwards, before it waits, and adds its wait to the
//! slot of that stack in a fixed table. Nothing is allocated or formatted; a thread that finds
//! another sampling, or the table full, does not sample. The unwinder may take locks of its own
//! (through this library's `pthread_mutex_lock`): the sampling thread's flag keeps such a nested
//! acquisition from sampling again.
//!
//! Sampling is a diagnostic mode, off unless asked for: the unwinder finds frames through
//! `dl_iterate_phdr`, which takes the dynamic loader's lock, so a thread that samples while it
//! holds a lock could wait for a `dlopen` in progress whose library constructor waits for that
//! lock.
//!
//! The report lists each stack as `stack COUNT WAIT_NS FRAME..` (see `stats.rs`).

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use scalelock::wait::now_ns;

/// The most frames a sample keeps.
pub(crate) const MAX_FRAMES: usize = 16;
/// One contended acquisition in this many is sampled.
pub(crate) const SAMPLE_EVERY: u64 = 4;
const SLOTS: usize = 512;

/// Frames to keep (0: stacks off), set once at load.
static FRAMES: AtomicUsize = AtomicUsize::new(0);
static CONTENDED: AtomicU64 = AtomicU64::new(0);
static SAMPLING: AtomicBool = AtomicBool::new(false);

const EMPTY: u8 = 0;
const CLAIMED: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    hash: AtomicU64,
    count: AtomicU64,
    wait_ns: AtomicU64,
    depth: AtomicUsize,
    frames: [AtomicUsize; MAX_FRAMES],
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(EMPTY),
        hash: AtomicU64::new(0),
        count: AtomicU64::new(0),
        wait_ns: AtomicU64::new(0),
        depth: AtomicUsize::new(0),
        frames: [const { AtomicUsize::new(0) }; MAX_FRAMES],
    }
}; SLOTS];

/// Turns sampling on with `frames` frames (clamped to 1..=[`MAX_FRAMES`]).
pub(crate) fn enable(frames: usize) {
    FRAMES.store(frames.clamp(1, MAX_FRAMES), Ordering::Relaxed);
}

#[repr(C)]
struct UnwindContext {
    _opaque: [u8; 0],
}

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(*mut UnwindContext, *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
}

/// `_URC_NO_REASON`: go on; `_URC_END_OF_STACK`: stop.
const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;

struct Walk {
    caller: usize,
    found: bool,
    frames: [usize; MAX_FRAMES],
    depth: usize,
    want: usize,
}

extern "C" fn on_frame(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `sample` passed, alive for the whole walk.
    let w = unsafe { &mut *arg.cast::<Walk>() };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) };
    if ip == 0 {
        return URC_END_OF_STACK;
    }
    // The library's own frames come first: keep from the program's call into it.
    if !w.found {
        if ip != w.caller {
            return URC_NO_REASON;
        }
        w.found = true;
    }
    if let Some(f) = w.frames.get_mut(w.depth) {
        *f = ip;
        w.depth += 1;
    }
    if w.depth >= w.want {
        URC_END_OF_STACK
    } else {
        URC_NO_REASON
    }
}

/// Runs the contended acquisition `f` made at `caller`, sampling its stack and wait if its turn
/// has come (see the module comment).
#[inline]
pub(crate) fn contended<R>(caller: usize, f: impl FnOnce() -> R) -> R {
    let want = FRAMES.load(Ordering::Relaxed);
    if want == 0
        || caller == 0
        || !CONTENDED
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SAMPLE_EVERY)
        || SAMPLING.swap(true, Ordering::Acquire)
    {
        return f();
    }
    let mut w = Walk {
        caller,
        found: false,
        frames: [0; MAX_FRAMES],
        depth: 0,
        want,
    };
    // SAFETY: `on_frame` only reads the unwinder's context and writes into `w`, which outlives
    // the call; it never unwinds.
    unsafe { _Unwind_Backtrace(on_frame, (&mut w as *mut Walk).cast()) };
    SAMPLING.store(false, Ordering::Release);
    let start = now_ns();
    let r = f();
    if w.depth > 0 {
        record(
            w.frames.get(..w.depth).unwrap_or(&[]),
            now_ns().saturating_sub(start),
        );
    }
    r
}

fn record(frames: &[usize], wait_ns: u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &f in frames {
        h = (h ^ f as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let h = h.max(1);
    let start = (h % SLOTS as u64) as usize;
    for i in 0..SLOTS {
        let Some(slot) = TABLE.get((start + i) % SLOTS) else {
            return;
        };
        match slot.state.load(Ordering::Acquire) {
            READY if slot.hash.load(Ordering::Relaxed) == h => {
                slot.count.fetch_add(1, Ordering::Relaxed);
                slot.wait_ns.fetch_add(wait_ns, Ordering::Relaxed);
                return;
            }
            EMPTY => {
                if slot
                    .state
                    .compare_exchange(EMPTY, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                for (dst, &f) in slot.frames.iter().zip(frames) {
                    dst.store(f, Ordering::Relaxed);
                }
                slot.depth.store(frames.len(), Ordering::Relaxed);
                slot.hash.store(h, Ordering::Relaxed);
                slot.count.store(1, Ordering::Relaxed);
                slot.wait_ns.store(wait_ns, Ordering::Relaxed);
                // Release: a reader that sees READY sees the frames.
                slot.state.store(READY, Ordering::Release);
                return;
            }
            _ => {}
        }
    }
}

/// Calls `line` with each recorded stack: (count, total wait, frames).
pub(crate) fn for_each(mut line: impl FnMut(u64, u64, &[usize])) {
    for slot in &TABLE {
        if slot.state.load(Ordering::Acquire) != READY {
            continue;
        }
        let mut frames = [0usize; MAX_FRAMES];
        let depth = slot.depth.load(Ordering::Relaxed).min(MAX_FRAMES);
        for (dst, src) in frames.iter_mut().zip(&slot.frames) {
            *dst = src.load(Ordering::Relaxed);
        }
        line(
            slot.count.load(Ordering::Relaxed),
            slot.wait_ns.load(Ordering::Relaxed),
            frames.get(..depth).unwrap_or(&[]),
        );
    }
}
