//! Retiring a destroyed lock: its entries are folded into the rows of the destroyed locks that
//! share its origin, and freed for the locks the program creates next (see `table`'s module
//! docs). A C lock's origin is the function that first used it; a Rust lock's is its label:
//! the site that created it, or its name. A server that creates and destroys locks all the
//! time (MariaDB's metadata locks, a mutex each) keeps its live locks in rows of their own,
//! and what its destroyed ones waited stays in the report, by origin and by call site.
//!
//! It sits above the table and the counters: it reads an entry as [`Counters`] and adds them
//! into another entry, which neither of those modules knows how to do alone.

use super::counters::Counters;
use super::table::{self, Entry, Label, StoredLabel, SITE_TOTAL};
use core::sync::atomic::Ordering;

/// Folds the entries of the lock at `lock` into its fold's (see [`fold_of`]) and frees them;
/// whether the lock had entries. The program must no longer use the lock (it has destroyed
/// or dropped it); a lock created later at the same address starts with entries of its own.
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
    let (fold, label) = fold_of(total.label());
    for (e, site) in sites {
        fold_into(main, overflow, e, fold, site, None);
        e.free();
    }
    fold_into(main, overflow, total, fold, SITE_TOTAL, label);
    total.free();
    true
}

/// The pseudo-lock a lock labelled `label` folds into, and the label its totals carry: a C
/// lock's first user goes into the key (see [`table::fold_first_user`]), with no label; a Rust
/// lock folds by the address of its creation site or of its name (data, so never a C lock's
/// first user), and its fold carries that label for reports.
fn fold_of(label: Option<StoredLabel>) -> (usize, Option<Label>) {
    match label {
        Some(StoredLabel::FirstUser(code)) => (table::fold_lock(code), None),
        Some(StoredLabel::Given(l)) => (table::fold_lock(l.origin()), Some(l)),
        None => (table::fold_lock(0), None),
    }
}

/// Adds what `e` counted into the entry of `(fold, site)` (where neither table has room, the
/// fold counts as dropped), labelling that entry with `label` if it has none. An entry that
/// counted nothing (the interval was reset since) claims no fold entry.
fn fold_into(
    main: &'static [Entry],
    overflow: &'static [Entry],
    e: &Entry,
    fold: usize,
    site: usize,
    label: Option<Label>,
) {
    let c = Counters::from_entry(e);
    if c.is_zero() {
        return;
    }
    match table::record_entry_in(main, overflow, fold, site) {
        Some(d) => {
            // The overflow's entries are shared: none takes a lock's label.
            if let Some(l) =
                label.filter(|_| !overflow.as_ptr_range().contains(&(d as *const Entry)))
            {
                d.set_label_once(l);
            }
            c.add_to_entry(d);
        }
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
        // A Rust lock folds by its label (a name here), which its fold's totals carry.
        const POOL: &str = "pool";
        for lock in [0x5000, 0x6000] {
            let named = record_entry_in(main, over, lock, SITE_TOTAL).unwrap();
            named.set_label(Label::Name(POOL));
            named.acquisitions.fetch_add(1, Ordering::Relaxed);
            assert!(retire_in(main, over, lock));
        }
        let fold = table::fold_lock(POOL.as_ptr() as usize);
        assert_eq!(counters(fold, SITE_TOTAL).unwrap().acquisitions, 2);
        let e = record_entry_in(main, over, fold, SITE_TOTAL).unwrap();
        assert!(matches!(
            e.label(),
            Some(StoredLabel::Given(Label::Name(POOL)))
        ));
        // A lock without a label folds under "not known".
        let bare = record_entry_in(main, over, 0x7000, SITE_TOTAL).unwrap();
        bare.acquisitions.fetch_add(1, Ordering::Relaxed);
        assert!(retire_in(main, over, 0x7000));
        assert_eq!(
            counters(table::fold_lock(0), SITE_TOTAL)
                .unwrap()
                .acquisitions,
            1
        );
    }

    #[test]
    fn a_rust_lock_folds_by_its_creation_site() {
        static MAIN: [Entry; 16] = [const { Entry::new_for_tests() }; 16];
        static OVER: [Entry; 8] = [const { Entry::new_for_tests() }; 8];
        let here = core::panic::Location::caller();
        let site = table::site_of_location(here);
        for lock in [0x1000, 0x2000] {
            let total = record_entry_in(&MAIN, &OVER, lock, SITE_TOTAL).unwrap();
            total.set_label(Label::Created(here));
            total.acquisitions.fetch_add(3, Ordering::Relaxed);
            record_entry_in(&MAIN, &OVER, lock, site)
                .unwrap()
                .acquisitions
                .fetch_add(3, Ordering::Relaxed);
            assert!(retire_in(&MAIN, &OVER, lock));
        }
        let fold = table::fold_lock(Label::Created(here).origin());
        let find = |site: usize| MAIN.iter().find(|e| e.key() == Some((fold, site)));
        let total = find(SITE_TOTAL).unwrap();
        assert_eq!(Counters::from_entry(total).acquisitions, 6);
        assert!(matches!(total.label(), Some(StoredLabel::Given(Label::Created(l))) if l == here));
        // Its call site's row has no label of its own.
        let at_site = find(site).unwrap();
        assert_eq!(Counters::from_entry(at_site).acquisitions, 6);
        assert!(at_site.label().is_none());
        // Only the fold's two entries are left.
        assert_eq!(MAIN.iter().filter(|e| e.key().is_some()).count(), 2);
    }
}
