//! Reading the table: the [`Report`] data, its text table (lockstat style) and JSON, and the
//! allocation-free writer behind [`report_to_fd`](super::report_to_fd).
//!
//! The text formatter works on rows and a `core::fmt::Write` sink, so that the allocating
//! [`Report`] and the no-allocation fd writer (for the preload library, at process exit) print
//! exactly the same table.

use super::counters::Counters;
use super::table::{self, decode_site, Entry, Label, SiteKey, StoredLabel, SITE_TOTAL};
use core::fmt::{self, Write as _};
use core::panic::Location;
use core::sync::atomic::Ordering;

/// Where a lock was acquired (or created).
///
/// ```
/// use scalelock::stats::Site;
/// let s = Site::Source { file: "src/db/table.rs", line: 120 };
/// assert_eq!(s.to_string(), "src/db/table.rs:120");
/// assert_eq!(format!("{:#}", s), "db/table.rs:120"); // short form used in the text table
/// assert_eq!(Site::Unknown.to_string(), "-");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// A Rust source location (`#[track_caller]`).
    Source {
        /// Source file, as the compiler names it.
        file: &'static str,
        /// Line number.
        line: u32,
    },
    /// A code address (a C caller's return address, from the preload library). Displayed as
    /// `symbol+0xoffset` when the dynamic symbol table knows it.
    Address(usize),
    /// Not known: the raw lock_api path, or a condvar waiter re-taking its mutex.
    Unknown,
}

impl Site {
    pub(crate) fn from_location(l: &'static Location<'static>) -> Site {
        Site::Source {
            file: l.file(),
            line: l.line(),
        }
    }

    fn from_key(site: usize) -> Site {
        match decode_site(site) {
            SiteKey::Location(l) => Site::from_location(l),
            SiteKey::Address(a) => Site::Address(a),
            SiteKey::Total | SiteKey::Unknown => Site::Unknown,
        }
    }
}

/// The last two components of a path: `crates/x/src/db.rs` -> `src/db.rs`.
fn short_path(file: &str) -> &str {
    let b = file.as_bytes();
    let mut seps = 0;
    for i in (0..b.len()).rev() {
        if b[i] == b'/' || b[i] == b'\\' {
            seps += 1;
            if seps == 2 {
                return &file[i + 1..];
            }
        }
    }
    file
}

impl fmt::Display for Site {
    /// `file:line` (`{:#}`: only the last two path components), `symbol+0xoff` or `0xaddr`
    /// for a code address, `-` if unknown. Honours width and precision.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = StackStr::<160>::new();
        match *self {
            Site::Source { file, line } => {
                let file = if f.alternate() {
                    short_path(file)
                } else {
                    file
                };
                let _ = write!(buf, "{file}:{line}");
            }
            Site::Address(a) => write_symbol(&mut buf, a),
            Site::Unknown => buf.push_str("-"),
        }
        f.pad(buf.as_str())
    }
}

/// Resolves a code address with `dladdr` (no allocation: it returns pointers into the loaded
/// object's string table).
fn write_symbol(buf: &mut StackStr<160>, addr: usize) {
    // SAFETY: an all-zero Dl_info is a valid value (null pointers).
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads `addr` as a number and fills `info`.
    let found = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } != 0;
    if found && !info.dli_sname.is_null() {
        // SAFETY: dli_sname is a NUL-terminated string owned by the loaded object.
        let name = unsafe { core::ffi::CStr::from_ptr(info.dli_sname) };
        let off = addr.wrapping_sub(info.dli_saddr as usize);
        let _ = write!(buf, "{}+{:#x}", name.to_str().unwrap_or("?"), off);
    } else {
        let _ = write!(buf, "{addr:#x}");
    }
}

