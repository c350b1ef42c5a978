//! Debug-build tracking of the read locks each thread holds, to catch a plain `read` that would
//! deadlock behind a waiting writer. A small fixed table per thread: no allocation; a thread that
//! holds more read locks than it has entries is simply not checked for the extra ones. Release
//! builds (and loom) compile all of it away.
#[cfg(all(debug_assertions, not(loom), not(feature = "send_guard")))]
mod imp {
    use core::cell::Cell;

    const ENTRIES: usize = 16;

    thread_local! {
        static HELD: [Cell<usize>; ENTRIES] = const { [const { Cell::new(0) }; ENTRIES] };
    }

    #[inline]
    fn key<T>(lock: &T) -> usize {
        lock as *const T as usize
    }

    pub(crate) fn note_acquire<T>(lock: &T) {
        let k = key(lock);
        let _ = HELD.try_with(|h| {
            if let Some(c) = h.iter().find(|c| c.get() == 0) {
                c.set(k);
            }
        });
    }

    pub(crate) fn note_release<T>(lock: &T) {
        let k = key(lock);
        let _ = HELD.try_with(|h| {
            if let Some(c) = h.iter().find(|c| c.get() == k) {
                c.set(0);
            }
        });
    }

    pub(crate) fn check_not_reading<T>(lock: &T) {
        let k = key(lock);
        if HELD
            .try_with(|h| h.iter().any(|c| c.get() == k))
            .unwrap_or(false)
        {
            panic!(
                "scalelock::RwLock: this thread already holds a read lock on this lock and a \
                 writer is waiting, so this `read` would deadlock (the writer waits for this \
                 thread, this thread for the writer); take nested read locks with \
                 `read_recursive` (RawRwLock::lock_shared_recursive)"
            );
        }
    }
}

#[cfg(not(all(debug_assertions, not(loom), not(feature = "send_guard"))))]
mod imp {
    #[inline(always)]
    pub(crate) fn note_acquire<T>(_: &T) {}
    #[inline(always)]
    pub(crate) fn note_release<T>(_: &T) {}
    #[inline(always)]
    pub(crate) fn check_not_reading<T>(_: &T) {}
}

pub(crate) use imp::{check_not_reading, note_acquire, note_release};
