//! Reads the report the preload library leaves when `scalelock profile` runs a program
//! (`SCALELOCK_LOCKSTAT_FORMAT=dump`): scalelock's lockstat dump (its format is described with
//! `scalelock::stats::dump_to_fd`), then the program's memory map between `maps` and `end`,
//! then sampled stacks of contended acquisitions (`stack COUNT WAIT_NS FRAME..`, frames as
//! hexadecimal return addresses, innermost first), one a line.

use super::symbols::Mapping;

/// The counters of one lock or (lock, call site): the dump has every one of
/// [`Counters::scalars`], none of the histogram.
pub use scalelock::stats::Counters;

/// Serialises the counters the dump has, as the fields of the row that holds them (with
/// `#[serde(flatten, serialize_with = ...)]`), under their own names.
pub fn serialize_scalars<S: serde::Serializer>(c: &Counters, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap as _;
    let mut map = s.serialize_map(Some(Counters::SCALARS))?;
    for (name, value) in c.scalars() {
        map.serialize_entry(name, &value)?;
    }
    map.end()
}

/// A per-lock line: the lock's address, counters, and the code address of its first user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockLine {
    pub addr: u64,
    pub counters: Counters,
    pub first_user: Option<u64>,
    pub name: Option<String>,
    /// The row of the destroyed locks first used at `first_user` (`addr` is no lock's).
    pub destroyed: bool,
}

/// A per-call-site line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteLine {
    pub lock: u64,
    pub counters: Counters,
    /// The caller's return address (`None`: unknown).
    pub caller: Option<u64>,
}

/// A sampled stack of contended acquisitions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackLine {
    pub count: u64,
    pub wait_ns: u64,
    pub frames: Vec<u64>,
}

/// Everything the report holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dump {
    pub interval_ns: u64,
    pub sample_period: u64,
    pub dropped: u64,
    pub locks: Vec<LockLine>,
    pub sites: Vec<SiteLine>,
    pub maps: Vec<Mapping>,
    pub stacks: Vec<StackLine>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// The first line of a version-1 dump, written before lockstat counted yields: its lines
/// have every counter but the last two (`yields` and `yield_ns`, which read as 0).
const MAGIC_V1: &str = "scalelock-lockstat-dump 1";