/// Identifies a lock in a report.
///
/// ```
/// use scalelock::stats::{LockId, Site};
/// let named = LockId { addr: 0x1000, name: Some("table_cache"), created: None };
/// assert_eq!(named.to_string(), "table_cache");
/// let site = Site::Source { file: "src/pool.rs", line: 7 };
/// let anon = LockId { addr: 0x1000, name: None, created: Some(site) };
/// assert_eq!(anon.to_string(), "0x1000@src/pool.rs:7");
/// assert_eq!(LockId { addr: 0x1000, name: None, created: None }.to_string(), "0x1000");
/// let gone = LockId { addr: 0x10003, name: Some("(destroyed)"), created: Some(site) };
/// assert_eq!(gone.to_string(), "(destroyed)@src/pool.rs:7");
/// let gone_named = LockId { addr: 0x10003, name: Some("table_cache"), created: None };
/// assert_eq!(gone_named.to_string(), "table_cache (destroyed)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockId {
    /// Address of the raw lock (for a row of destroyed locks, see `name`, a key that is no
    /// lock's address: odd).
    pub addr: usize,
    /// Name given with [`Mutex::with_name`](crate::Mutex::with_name) (or the C API); or
    /// `(destroyed)`: a row that holds what destroyed locks recorded (C locks destroyed
    /// through [`raw::destroyed`](crate::stats::raw::destroyed), Rust locks dropped), one row
    /// (and its call sites) per function that first used them, or per site that created
    /// them, named in `created`. Dropped Rust locks that had a name are in a row of that name
    /// at an odd `addr`, shown as `name (destroyed)`.
    pub name: Option<&'static str>,
    /// Where an unnamed [`Mutex`](crate::Mutex) was created; for a C lock recorded through
    /// [`raw::acquired_by`](crate::stats::raw::acquired_by), the function that first used it.
    pub created: Option<Site>,
}

impl LockId {
    fn from_label(addr: usize, label: Option<StoredLabel>) -> LockId {
        if table::is_fold(addr) {
            // A Rust lock's fold carries its label (see `retire`); a C lock's names its
            // first user in its key.
            return match label {
                Some(StoredLabel::Given(Label::Created(l))) => LockId {
                    addr,
                    name: Some(table::FOLD_NAME),
                    created: Some(Site::from_location(l)),
                },
                Some(StoredLabel::Given(Label::Name(n))) => LockId {
                    addr,
                    name: Some(n),
                    created: None,
                },
                _ => {
                    let first_user = table::fold_first_user(addr);
                    LockId {
                        addr,
                        name: Some(table::FOLD_NAME),
                        created: (first_user != 0).then_some(Site::Address(first_user)),
                    }
                }
            };
        }
        match label {
            None => LockId {
                addr,
                name: None,
                created: None,
            },
            Some(StoredLabel::Given(Label::Name(n))) => LockId {
                addr,
                name: Some(n),
                created: None,
            },
            Some(StoredLabel::Given(Label::Created(l))) => LockId {
                addr,
                name: None,
                created: Some(Site::from_location(l)),
            },
            Some(StoredLabel::FirstUser(code)) => LockId {
                addr,
                name: None,
                created: Some(Site::Address(code)),
            },
        }
    }
}

impl fmt::Display for LockId {
    /// The name (`name@site` where it has a site too: the destroyed locks first used or
    /// created there; `name (destroyed)` for the dropped locks of that name), else
    /// `0xaddr@creation-site`, else `0xaddr`. `{:#}` shortens the site's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = StackStr::<160>::new();
        match (self.name, self.created) {
            // A name with a site: the destroyed locks first used there.
            (Some(n), Some(s)) if f.alternate() => {
                let _ = write!(buf, "{n}@{s:#}");
            }
            (Some(n), Some(s)) => {
                let _ = write!(buf, "{n}@{s}");
            }
            // The dropped locks of that name (a fold's key is no lock's address).
            (Some(n), None) if table::is_fold(self.addr) && n != table::FOLD_NAME => {
                let _ = write!(buf, "{n} {}", table::FOLD_NAME);
            }
            (Some(n), None) => buf.push_str(n),
            (None, Some(s)) if f.alternate() => {
                let _ = write!(buf, "{:#x}@{:#}", self.addr, s);
            }
            (None, Some(s)) => {
                let _ = write!(buf, "{:#x}@{}", self.addr, s);
            }
            (None, None) => {
                let _ = write!(buf, "{:#x}", self.addr);
            }
        }
        f.pad(buf.as_str())
    }
}

/// One lock's totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockReport {
    /// The lock.
    pub lock: LockId,
    /// Its counters.
    pub counters: Counters,
}

/// One lock at one call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteReport {
    /// The lock.
    pub lock: LockId,
    /// The call site.
    pub site: Site,
    /// Counters recorded at this site.
    pub counters: Counters,
}

