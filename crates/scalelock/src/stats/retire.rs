//! Retiring a destroyed lock: its entries are folded into the rows of the destroyed locks that
//! the same function first used, and freed for the locks the program creates next (see
//! `table`'s module docs). A server that creates and destroys locks all the time (MariaDB's
//! metadata locks, a mutex each) keeps its live locks in rows of their own, and what its
//! destroyed ones waited stays in the report, by the function that first used them and by
//! call site.
//!
//! It sits above the table and the counters: it reads an entry as [`Counters`] and adds them
//! into another entry, which neither of those modules knows how to do alone.

use super::counters::Counters;
use super::table::{self, Entry, StoredLabel, SITE_TOTAL};
use core::sync::atomic::Ordering;

/// Folds the entries of the lock at `lock` into its [`table::fold_lock`]'s and frees them;
/// whether the lock had entries. The program must no longer use the lock (it has destroyed
/// it); a lock created later at the same address starts with entries of its own.
pub(crate) fn retire(lock: usize) -> bool {
    retire_in(&table::TABLE, &table::OVERFLOW, lock)
}

/// [`retire`] over the tables `main` and `overflow`.
pub(crate) fn retire_in(main: &'static [Entry], overflow: &'static [Entry], lock: usize) -> bool {
    // The pseudo-locks' rows are never retired.
    if table::is_fold(lock) || lock == table::OVERFLOW_LOCK {
        return false;
    }
    let Some((total, sites)) = table::lock_entries_in(main, lock) else {
        return false;
    };
    let first_user = match total.label() {
        Some(StoredLabel::FirstUser(code)) => code,
        _ => 0,
    };
    let fold = table::fold_lock(first_user);
    for (e, site) in sites {
        fold_into(main, overflow, e, fold, site);
        e.free();
    }
    // The fold's key names its first user (see `table::fold_first_user`): no label.
    fold_into(main, overflow, total, fold, SITE_TOTAL);
    total.free();
    true
}

/// Adds what `e` counted into the entry of `(fold, site)` (where neither table has room, the
/// fold counts as dropped). An entry that counted nothing (the interval was reset since)
/// claims no fold entry.
fn fold_into(
    main: &'static [Entry],
    overflow: &'static [Entry],
    e: &Entry,
    fold: usize,
    site: usize,
) {
    let c = Counters::from_entry(e);
    if c.is_zero() {
        return;
    }
    match table::record_entry_in(main, overflow, fold, site) {
        Some(d) => c.add_to_entry(d),
        None => {
            table::DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::table::{fold_first_user, record_entry_in, site_of_address, Label};
    use crate::stats::Wait;

    static MAIN: [Entry; 16] = [const { Entry::new_for_tests() }; 16];
    static OVER: [Entry; 8] = [const { Entry::new_for_tests() }; 8];

    fn tables() -> (&'static [Entry], &'static [Entry]) {
        (&MAIN, &OVER)
    }

    fn counters(lock: usize, site: usize) -> Option<Counters> {
        let (main, _) = tables();
        main.iter()
            .find(|e| e.key() == Some((lock, site)))
            .map(Counters::from_entry)
    }

    /// Records what the preload records of a C lock: acquisitions (first user `user`), and a
    /// wait of `wait_ns` at `caller`.
    fn use_lock(lock: usize, user: usize, caller: usize, wait_ns: u64) {
        let (main, over) = tables();
        let total = record_entry_in(main, over, lock, SITE_TOTAL).unwrap();
        total.acquisitions.fetch_add(10, Ordering::Relaxed);
        total.set_first_user(user);
        let w = Wait {
            wait_ns,
            ..Default::default()
        };
        total.add_wait(&w);
        record_entry_in(main, over, lock, site_of_address(caller))
            .unwrap()
            .add_wait(&w);
    }

    #[test]
    fn a_retired_lock_is_folded_by_first_user_and_its_entries_freed() {
        let (main, over) = tables();
        // Two locks first used by the same function, one by another, one never retired.
        use_lock(0x1000, 0x400, 0x500, 100);
        use_lock(0x2000, 0x400, 0x500, 300);
        use_lock(0x2000, 0x400, 0x600, 50);
        use_lock(0x3000, 0x700, 0x500, 7);
        use_lock(0x4000, 0x400, 0x500, 1);
        let used = |main: &[Entry]| main.iter().filter(|e| e.key().is_some()).count();
        assert_eq!(used(main), 9);

        assert!(retire_in(main, over, 0x1000));
        assert!(retire_in(main, over, 0x2000));
        assert!(retire_in(main, over, 0x3000));
        assert!(!retire_in(main, over, 0x2000), "nothing left to retire");
        // Their entries are gone; the live lock keeps its own.
        for lock in [0x1000, 0x2000, 0x3000] {
            assert!(main.iter().all(|e| e.key().map(|k| k.0) != Some(lock)));
        }
        assert_eq!(counters(0x4000, SITE_TOTAL).unwrap().wait_ns, 1);
        // The fold of 0x400's locks: their totals and each call site.
        let fold = table::fold_lock(0x400);
        assert_eq!(fold_first_user(fold), 0x400);
        let t = counters(fold, SITE_TOTAL).unwrap();
        assert_eq!((t.acquisitions, t.contended, t.wait_ns), (30, 3, 450));
        assert_eq!(t.max_wait_ns, 300);
        assert_eq!(counters(fold, site_of_address(0x500)).unwrap().wait_ns, 400);
        assert_eq!(counters(fold, site_of_address(0x600)).unwrap().wait_ns, 50);
        assert_eq!(
            counters(table::fold_lock(0x700), SITE_TOTAL)
                .unwrap()
                .wait_ns,
            7
        );
        // Folds are never retired themselves.
        assert!(!retire_in(main, over, fold));

        // A new lock at a retired address starts from nothing, in a freed slot if its probe
        // passes one; the live lock is still found past the tombstones.
        use_lock(0x1000, 0x800, 0x500, 5);
        let c = counters(0x1000, SITE_TOTAL).unwrap();
        assert_eq!((c.acquisitions, c.wait_ns), (10, 5));
        let e = record_entry_in(main, over, 0x1000, SITE_TOTAL).unwrap();
        assert!(matches!(e.label(), Some(StoredLabel::FirstUser(0x800))));
        assert_eq!(counters(0x4000, SITE_TOTAL).unwrap().wait_ns, 1);
        // A label given by name is not a first user: such a lock folds under "not known".
        let named = record_entry_in(main, over, 0x5000, SITE_TOTAL).unwrap();
        named.set_label(Label::Name("pool"));
        named.acquisitions.fetch_add(1, Ordering::Relaxed);
        assert!(retire_in(main, over, 0x5000));
        assert_eq!(
            counters(table::fold_lock(0), SITE_TOTAL)
                .unwrap()
                .acquisitions,
            1
        );
    }
}
