//! `scalelock profile`'s report: the preload library's dump of a program that has exited, with
//! every lock and caller named from the program's own object files (see [`symbols`]), sorted,
//! printed as a table and optionally written as JSON.
//!
//! Locks are named by their data symbol when they are static (`table_lock`), else as
//! `ADDRESS@first-caller`; callers as `function+0xoff` (`file:line` from DWARF beside it), else
//! `object+0xoffset`.

pub mod dump;
pub mod symbols;

use dump::{Counters, Dump};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use symbols::Symbolizer;

/// What the tables are sorted by (`--sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortKey {
    /// Total time waited.
    #[default]
    Wait,
    /// Contended acquisitions.
    Count,
    /// Longest single wait.
    Max,
    /// Total time held (sampled holds).
    Hold,
}

impl SortKey {
    fn key(self, c: &Counters) -> (u64, u64) {
        match self {
            SortKey::Wait => (c.wait_ns, c.contended),
            SortKey::Count => (c.contended, c.acquisitions),
            SortKey::Max => (c.max_wait_ns, c.wait_ns),
            SortKey::Hold => (c.hold_ns, c.max_hold_ns),
        }
    }
}

/// One call site of one lock.
#[derive(Clone, Debug, Serialize)]
pub struct SiteRow {
    pub lock: String,
    pub lock_addr: u64,
    pub caller: String,
    pub caller_addr: Option<u64>,
    pub source: Option<String>,
    #[serde(flatten, serialize_with = "dump::serialize_scalars")]
    pub counters: Counters,
}

/// One lock.
#[derive(Clone, Debug, Serialize)]
pub struct LockRow {
    pub lock: String,
    pub addr: u64,
    /// Whether `lock` is the data symbol of a static lock.
    pub static_symbol: bool,
    #[serde(flatten, serialize_with = "dump::serialize_scalars")]
    pub counters: Counters,
}

/// Sampled contended acquisitions with the same top frames.
#[derive(Clone, Debug, Serialize)]
pub struct StackRow {
    pub count: u64,
    pub wait_ns: u64,
    /// Innermost first: the program's call into the lock, then its callers.
    pub frames: Vec<symbols::CodeName>,
}

/// The named report.
#[derive(Clone, Debug, Serialize)]
pub struct Profile {
    pub interval_ns: u64,
    pub sample_period: u64,
    pub dropped: u64,
    pub sort: SortKey,
    pub sites: Vec<SiteRow>,
    pub locks: Vec<LockRow>,
    pub stacks: Vec<StackRow>,
}

/// Names and sorts what `d` holds; stacks are grouped by their top `stack_frames` frames.
pub fn build(d: &Dump, sort: SortKey, stack_frames: usize) -> Profile {
    let mut sym = Symbolizer::new(d.maps.clone());
    let mut code_names: HashMap<u64, symbols::CodeName> = HashMap::new();
    let mut code =
        |sym: &mut Symbolizer, a: u64| code_names.entry(a).or_insert_with(|| sym.code(a)).clone();
    let mut lock_names: HashMap<u64, (String, bool)> = HashMap::new();
    for l in &d.locks {
        let name = if l.destroyed {
            let gone = scalelock::stats::DESTROYED_LOCKS;
            match (l.first_user, &l.name) {
                (Some(first), _) => (format!("{gone}@{}", code(&mut sym, first).name), false),
                (None, Some(n)) => (format!("{n} {gone}"), false),
                (None, None) => (gone.to_string(), false),
            }
        } else if let Some(s) = sym.data(l.addr) {
            (s, true)
        } else if let Some(n) = &l.name {
            (n.clone(), false)
        } else if let Some(first) = l.first_user {
            (
                format!("{:#x}@{}", l.addr, code(&mut sym, first).name),
                false,
            )
        } else {
            (format!("{:#x}", l.addr), false)
        };
        lock_names.insert(l.addr, name);
    }
    let locks: Vec<LockRow> = d
        .locks
        .iter()
        .map(|l| {
            let (name, is_static) = lock_names
                .get(&l.addr)
                .cloned()
                .unwrap_or_else(|| (format!("{:#x}", l.addr), false));
            LockRow {
                lock: name,
                addr: l.addr,
                static_symbol: is_static,
                counters: l.counters,
            }
        })
        .collect();

    let mut lock_name = |sym: &mut Symbolizer, a: u64| {
        lock_names
            .entry(a)
            .or_insert_with(|| (sym.data(a).unwrap_or_else(|| format!("{a:#x}")), false))
            .0
            .clone()
    };

    let mut merged: HashMap<(u64, Option<u64>), Counters> = HashMap::new();
    for s in &d.sites {
        merged
            .entry((s.lock, s.caller))
            .or_default()
            .merge(&s.counters);
    }
    let sites: Vec<SiteRow> = merged
        .into_iter()
        .map(|((lock, caller), counters)| {
            let name = caller.map(|c| code(&mut sym, c));
            SiteRow {
                lock: lock_name(&mut sym, lock),
                lock_addr: lock,
                caller: name.as_ref().map_or_else(|| "-".into(), |n| n.name.clone()),
                caller_addr: caller,
                source: name.and_then(|n| n.source),
                counters,
            }
        })
        .collect();

    let mut groups: HashMap<Vec<u64>, (u64, u64)> = HashMap::new();
    for s in &d.stacks {
        let top: Vec<u64> = s.frames.iter().take(stack_frames.max(1)).copied().collect();
        let g = groups.entry(top).or_default();
        g.0 += s.count;
        g.1 += s.wait_ns;
    }
    let stacks: Vec<StackRow> = groups
        .into_iter()
        .map(|(frames, (count, wait_ns))| StackRow {
            count,
            wait_ns,
            frames: frames.into_iter().map(|f| code(&mut sym, f)).collect(),
        })
        .collect();
    let mut p = Profile {
        interval_ns: d.interval_ns,
        sample_period: d.sample_period,
        dropped: d.dropped,
        sort,
        sites,
        locks,
        stacks,
    };
    p.sort_rows();
    p
}