/// Everything recorded in the current interval. Print it with `{}` (the lockstat-style text
/// table), [`write_text`](Report::write_text), or serialise it with [`to_json`](Report::to_json).
///
/// ```
/// use scalelock::stats::{Counters, LockId, LockReport, Report, Site, SiteReport};
/// let lock = LockId { addr: 0x10, name: Some("log"), created: None };
/// let c = Counters { acquisitions: 10, contended: 2, wait_ns: 3_000, max_wait_ns: 2_000,
///                    ..Default::default() };
/// let r = Report {
///     enabled: true, interval_ns: 1_000_000_000, sample_period: 1024, dropped: 0,
///     locks: vec![LockReport { lock, counters: c }],
///     sites: vec![SiteReport { lock, site: Site::Source { file: "src/log.rs", line: 9 },
///                              counters: c }],
/// };
/// assert!(r.to_string().contains("src/log.rs:9"));
/// assert!(r.to_json().starts_with("{\"enabled\":true"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Whether recording is on now.
    pub enabled: bool,
    /// Nanoseconds since the interval started ([`reset`](super::reset) or the first
    /// [`enable`](super::enable)).
    pub interval_ns: u64,
    /// Hold times and per-site acquisitions are sampled once per this many acquisitions.
    pub sample_period: u64,
    /// Events not recorded because the table was full. Where the table is full around a lock's
    /// slot, the lock's acquisitions and waits (and a C lock's holds) are recorded under one more
    /// lock row, named `(other locks: table full)`, by call site; only where that small overflow
    /// is full too is an event dropped. A Rust `Mutex` there has no hold times: timing a hold
    /// needs an entry of the lock's own.
    pub dropped: u64,
    /// Locks, by total wait time (longest first), then by acquisitions.
    pub locks: Vec<LockReport>,
    /// Call sites, by total wait time (longest first), then by acquisitions.
    pub sites: Vec<SiteReport>,
}

impl Report {
    /// Reads the table.
    pub(crate) fn collect() -> Report {
        let mut locks: Vec<LockReport> = Vec::new();
        let mut sites: Vec<SiteReport> = Vec::new();
        let mut totals: Vec<(usize, Option<StoredLabel>)> = Vec::new();
        for (e, lock, site) in table::entries() {
            if site == SITE_TOTAL {
                totals.push((lock, e.label()));
            }
        }
        totals.sort_by_key(|t| t.0);
        let label_of = |lock: usize| match totals.binary_search_by_key(&lock, |t| t.0) {
            Ok(i) => totals[i].1,
            Err(_) => None,
        };
        for (e, lock, site) in table::entries() {
            let c = Counters::from_entry(e);
            if c.is_zero() {
                continue;
            }
            let id = LockId::from_label(lock, label_of(lock));
            if site == SITE_TOTAL {
                match locks.iter_mut().find(|l| l.lock.addr == lock) {
                    Some(l) => l.counters.merge(&c),
                    None => locks.push(LockReport {
                        lock: id,
                        counters: c,
                    }),
                }
            } else {
                let s = Site::from_key(site);
                match sites
                    .iter_mut()
                    .find(|r| r.lock.addr == lock && r.site == s)
                {
                    Some(r) => r.counters.merge(&c),
                    None => sites.push(SiteReport {
                        lock: id,
                        site: s,
                        counters: c,
                    }),
                }
            }
        }
        locks.sort_by(|a, b| {
            (b.counters.wait_ns, b.counters.acquisitions)
                .cmp(&(a.counters.wait_ns, a.counters.acquisitions))
        });
        sites.sort_by(|a, b| {
            (b.counters.wait_ns, b.counters.acquisitions)
                .cmp(&(a.counters.wait_ns, a.counters.acquisitions))
        });
        Report {
            enabled: super::enabled(),
            interval_ns: super::interval_ns(),
            sample_period: super::sample_period(),
            dropped: table::DROPPED.load(Ordering::Relaxed),
            locks,
            sites,
        }
    }

    /// Writes the text table (what `{}` prints).
    ///
    /// ```
    /// let mut s = String::new();
    /// scalelock::stats::report().write_text(&mut s).unwrap();
    /// assert!(s.starts_with("scalelock lockstat"));
    /// ```
    pub fn write_text(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let header = Header {
            events: self.locks.iter().map(|l| l.counters.contended).sum(),
            wait_ns: self.locks.iter().map(|l| l.counters.wait_ns).sum(),
            interval_ns: self.interval_ns,
            sample_period: self.sample_period,
            dropped: self.dropped,
            enabled: self.enabled,
        };
        write_header(w, &header)?;
        write_sites(
            w,
            header.wait_ns,
            &mut self
                .sites
                .iter()
                .filter(|s| s.counters.contended > 0)
                .map(|s| SiteRow {
                    lock: s.lock,
                    site: s.site,
                    counters: s.counters,
                }),
        )?;
        write_locks(w, &mut self.locks.iter().map(|l| (l.lock, l.counters)))
    }

