//! A machine-readable dump of every lockstat entry, for a reader in another process: the
//! `scalelock profile` command names code and data addresses from the program's own object
//! files after the program has exited, never on a lock path. Allocation-free, like
//! [`report_to_fd`](super::report_to_fd), so the preload library can write it at exit or from a
//! signal handler.
//!
//! One record per line, fields separated by one space, the free-text field last:
//!
//! ```text
//! scalelock-lockstat-dump 1
//! interval_ns N
//! sample_period N
//! dropped N
//! lock ADDR COUNTERS LABEL     LABEL: -  |  first CODE  |  name TEXT  |  created LINE FILE
//!                                     |  destroyed CODE
//! site ADDR COUNTERS SITE      SITE:  unknown  |  addr CODE  |  source LINE FILE
//! ```
//!
//! `ADDR` and `CODE` are hexadecimal (`0x..`); `COUNTERS` are the decimal values of
//! [`Counters::scalars`](super::Counters::scalars), in its order (every counter but the
//! histogram). Version 2 added the last two, `yields` and `yield_ns`; a version-1 dump has
//! every counter before them. `destroyed CODE` labels the row of the destroyed locks first
//! used at `CODE` (`0x0`: not known), whose `ADDR` is no lock's (see
//! [`raw::destroyed`](super::raw::destroyed)); a reader that does not know the label reads
//! it as no label. The row of dropped Rust locks created at one site, or of one name, has
//! the label of those locks (`created` or `name`) and an `ADDR` whose two low bits are set,
//! as every row of destroyed locks has.

use super::counters::Counters;
use super::report::FdWriter;
use super::table::{self, decode_site, Label, SiteKey, StoredLabel, SITE_TOTAL};
use core::fmt::Write as _;
use core::sync::atomic::Ordering;

/// The first line of a dump (it names the format and its version).
///
/// ```
/// assert_eq!(scalelock::stats::DUMP_MAGIC, "scalelock-lockstat-dump 2");
/// ```
pub const DUMP_MAGIC: &str = "scalelock-lockstat-dump 2";

pub(crate) fn write_dump_fd(fd: i32) {
    let mut w = FdWriter::new(fd);
    let _ = writeln!(w, "{DUMP_MAGIC}");
    let _ = writeln!(w, "interval_ns {}", super::interval_ns());
    let _ = writeln!(w, "sample_period {}", super::sample_period());
    let _ = writeln!(w, "dropped {}", table::DROPPED.load(Ordering::Relaxed));
    for (e, lock, site) in table::entries() {
        let c = Counters::from_entry(e);
        if c.is_zero() {
            continue;
        }
        let kind = if site == SITE_TOTAL { "lock" } else { "site" };
        let _ = write!(w, "{kind} {lock:#x}");
        for (_, value) in c.scalars() {
            let _ = write!(w, " {value}");
        }
        let _ = write!(w, " ");
        let _ = match decode_site(site) {
            // A C lock's fold names its first user; a Rust lock's carries the lock's label,
            // written as a live lock's (its odd address tells it apart).
            SiteKey::Total
                if table::is_fold(lock) && !matches!(e.label(), Some(StoredLabel::Given(_))) =>
            {
                writeln!(w, "destroyed {:#x}", table::fold_first_user(lock))
            }
            SiteKey::Total => match e.label() {
                None => writeln!(w, "-"),
                Some(StoredLabel::FirstUser(code)) => writeln!(w, "first {code:#x}"),
                Some(StoredLabel::Given(Label::Name(n))) => writeln!(w, "name {n}"),
                Some(StoredLabel::Given(Label::Created(l))) => {
                    writeln!(w, "created {} {}", l.line(), l.file())
                }
            },
            SiteKey::Unknown => writeln!(w, "unknown"),
            SiteKey::Address(code) => writeln!(w, "addr {code:#x}"),
            SiteKey::Location(l) => writeln!(w, "source {} {}", l.line(), l.file()),
        };
    }
    w.flush();
}