/// [`build`] for each process of a command (each leaves its own dump), in one report: the
/// rows of all, sorted together.
pub fn build_all(dumps: &[Dump], sort: SortKey, stack_frames: usize) -> Profile {
    let mut all = Profile {
        interval_ns: 0,
        sample_period: 0,
        dropped: 0,
        sort,
        sites: Vec::new(),
        locks: Vec::new(),
        stacks: Vec::new(),
    };
    for d in dumps {
        let p = build(d, sort, stack_frames);
        all.interval_ns = all.interval_ns.max(p.interval_ns);
        all.sample_period = all.sample_period.max(p.sample_period);
        all.dropped += p.dropped;
        all.sites.extend(p.sites);
        all.locks.extend(p.locks);
        all.stacks.extend(p.stacks);
    }
    all.sort_rows();
    all
}

/// A duration for the table: `850 ns`, `12.3 us`, `4.56 ms`, `1.23 s`.
pub fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

/// `dir/file.c:12` as `file.c:12`, for the table (the JSON keeps the whole path).
fn file_name(source: &str) -> &str {
    source.rsplit('/').next().unwrap_or(source)
}

impl Profile {
    fn sort_rows(&mut self) {
        let sort = self.sort;
        self.sites.sort_by(|a, b| {
            sort.key(&b.counters)
                .cmp(&sort.key(&a.counters))
                .then(a.lock.cmp(&b.lock))
                .then(a.caller.cmp(&b.caller))
        });
        self.locks.sort_by(|a, b| {
            sort.key(&b.counters)
                .cmp(&sort.key(&a.counters))
                .then(a.lock.cmp(&b.lock))
        });
        self.stacks
            .sort_by_key(|s| std::cmp::Reverse((s.wait_ns, s.count)));
    }