    /// The report as one JSON object:
    /// `{"enabled", "interval_ns", "sample_period", "dropped", "locks": [{"lock": {"addr",
    /// "name", "created"}, ...counters}], "sites": [{"lock", "site", ...counters}]}`, counters as
    /// in [`Counters`] (field names unchanged, `wait_histogram` an array of 32 numbers).
    ///
    /// ```
    /// let json = scalelock::stats::report().to_json();
    /// assert!(json.contains("\"locks\":["));
    /// ```
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"enabled\":{},\"interval_ns\":{},\"sample_period\":{},\"dropped\":{},\"locks\":[",
            self.enabled, self.interval_ns, self.sample_period, self.dropped
        );
        for (i, l) in self.locks.iter().enumerate() {
            s.push_str(if i == 0 { "{" } else { ",{" });
            json_lock(&mut s, &l.lock);
            json_counters(&mut s, &l.counters);
            s.push('}');
        }
        s.push_str("],\"sites\":[");
        for (i, r) in self.sites.iter().enumerate() {
            s.push_str(if i == 0 { "{" } else { ",{" });
            json_lock(&mut s, &r.lock);
            s.push_str(",\"site\":");
            json_site(&mut s, &r.site);
            json_counters(&mut s, &r.counters);
            s.push('}');
        }
        s.push_str("]}");
        s
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_text(f)
    }
}

fn json_str(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

fn json_site(s: &mut String, site: &Site) {
    match *site {
        Site::Source { file, line } => {
            s.push_str("{\"file\":");
            json_str(s, file);
            let _ = write!(s, ",\"line\":{line}}}");
        }
        Site::Address(a) => {
            let mut buf = StackStr::<160>::new();
            write_symbol(&mut buf, a);
            let _ = write!(s, "{{\"address\":{a},\"symbol\":");
            json_str(s, buf.as_str());
            s.push('}');
        }
        Site::Unknown => s.push_str("null"),
    }
}

fn json_lock(s: &mut String, l: &LockId) {
    let _ = write!(s, "\"lock\":{{\"addr\":{},\"name\":", l.addr);
    match l.name {
        Some(n) => json_str(s, n),
        None => s.push_str("null"),
    }
    s.push_str(",\"created\":");
    match &l.created {
        Some(c) => json_site(s, c),
        None => s.push_str("null"),
    }
    s.push('}');
}

fn json_counters(s: &mut String, c: &Counters) {
    for (name, value) in c.scalars() {
        let _ = write!(s, ",\"{name}\":{value}");
    }
    s.push_str(",\"wait_histogram\":[");
    for (i, h) in c.wait_histogram.iter().enumerate() {
        let _ = write!(s, "{}{h}", if i == 0 { "" } else { "," });
    }
    s.push(']');
}

// ---------------------------------------------------------------------------------------------
// Text table, shared by `Report` and the fd writer
// ---------------------------------------------------------------------------------------------

pub(crate) struct Header {
    pub(crate) events: u64,
    pub(crate) wait_ns: u64,
    pub(crate) interval_ns: u64,
    pub(crate) sample_period: u64,
    pub(crate) dropped: u64,
    pub(crate) enabled: bool,
}

pub(crate) struct SiteRow {
    pub(crate) lock: LockId,
    pub(crate) site: Site,
    pub(crate) counters: Counters,
}

/// A duration for the table: `850ns`, `12.3us`, `4.50ms`, `1.20s` (truncated, not rounded).
/// Honours width.
pub(crate) struct Dur(pub(crate) u64);

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = StackStr::<32>::new();
        let ns = self.0;
        let _ = match ns {
            0..=999 => write!(b, "{ns}ns"),
            1_000..=999_999 => write!(b, "{}.{}us", ns / 1000, ns % 1000 / 100),
            1_000_000..=999_999_999 => {
                write!(b, "{}.{:02}ms", ns / 1_000_000, ns % 1_000_000 / 10_000)
            }
            _ => write!(
                b,
                "{}.{:02}s",
                ns / 1_000_000_000,
                ns % 1_000_000_000 / 10_000_000
            ),
        };
        f.pad(b.as_str())
    }
}

