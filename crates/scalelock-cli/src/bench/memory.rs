//! Memory figures of workloads that measure them per point (`large-alloc`, from its memory
//! phase: the same operations for every allocator): extra rows under the stdout table and extra
//! plots in the report. A point carries them in its JSON `params`
//! (see [`FIELDS`]); groups whose records have none are left alone.

use super::group::Group;
use super::stats::Record;
use std::fmt::Write as _;

/// The memory fields a point may carry in `params`, with their titles, in display order.
pub const FIELDS: [(&str, &str); 3] = [
    ("peak_rss_mib", "peak RSS over the memory phase"),
    ("rss_after_free_mib", "RSS after the last free"),
    ("rss_after_decay_mib", "RSS after the decay time"),
];

/// A figure of a record, if it has one.
pub type Metric = fn(&Record) -> Option<f64>;

/// The plots the report draws for a group with memory figures: title and metric.
pub const PLOTS: [(&str, Metric); 2] = [
    (
        "Peak RSS of the point's process over its memory phase (lower is better)",
        |r| field(r, "peak_rss_mib"),
    ),
    ("RSS after the decay time (lower is better)", |r| {
        field(r, "rss_after_decay_mib")
    }),
];

/// A memory field of a record, in MiB.
pub fn field(r: &Record, key: &str) -> Option<f64> {
    r.params.get(key).and_then(|v| v.as_f64())
}

/// Whether any record of the group carries memory figures.
pub fn has_memory(g: &Group<'_>) -> bool {
    g.series().iter().any(|s| {
        g.threads()
            .iter()
            .any(|&t| g.get(s, t).is_some_and(|r| field(r, FIELDS[0].0).is_some()))
    })
}

/// Formats MiB for plot axes and cells.
pub fn mib(v: f64) -> String {
    format!("{v:.0} MiB")
}

/// The rows appended under a group's throughput table: one block per field, one row per
/// series, columns as the table's (`width` for the name, 7 per cell). Empty without figures.
pub fn table_rows(g: &Group<'_>, width: usize) -> String {
    let mut out = String::new();
    if !has_memory(g) {
        return out;
    }
    let threads = g.threads();
    for (key, title) in FIELDS {
        let measured = g.series().iter().any(|s| {
            threads
                .iter()
                .any(|&t| g.get(s, t).and_then(|r| field(r, key)).is_some())
        });
        if !measured {
            continue;
        }
        let _ = writeln!(out, "  {title} (MiB)");
        for s in g.series() {
            let _ = write!(out, "  {s:<width$}");
            for &t in &threads {
                let cell = g
                    .get(s, t)
                    .and_then(|r| field(r, key))
                    .map_or("-".into(), |v| format!("{v:.0}"));
                let _ = write!(out, " {cell:>7}");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::group::groups;
    use crate::bench::output::tests::record;

    #[test]
    fn memory_rows_appear_only_for_records_that_carry_them() {
        let mut with = record("large-alloc", None, "system", 2, 100.0);
        with.params
            .insert("peak_rss_mib".into(), serde_json::json!(42.4));
        with.params
            .insert("rss_after_decay_mib".into(), serde_json::json!(7.0));
        let without = record("mutex-short", None, "std", 2, 100.0);
        let recs = vec![with, without];
        let gs = groups(&recs);
        let rows = table_rows(&gs[0], 10);
        assert!(
            rows.contains("peak RSS over the memory phase (MiB)") && rows.contains("42"),
            "{rows}"
        );
        assert!(rows.contains("RSS after the decay time (MiB)"), "{rows}");
        assert!(
            !rows.contains("after the last free"),
            "unmeasured field shown: {rows}"
        );
        assert_eq!(PLOTS[0].1(&recs[0]), Some(42.4));
        assert_eq!(table_rows(&gs[1], 10), "");
    }
}
