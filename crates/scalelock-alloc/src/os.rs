//! The few system calls the pool makes: reserve address space, commit it, give pages back.
//!
//! # Life of a page
//!
//! ```text
//!   reserve (mmap PROT_NONE, MAP_NORESERVE)      address space only: no memory, no commit charge
//!      | commit (mprotect READ|WRITE)            may fail under strict overcommit: the pool then
//!      v                                         forwards the request to the backing allocator
//!   committed, untouched ---- first write ----> resident
//!      ^                                           |
//!      +--------- purge (madvise DONTNEED) --------+   reads as zero again, RSS falls
//! ```
//!
//! Nothing here allocates, takes a lock or panics: these functions run inside `GlobalAlloc`.

use core::ptr;

/// Reserves `len` bytes of address space (no memory). Null on failure.
pub fn reserve(len: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Makes `[p, p + len)` of a reservation readable and writable. False when the kernel refuses
/// (commit limit). Committing an already committed range changes nothing.
///
/// # Safety
/// The range must lie inside a live reservation made by [`reserve`] and be page-aligned.
pub unsafe fn commit(p: *mut u8, len: usize) -> bool {
    // SAFETY: the caller guarantees the range is ours; mprotect only changes its protection.
    unsafe { libc::mprotect(p.cast(), len, libc::PROT_READ | libc::PROT_WRITE) == 0 }
}

/// Gives the pages of `[p, p + len)` back to the OS; they read as zero afterwards.
///
/// # Safety
/// The range must be committed, page-aligned, and hold no data anybody still needs.
pub unsafe fn purge(p: *mut u8, len: usize) {
    // SAFETY: the caller guarantees the range is ours and dead; DONTNEED on private anonymous
    // memory drops the pages and leaves the mapping in place. A failure (not expected on a valid
    // range) only leaves the pages resident, so it is ignored.
    unsafe {
        libc::madvise(p.cast(), len, libc::MADV_DONTNEED);
    }
}

/// Unmaps a whole reservation.
///
/// # Safety
/// `[p, p + len)` must be a reservation from [`reserve`] that nobody uses any more.
pub unsafe fn release(p: *mut u8, len: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        libc::munmap(p.cast(), len);
    }
}

/// A cheap monotonic clock in nanoseconds (CLOCK_MONOTONIC_COARSE: a vDSO read, ~4 ms ticks).
pub fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter; the clock id is supported on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n <= 0 {
        0
    } else {
        n as usize
    }
}