/// A [`Dur`], or `-` when nothing was measured (no hold sampled). Honours width.
pub(crate) struct OptDur(pub(crate) Option<u64>);

impl fmt::Display for OptDur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(ns) => Dur(ns).fmt(f),
            None => f.pad("-"),
        }
    }
}

/// An integer percentage of `part` in `whole`.
fn pct(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        ((part as u128 * 100 + whole as u128 / 2) / whole as u128) as u64
    }
}

const RULE: &str = "----------------------------------------------------------------------------------------------------------------------------\n";

pub(crate) fn write_header(w: &mut dyn fmt::Write, h: &Header) -> fmt::Result {
    writeln!(
        w,
        "scalelock lockstat: {} contention events, {} total wait, in {} (recording {}; hold times sampled 1 in {})",
        h.events,
        Dur(h.wait_ns),
        Dur(h.interval_ns),
        if h.enabled { "on" } else { "off" },
        h.sample_period
    )?;
    if h.dropped > 0 {
        writeln!(
            w,
            "warning: {} events dropped (lockstat table full)",
            h.dropped
        )?;
    }
    Ok(())
}

/// The contention table: one row per (lock, caller), sorted by the caller of this function by
/// total wait; `indv` and `cuml` are shares of the total wait time `total_wait`.
pub(crate) fn write_sites(
    w: &mut dyn fmt::Write,
    total_wait: u64,
    rows: &mut dyn Iterator<Item = SiteRow>,
) -> fmt::Result {
    write!(
        w,
        "\n{:>9} {:>5} {:>5} {:>9} {:>9} {:>9}  {:<32} Caller\n{RULE}",
        "Count", "indv", "cuml", "wait", "avg wait", "max wait", "Lock"
    )?;
    let mut cuml = 0u64;
    for r in rows {
        cuml += r.counters.wait_ns;
        writeln!(
            w,
            "{:>9} {:>4}% {:>4}% {:>9} {:>9} {:>9}  {:<#32.32} {:#}",
            r.counters.contended,
            pct(r.counters.wait_ns, total_wait),
            pct(cuml, total_wait),
            Dur(r.counters.wait_ns),
            Dur(r.counters.avg_wait_ns()),
            Dur(r.counters.max_wait_ns),
            r.lock,
            r.site
        )?;
    }
    Ok(())
}

/// The per-lock table.
pub(crate) fn write_locks(
    w: &mut dyn fmt::Write,
    rows: &mut dyn Iterator<Item = (LockId, Counters)>,
) -> fmt::Result {
    write!(
        w,
        "\n{:>11} {:>9} {:>5} {:>9} {:>7} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9}  Lock\n{RULE}",
        "Acquired",
        "Contended",
        "%",
        "spin",
        "yields",
        "yielded",
        "sleeps",
        "handoff",
        "wait",
        "avg hold",
        "max hold"
    )?;
    for (lock, c) in rows {
        let acquired = StackU64(c.acquisitions);
        writeln!(
            w,
            "{:>11} {:>9} {:>4}% {:>9} {:>7} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9}  {:#}",
            acquired,
            c.contended,
            pct(c.contended, c.acquisitions.max(c.contended)),
            Dur(c.spin_ns),
            c.yields,
            Dur(c.yield_ns),
            c.sleeps,
            c.handoffs,
            Dur(c.wait_ns),
            OptDur((c.hold_samples > 0).then(|| c.avg_hold_ns())),
            OptDur((c.hold_samples > 0).then_some(c.max_hold_ns)),
            lock
        )?;
    }
    Ok(())
}

/// An acquisition count, `-` when not counted (raw lock_api path).
struct StackU64(u64);