/// Parses a report (a version-1 dump too); an error names the first line it cannot read.
pub fn parse(text: &str) -> Result<Dump, String> {
    let mut lines = text.lines().enumerate();
    // How many counters a lock or site line has.
    let scalars = match lines.next() {
        Some((_, l)) if l == scalelock::stats::DUMP_MAGIC => Counters::SCALARS,
        Some((_, l)) if l == MAGIC_V1 => Counters::SCALARS - 2,
        _ => {
            return Err(format!(
                "not a lockstat dump (no \"{}\")",
                scalelock::stats::DUMP_MAGIC
            ))
        }
    };
    let mut d = Dump::default();
    let mut in_maps = false;
    for (n, line) in lines {
        let bad = || format!("line {}: cannot read {line:?}", n + 1);
        if in_maps {
            if line == "end" {
                in_maps = false;
            } else if let Some(m) = Mapping::parse(line) {
                d.maps.push(m);
            }
            continue;
        }
        let mut f = line.splitn(2, ' ');
        let (key, rest) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
        match key {
            "interval_ns" => d.interval_ns = rest.parse().map_err(|_| bad())?,
            "sample_period" => d.sample_period = rest.parse().map_err(|_| bad())?,
            "dropped" => d.dropped = rest.parse().map_err(|_| bad())?,
            "maps" => in_maps = true,
            "lock" | "site" => {
                // The address, the counters, then the label (which may hold spaces).
                let mut f = rest.splitn(scalars + 2, ' ');
                let addr = f.next().and_then(hex).ok_or_else(bad)?;
                let mut counters = Counters::default();
                for (_, v) in counters.scalars_mut().into_iter().take(scalars) {
                    *v = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
                }
                let label = f.next().unwrap_or("-");
                let (kind, value) = label.split_once(' ').unwrap_or((label, ""));
                if key == "lock" {
                    // The row of destroyed locks: a C lock's names its first user, a Rust
                    // lock's has the lock's label and a key no lock's address has.
                    let destroyed = kind == "destroyed" || addr & 3 == 3;
                    d.locks.push(LockLine {
                        addr,
                        counters,
                        first_user: (kind == "first" || destroyed)
                            .then(|| hex(value))
                            .flatten()
                            .filter(|&code| code != 0),
                        name: (kind == "name").then(|| value.to_string()),
                        destroyed,
                    });
                } else {
                    d.sites.push(SiteLine {
                        lock: addr,
                        counters,
                        caller: (kind == "addr").then(|| hex(value)).flatten(),
                    });
                }
            }
            "stack" => {
                let mut f = rest.split(' ');
                let count = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
                let wait_ns = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
                let frames = f.map(hex).collect::<Option<Vec<_>>>().ok_or_else(bad)?;
                d.stacks.push(StackLine {
                    count,
                    wait_ns,
                    frames,
                });
            }
            "" => {}
            _ => return Err(bad()),
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_parses() {
        let text = "scalelock-lockstat-dump 1\ninterval_ns 5\nsample_period 4096\ndropped 0\n\
                    lock 0x10 3 1 0 0 1 0 700 700 2 40 30 first 0x400\n\
                    site 0x10 0 1 0 0 1 0 700 700 0 0 0 addr 0x401\n\
                    site 0x10 0 0 0 0 0 0 0 0 1 5 5 unknown\n\
                    maps\n00400000-00401000 r-xp 00000000 fe:00 1 /bin/x\nend\n\
                    stack 4 900 0x401 0x502\n";
        let d = parse(text).unwrap();
        assert_eq!(d.interval_ns, 5);
        assert_eq!(d.locks[0].first_user, Some(0x400));
        assert_eq!(d.locks[0].counters.max_hold_ns, 30);
        assert_eq!(d.sites[0].caller, Some(0x401));
        assert_eq!(d.sites[1].caller, None);
        assert_eq!(d.maps.len(), 1);
        assert_eq!(d.stacks[0].frames, vec![0x401, 0x502]);
        // Version 1 had no yields.
        assert_eq!(d.locks[0].counters.yields, 0);
        let v2 = text
            .replace("dump 1", "dump 2")
            .replace(" 40 30 first", " 40 30 4 9000 first")
            .replace(" 0 0 0 addr", " 0 0 0 0 0 addr")
            .replace(" 1 5 5 unknown", " 1 5 5 0 0 unknown");
        let d = parse(&v2).unwrap();
        assert_eq!(d.locks[0].counters.max_hold_ns, 30);
        assert_eq!(
            (d.locks[0].counters.yields, d.locks[0].counters.yield_ns),
            (4, 9_000)
        );
        assert_eq!(d.locks[0].first_user, Some(0x400));
        // The row of destroyed locks, with its first user or without.
        let folded = v2.replace("first 0x400", "destroyed 0x400");
        let d = parse(&folded).unwrap();
        assert!(d.locks[0].destroyed);
        assert_eq!(d.locks[0].first_user, Some(0x400));
        let d = parse(&v2.replace("first 0x400", "destroyed 0x0")).unwrap();
        assert!(d.locks[0].destroyed);
        assert_eq!(d.locks[0].first_user, None);
        // A Rust program's dropped locks of one name: the name, at a fold's key.
        let named = v2
            .replace("lock 0x10 ", "lock 0x1003 ")
            .replace("first 0x400", "name pool");
        let d = parse(&named).unwrap();
        assert!(d.locks[0].destroyed);
        assert_eq!(d.locks[0].name.as_deref(), Some("pool"));
        // A live lock's name.
        let d = parse(&v2.replace("first 0x400", "name pool")).unwrap();
        assert!(!d.locks[0].destroyed);
        // A version-1 line read as version 2 runs out of counters: the label is no number.
        let short = text.replace("dump 1", "dump 2");
        assert!(parse(&short).is_err());
    }

    /// Every counter goes through scalelock's dump writer and this parser with its own
    /// value, so that a counter missing, added or moved on one side shows.
    #[test]
    fn every_counter_round_trips_through_the_dump() {
        use scalelock::stats::{self, raw};
        use std::io::{Read as _, Seek as _};
        use std::os::fd::AsRawFd as _;

        static LOCK: u64 = 0; // stands in for a C lock: only its address is used
        let lock = &LOCK as *const u64 as usize;
        let caller = 0x4242;
        stats::enable();
        for _ in 0..7 {
            raw::acquired(lock, 0);
        }
        // (wait, spun, sleeps, hand-off, acquired)
        for (wait, spun, sleeps, handoff, ok) in [
            (1_000, 100, 2, true, true),
            (5_000, 300, 4, false, false),
            (2_500, 40, 0, true, true),
        ] {
            raw::contended(lock, caller, wait, spun, sleeps, handoff, ok);
        }
        let yielded = stats::Wait {
            wait_ns: 700,
            yields: 2,
            yield_ns: 1_700,
            handoff: true,
            ..Default::default()
        };
        raw::waited(lock, caller, &yielded);
        for hold in [900, 2_000, 3_300, 10, 20] {
            raw::held(lock, caller, hold);
        }
        stats::disable();
        let path =
            std::env::temp_dir().join(format!("scalelock-dump-round-trip-{}", std::process::id()));
        let mut file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        stats::dump_to_fd(file.as_raw_fd());
        let recorded = stats::report();
        let mut text = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut text).unwrap();

        let d = parse(&text).unwrap();
        let parsed = d.locks.iter().find(|l| l.addr == lock as u64).unwrap();
        let expected = Counters {
            acquisitions: 7,
            contended: 4,
            timeouts: 1,
            spin_ns: 440,
            sleeps: 6,
            handoffs: 3,
            wait_ns: 9_200,
            max_wait_ns: 5_000,
            hold_samples: 5,
            hold_ns: 6_230,
            max_hold_ns: 3_300,
            yields: 2,
            yield_ns: 1_700,
            ..Default::default()
        };
        assert_eq!(parsed.counters, expected, "{text}");
        let mut values: Vec<u64> = expected.scalars().iter().map(|s| s.1).collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(
            values.len(),
            Counters::SCALARS,
            "every counter its own value"
        );
        assert!(!values.contains(&0), "every counter its own value");
        let reported = recorded.locks.iter().find(|l| l.lock.addr == lock).unwrap();
        assert_eq!(
            reported.counters.scalars(),
            expected.scalars(),
            "the dump says what the report says"
        );
        let site = d
            .sites
            .iter()
            .find(|s| s.lock == lock as u64 && s.caller == Some(caller as u64))
            .unwrap();
        let site_expected = Counters {
            acquisitions: 0,
            ..expected
        };
        assert_eq!(site.counters, site_expected, "{text}");
    }

    #[test]
    fn garbage_is_refused_with_its_line() {
        assert!(parse("hello").is_err());
        let e = parse("scalelock-lockstat-dump 1\nlock 0x10 1 2\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }
}
