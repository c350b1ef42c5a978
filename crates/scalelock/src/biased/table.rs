//! The process-wide visible-readers table: one 128-byte row of slots per CPU, where deferred
//! readers publish the lock they read (a two-row model of it under loom, a row per thread
//! chosen round-robin).

/// Slots per row of the visible-readers table.
pub(super) const SLOTS: usize = if cfg!(loom) { 2 } else { 16 };

/// The process-wide visible-readers table: one 128-byte row of slots per CPU.
#[cfg(not(loom))]
mod imp {
    use super::SLOTS;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// Rows in the static table; CPUs beyond it share rows (correct, only slower). A power of
    /// two, so that `slot` wraps ids with a mask.
    const MAX_ROWS: usize = 256;
    const _: () = assert!(MAX_ROWS.is_power_of_two());

    #[repr(align(128))]
    struct Row([AtomicUsize; SLOTS]);

    static TABLE: [Row; MAX_ROWS] =
        [const { Row([const { AtomicUsize::new(0) }; SLOTS]) }; MAX_ROWS];
    static ROWS: AtomicUsize = AtomicUsize::new(0);

    /// Rows in use: one per configured CPU (at most the table's size).
    #[inline]
    pub(crate) fn rows() -> usize {
        let n = ROWS.load(Ordering::Relaxed);
        if n != 0 {
            n
        } else {
            count_rows()
        }
    }

    #[cold]
    fn count_rows() -> usize {
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        let n = (cpus.max(1) as usize).min(MAX_ROWS);
        ROWS.store(n, Ordering::Relaxed);
        n
    }

    /// The row of the CPU this thread runs on (a hint: after a migration two threads may share
    /// a row for a moment, which is correct, only slower).
    #[inline]
    pub(crate) fn my_row() -> usize {
        let (cpu, rows) = (crate::cpu::current() as usize, rows());
        // CPU numbers are below the configured count but for CPUs added later: no division on
        // the readers' fast path.
        if cpu < rows {
            cpu
        } else {
            cpu % rows
        }
    }

    /// Slot `id` of the table, counted row by row (`row * SLOTS + index`). Ids beyond the
    /// table wrap around (callers pass ids below `rows() * SLOTS`; the wrap spares the
    /// readers' path a bounds check).
    #[inline]
    pub(crate) fn slot(id: usize) -> &'static AtomicUsize {
        &TABLE[(id / SLOTS) % MAX_ROWS].0[id % SLOTS]
    }
}

/// The loom model of the table: two rows, a row per thread chosen round-robin.
#[cfg(loom)]
mod imp {
    use super::SLOTS;
    use crate::sync::{AtomicUsize, Ordering};

    const ROWS: usize = 2;

    loom::lazy_static! {
        static ref TABLE: Vec<AtomicUsize> =
            (0..ROWS * SLOTS).map(|_| AtomicUsize::new(0)).collect();
        static ref NEXT_ROW: AtomicUsize = AtomicUsize::new(0);
    }

    loom::thread_local! {
        static ROW: core::cell::Cell<usize> = core::cell::Cell::new(usize::MAX);
    }

    pub(crate) fn rows() -> usize {
        ROWS
    }

    pub(crate) fn my_row() -> usize {
        ROW.with(|r| {
            if r.get() == usize::MAX {
                r.set(NEXT_ROW.fetch_add(1, Ordering::Relaxed) % ROWS);
            }
            r.get()
        })
    }

    pub(crate) fn slot(id: usize) -> &'static AtomicUsize {
        &TABLE[id]
    }
}

pub(super) use imp::{my_row, rows, slot};
