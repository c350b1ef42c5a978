//! Reads the report the preload library leaves when `scalelock profile` runs a program
//! (`SCALELOCK_LOCKSTAT_FORMAT=dump`): scalelock's lockstat dump (its format is described with
//! `scalelock::stats::dump_to_fd`), then the program's memory map between `maps` and `end`,
//! then sampled stacks of contended acquisitions (`stack COUNT WAIT_NS FRAME..`, frames as
//! hexadecimal return addresses, innermost first), one a line.

use super::symbols::Mapping;

/// The counters of one lock or (lock, call site), as the dump has them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    pub acquisitions: u64,
    pub contended: u64,
    pub timeouts: u64,
    pub spin_ns: u64,
    pub sleeps: u64,
    pub handoffs: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub hold_samples: u64,
    pub hold_ns: u64,
    pub max_hold_ns: u64,
}

impl Counters {
    /// Average sampled hold, in nanoseconds.
    pub fn avg_hold_ns(&self) -> u64 {
        self.hold_ns.checked_div(self.hold_samples).unwrap_or(0)
    }

    /// Adds `o` in (maxima are maxima).
    pub fn merge(&mut self, o: &Counters) {
        self.acquisitions += o.acquisitions;
        self.contended += o.contended;
        self.timeouts += o.timeouts;
        self.spin_ns += o.spin_ns;
        self.sleeps += o.sleeps;
        self.handoffs += o.handoffs;
        self.wait_ns += o.wait_ns;
        self.max_wait_ns = self.max_wait_ns.max(o.max_wait_ns);
        self.hold_samples += o.hold_samples;
        self.hold_ns += o.hold_ns;
        self.max_hold_ns = self.max_hold_ns.max(o.max_hold_ns);
    }
}

/// A per-lock line: the lock's address, counters, and the code address of its first user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockLine {
    pub addr: u64,
    pub counters: Counters,
    pub first_user: Option<u64>,
    pub name: Option<String>,
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

/// Parses a report; an error names the first line it cannot read.
pub fn parse(text: &str) -> Result<Dump, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l == scalelock::stats::DUMP_MAGIC => {}
        _ => {
            return Err(format!(
                "not a lockstat dump (no \"{}\")",
                scalelock::stats::DUMP_MAGIC
            ))
        }
    }
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
                let mut f = rest.splitn(13, ' ');
                let addr = f.next().and_then(hex).ok_or_else(bad)?;
                let mut c = [0u64; 11];
                for v in &mut c {
                    *v = f.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
                }
                let counters = Counters {
                    acquisitions: c[0],
                    contended: c[1],
                    timeouts: c[2],
                    spin_ns: c[3],
                    sleeps: c[4],
                    handoffs: c[5],
                    wait_ns: c[6],
                    max_wait_ns: c[7],
                    hold_samples: c[8],
                    hold_ns: c[9],
                    max_hold_ns: c[10],
                };
                let label = f.next().unwrap_or("-");
                let (kind, value) = label.split_once(' ').unwrap_or((label, ""));
                if key == "lock" {
                    d.locks.push(LockLine {
                        addr,
                        counters,
                        first_user: (kind == "first").then(|| hex(value)).flatten(),
                        name: (kind == "name").then(|| value.to_string()),
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
    }

    #[test]
    fn garbage_is_refused_with_its_line() {
        assert!(parse("hello").is_err());
        let e = parse("scalelock-lockstat-dump 1\nlock 0x10 1 2\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
    }
}
