//! The number of the CPU the calling thread runs on, read where the kernel keeps it for the
//! thread: the `cpu_id` field of the thread's rseq area (Linux 4.18+), which glibc 2.35+
//! registers for every thread it starts and locates with `__rseq_offset`. That is one load from
//! thread-local memory, against a call into libc for `sched_getcpu` (which reads the same field,
//! or asks the kernel when there is none). Where there is no rseq area (older glibc, musl,
//! `glibc.pthread.rseq=0`, a thread whose registration failed), it falls back to `sched_getcpu`.
//!
//! A hint only: the thread may move to another CPU right after, and callers must stay correct
//! with any number (the biased rwlock takes it modulo its row count to pick a row of its
//! visible-readers table).

// Under Miri only the stand-in `current` below is used.
#![cfg_attr(miri, allow(dead_code))]

use core::sync::atomic::{AtomicIsize, Ordering};

/// `__rseq_offset` + 4 (the offset of `cpu_id` in `struct rseq`) from the thread pointer;
/// `UNKNOWN` until looked up, `NONE` when there is no rseq area to read.
static CPU_ID_OFFSET: AtomicIsize = AtomicIsize::new(UNKNOWN);
const UNKNOWN: isize = isize::MIN;
const NONE: isize = isize::MIN + 1;

/// Under Miri, which has neither rseq nor `sched_getcpu`: a number per thread stands in for the
/// CPU, so that threads still spread over per-CPU structures (the biased rwlock's rows).
#[cfg(miri)]
pub(crate) fn current() -> u32 {
    use core::sync::atomic::AtomicU32;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::thread_local!(static ID: u32 = NEXT.fetch_add(1, Ordering::Relaxed));
    ID.try_with(|id| *id).unwrap_or(0)
}

/// The CPU this thread runs on now (a hint; see the module docs).
#[cfg(not(miri))]
#[inline]
pub(crate) fn current() -> u32 {
    let off = CPU_ID_OFFSET.load(Ordering::Relaxed);
    if off > NONE {
        // Negative: this thread has no registered rseq area (-1 uninitialised, -2
        // registration failed).
        if let Some(cpu) = read_cpu_id(off) {
            return cpu;
        }
    } else if off == UNKNOWN {
        look_up();
    }
    current_slow()
}

#[cold]
fn current_slow() -> u32 {
    // SAFETY: sched_getcpu has no preconditions; -1 (error) maps to CPU 0.
    unsafe { libc::sched_getcpu() }.max(0) as u32
}

#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
#[inline]
fn read_cpu_id(off: isize) -> Option<u32> {
    let cpu: i32;
    // SAFETY: `off` is glibc's `__rseq_offset` (+4), the offset of this thread's rseq area
    // (`cpu_id`) from the thread pointer, which is `fs`'s base on x86-64; glibc reserves
    // that area in every thread's static TLS block, so the read is in bounds (its value is
    // negative if the area was not registered). A plain 32-bit load, no side effects.
    unsafe {
        core::arch::asm!(
            "mov {cpu:e}, dword ptr fs:[{off}]",
            off = in(reg) off,
            cpu = out(reg) cpu,
            options(nostack, readonly, preserves_flags),
        );
    }
    u32::try_from(cpu).ok()
}

#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "aarch64"))]
#[inline]
fn read_cpu_id(off: isize) -> Option<u32> {
    let tp: usize;
    // SAFETY: reads the thread pointer register; no side effects.
    unsafe {
        core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags));
    }
    // SAFETY: as on x86-64: `off` locates `cpu_id` in this thread's rseq area, which glibc
    // reserves in every thread's static TLS block, relative to the thread pointer.
    let cpu = unsafe { core::ptr::read_volatile((tp as isize + off) as *const i32) };
    u32::try_from(cpu).ok()
}

#[cfg(not(all(
    target_os = "linux",
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
#[inline]
fn read_cpu_id(_off: isize) -> Option<u32> {
    None
}

/// Finds glibc's rseq area: once per process, on the first call (racing threads find the
/// same). Like the biased rwlock's one-time `sysconf` for its row count, this look-up may
/// allocate (dlsym reports a missing symbol through a malloc'ed message, on glibc before
/// 2.35); no later call does.
#[cold]
fn look_up() {
    let off = if cfg!(all(
        target_os = "linux",
        target_env = "gnu",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )) {
        rseq_cpu_id_offset().unwrap_or(NONE)
    } else {
        NONE
    };
    CPU_ID_OFFSET.store(off, Ordering::Relaxed);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rseq_cpu_id_offset() -> Option<isize> {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names has no other preconditions.
    let (size, offset) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
        )
    };
    if size.is_null() || offset.is_null() {
        return None; // glibc before 2.35
    }
    // SAFETY: glibc exports `__rseq_size` as a `const unsigned int` and `__rseq_offset` as
    // a `const ptrdiff_t`, both set before any user code runs.
    let (size, offset) = unsafe { (*(size as *const u32), *(offset as *const isize)) };
    // 0: rseq not registered (disabled, or the kernel lacks it); `cpu_id` is bytes 4..8.
    (size >= 8).then_some(offset + 4)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn rseq_cpu_id_offset() -> Option<isize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sources name the CPU the thread is on: compared between two `sched_getcpu`
    /// calls that agree (no migration in between, except one away and back, which is rare
    /// enough that 9 in 10 must agree).
    fn agrees_with_sched_getcpu() {
        let (mut same, mut compared) = (0, 0);
        while compared < 1000 {
            let before = current_slow();
            let cpu = current();
            if current_slow() == before {
                compared += 1;
                same += u32::from(cpu == before);
            }
        }
        assert!(same >= 900, "{same} of {compared} agreed with sched_getcpu");
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no sched_getcpu or rseq area")]
    fn the_cpu_number_is_the_one_sched_getcpu_gives() {
        agrees_with_sched_getcpu();
        // Also in a thread that is not the first (its rseq area is elsewhere).
        std::thread::spawn(agrees_with_sched_getcpu).join().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no sched_getcpu or rseq area")]
    fn the_rseq_area_is_read_where_glibc_registered_one() {
        current();
        let off = CPU_ID_OFFSET.load(Ordering::Relaxed);
        let readable = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
        match rseq_cpu_id_offset() {
            Some(expected) if readable => {
                assert_eq!(off, expected);
                assert!(read_cpu_id(off).is_some(), "registered, yet no cpu_id");
            }
            // No rseq area (old glibc, musl, `glibc.pthread.rseq=0`): sched_getcpu only.
            _ => assert_eq!(off, NONE),
        }
    }
}