impl fmt::Display for StackU64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            f.pad("-")
        } else {
            let mut b = StackStr::<24>::new();
            let _ = write!(b, "{}", self.0);
            f.pad(b.as_str())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Allocation-free output
// ---------------------------------------------------------------------------------------------

/// A fixed-capacity string on the stack; writes past the end are cut (at a char boundary).
pub(crate) struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    pub(crate) fn new() -> Self {
        StackStr {
            buf: [0; N],
            len: 0,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only whole UTF-8 characters are ever copied in (see `write_str`).
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    fn push_str(&mut self, s: &str) {
        let _ = self.write_str(s);
    }
}

impl<const N: usize> fmt::Write for StackStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut n = s.len().min(N - self.len);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Buffers text and writes it to a file descriptor with `write(2)`.
pub(crate) struct FdWriter {
    fd: i32,
    buf: [u8; 2048],
    len: usize,
}

impl FdWriter {
    pub(crate) fn new(fd: i32) -> FdWriter {
        FdWriter {
            fd,
            buf: [0; 2048],
            len: 0,
        }
    }

    pub(crate) fn flush(&mut self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: writes initialised bytes of our own buffer to a caller-chosen fd.
            let r =
                unsafe { libc::write(self.fd, self.buf[off..].as_ptr().cast(), self.len - off) };
            if r <= 0 {
                // SAFETY: reading errno right after the failed call on this thread.
                if r < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
                    continue;
                }
                break;
            }
            off += r as usize;
        }
        self.len = 0;
    }
}

impl fmt::Write for FdWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().chunks(self.buf.len()) {
            if self.len + chunk.len() > self.buf.len() {
                self.flush();
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}

/// Most rows [`write_fd`] prints per table.
pub(crate) const FD_MAX_ROWS: usize = 64;

/// The indices of the (at most `top`) entries with the longest total wait among those `keep`
/// accepts, longest first. Fixed storage: `top` is capped at [`FD_MAX_ROWS`].
fn top_entries(
    top: usize,
    keep: impl Fn(&Entry, usize) -> bool,
) -> ([(u64, u64, usize); FD_MAX_ROWS], usize) {
    let top = top.min(FD_MAX_ROWS);
    let mut best = [(0u64, 0u64, 0usize); FD_MAX_ROWS];
    let mut n = 0;
    for (i, e) in table::all().enumerate() {
        let Some((_, site)) = e.key() else { continue };
        if !keep(e, site) {
            continue;
        }
        let c = Counters::from_entry(e);
        let key = (c.wait_ns, c.acquisitions, i);
        // Insertion into a sorted (descending) fixed array.
        let mut pos = n;
        while pos > 0 && (best[pos - 1].0, best[pos - 1].1) < (key.0, key.1) {
            pos -= 1;
        }
        if pos >= top {
            continue;
        }
        let end = if n < top { n } else { top - 1 };
        let mut j = end;
        while j > pos {
            best[j] = best[j - 1];
            j -= 1;
        }
        best[pos] = key;
        if n < top {
            n += 1;
        }
    }
    (best, n)
}

fn lock_id_of(lock: usize) -> LockId {
    let label = table::lookup(lock, SITE_TOTAL, false).and_then(|e| e.label());
    LockId::from_label(lock, label)
}

/// The text table straight from the live table into `fd`: no allocation, no lock; the top `top`
/// rows (at most [`FD_MAX_ROWS`]) of each table.
pub(crate) fn write_fd(fd: i32, top: usize) {
    let mut w = FdWriter::new(fd);
    let mut header = Header {
        events: 0,
        wait_ns: 0,
        interval_ns: super::interval_ns(),
        sample_period: super::sample_period(),
        dropped: table::DROPPED.load(Ordering::Relaxed),
        enabled: super::enabled(),
    };
    for (e, _, site) in table::entries() {
        if site == SITE_TOTAL {
            header.events += e.contended.load(Ordering::Relaxed);
            header.wait_ns += e.wait_ns.load(Ordering::Relaxed);
        }
    }
    let _ = write_header(&mut w, &header);
    let (sites, n) = top_entries(top, |e, site| {
        site != SITE_TOTAL && e.contended.load(Ordering::Relaxed) > 0
    });
    let _ = write_sites(
        &mut w,
        header.wait_ns,
        &mut sites[..n].iter().map(|&(_, _, i)| {
            let e = table::entry_at(i);
            let (lock, site) = e.key().unwrap_or((0, SITE_TOTAL));
            SiteRow {
                lock: lock_id_of(lock),
                site: Site::from_key(site),
                counters: Counters::from_entry(e),
            }
        }),
    );
    let (locks, n) = top_entries(top, |e, site| {
        site == SITE_TOTAL && !Counters::from_entry(e).is_zero()
    });
    let _ = write_locks(
        &mut w,
        &mut locks[..n].iter().map(|&(_, _, i)| {
            let e = table::entry_at(i);
            let lock = e.lock_addr();
            (LockId::from_label(lock, e.label()), Counters::from_entry(e))
        }),
    );
    w.flush();
}