    /// The text tables, `top` rows each.
    pub fn text(&self, top: usize) -> String {
        let mut o = String::new();
        let contended: u64 = self.locks.iter().map(|l| l.counters.contended).sum();
        let waited: u64 = self.locks.iter().map(|l| l.counters.wait_ns).sum();
        let sort = match self.sort {
            SortKey::Wait => "wait",
            SortKey::Count => "count",
            SortKey::Max => "max",
            SortKey::Hold => "hold",
        };
        let _ = writeln!(
            o,
            "{contended} contended acquisitions, {} waited, over {} ({} locks{})",
            duration(waited),
            duration(self.interval_ns),
            self.locks.len(),
            if self.dropped > 0 {
                format!(
                    "; {} events dropped: lockstat's table was full",
                    self.dropped
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(o, "\nCall sites, by {sort} (top {top})");
        let _ = writeln!(
            o,
            "{:>9} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}  Caller [lock]",
            "Contended", "Wait", "Avg wait", "Max wait", "Holds", "Avg hold", "Max hold"
        );
        for s in self.sites.iter().take(top) {
            let c = &s.counters;
            let caller = match &s.source {
                Some(src) => format!("{} ({})", s.caller, file_name(src)),
                None => s.caller.clone(),
            };
            let _ = writeln!(
                o,
                "{:>9} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}  {caller} [{}]",
                c.contended,
                duration(c.wait_ns),
                duration(c.wait_ns.checked_div(c.contended).unwrap_or(0)),
                duration(c.max_wait_ns),
                c.hold_samples,
                duration(c.avg_hold_ns()),
                duration(c.max_hold_ns),
                s.lock
            );
        }
        let _ = writeln!(o, "\nLocks, by {sort} (top {top})");
        let _ = writeln!(
            o,
            "{:>10} {:>9} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}  Lock",
            "Acquired", "Contended", "Wait", "Yielded", "Max wait", "Holds", "Avg hold", "Max hold"
        );
        for l in self.locks.iter().take(top) {
            let c = &l.counters;
            let _ = writeln!(
                o,
                "{:>10} {:>9} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}  {}",
                c.acquisitions,
                c.contended,
                duration(c.wait_ns),
                duration(c.yield_ns),
                duration(c.max_wait_ns),
                c.hold_samples,
                duration(c.avg_hold_ns()),
                duration(c.max_hold_ns),
                l.lock
            );
        }
        if !self.stacks.is_empty() {
            let _ = writeln!(o, "\nContended stacks, sampled, by wait (top {top})");
            for s in self.stacks.iter().take(top) {
                let _ = writeln!(o, "{} samples, {} waited", s.count, duration(s.wait_ns));
                for f in &s.frames {
                    match &f.source {
                        Some(src) => writeln!(o, "    {} ({})", f.name, file_name(src)),
                        None => writeln!(o, "    {}", f.name),
                    }
                    .unwrap_or_default();
                }
            }
        }
        o
    }

    /// The whole report (every row) as JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(contended: u64, wait_ns: u64, max: u64, hold_ns: u64) -> Counters {
        Counters {
            acquisitions: 10,
            contended,
            wait_ns,
            max_wait_ns: max,
            hold_samples: 1,
            hold_ns,
            max_hold_ns: hold_ns,
            ..Default::default()
        }
    }

    fn sample() -> Dump {
        let site = |lock, caller, c| dump::SiteLine {
            lock,
            counters: c,
            caller: Some(caller),
        };
        Dump {
            interval_ns: 1_000_000,
            sample_period: 1,
            sites: vec![
                site(0x10, 0x1, counters(5, 100, 90, 1)),
                site(0x10, 0x2, counters(1, 500, 500, 2)),
                site(0x20, 0x3, counters(9, 50, 10, 900)),
            ],
            locks: vec![
                dump::LockLine {
                    addr: 0x10,
                    counters: counters(6, 600, 500, 3),
                    first_user: Some(0x1),
                    name: None,
                    destroyed: false,
                },
                dump::LockLine {
                    addr: 0x20,
                    counters: counters(9, 50, 10, 900),
                    first_user: None,
                    name: Some("pool".into()),
                    destroyed: false,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn every_sort_key_orders_the_rows() {
        let d = sample();
        let callers = |k| -> Vec<Option<u64>> {
            build(&d, k, 4)
                .sites
                .iter()
                .map(|s| s.caller_addr)
                .collect()
        };
        assert_eq!(callers(SortKey::Wait), vec![Some(2), Some(1), Some(3)]);
        assert_eq!(callers(SortKey::Count), vec![Some(3), Some(1), Some(2)]);
        assert_eq!(callers(SortKey::Max), vec![Some(2), Some(1), Some(3)]);
        assert_eq!(callers(SortKey::Hold), vec![Some(3), Some(2), Some(1)]);
        let p = build(&d, SortKey::Hold, 4);
        assert_eq!(p.locks[0].lock, "pool");
        // Without a memory map nothing is named beyond the address and the first caller.
        assert_eq!(p.locks[1].lock, "0x10@0x1");
        // The row of destroyed locks is named by its first user.
        let mut d = sample();
        d.locks[0].destroyed = true;
        d.locks[0].addr = 0x7;
        let p = build(&d, SortKey::Hold, 4);
        assert_eq!(p.locks[1].lock, "(destroyed)@0x1");
        // The row of a Rust program's dropped locks of one name is named by it.
        d.locks[1].destroyed = true;
        d.locks[1].addr = 0xb;
        let p = build(&d, SortKey::Hold, 4);
        assert_eq!(p.locks[0].lock, "pool (destroyed)");
    }

    #[test]
    fn text_and_json_carry_the_rows() {
        let mut d = sample();
        d.locks[0].counters.yields = 2;
        d.locks[0].counters.yield_ns = 450;
        let p = build(&d, SortKey::Wait, 4);
        let t = p.text(2);
        assert!(t.contains("Call sites, by wait (top 2)"), "{t}");
        assert!(t.contains("pool"), "{t}");
        // The lock that waited longest spent 450 ns of its 600 ns of waiting in yields.
        let row = t.lines().find(|l| l.ends_with("0x10@0x1")).unwrap();
        assert!(row.contains(" 600 ns     450 ns "), "{t}");
        assert!(t.contains("Yielded"), "{t}");
        let j: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(j["sites"].as_array().unwrap().len(), 3);
        assert_eq!(j["sort"], "wait");
        assert_eq!(j["locks"][0]["wait_ns"], 600);
        assert_eq!(j["locks"][0]["yields"], 2);
        assert_eq!(j["locks"][0]["yield_ns"], 450);
    }

    #[test]
    fn the_processes_of_a_command_share_one_report() {
        let mut other = sample();
        other.locks.truncate(1);
        other.locks[0].counters.wait_ns = 10_000;
        other.sites.clear();
        let p = build_all(&[sample(), other], SortKey::Wait, 4);
        assert_eq!(p.locks.len(), 3);
        assert_eq!(p.locks[0].counters.wait_ns, 10_000);
        assert_eq!(p.sites.len(), 3);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(12_345), "12.3 us");
        assert_eq!(duration(4_560_000), "4.56 ms");
        assert_eq!(duration(1_230_000_000), "1.23 s");
    }
}
