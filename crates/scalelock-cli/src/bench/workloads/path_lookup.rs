//! `path-lookup`: a dentry cache, 99.9% lookups / 0.1% create, rename or remove.
//!
//! Seed 000 (MySQL on OSv): MySQL checks for a table's trigger file on every statement, so every
//! statement ran `access()`, and OSv's VFS resolved it under the `namei`/dentry mutex: the server
//! threads slept on a lock that readers of read-mostly data should never have taken. OSv had
//! already moved its routing table from rwlocks to RCU and "it did wonders".
//!
//! The cache maps a path to a small inode record: 100k entries, drawn from a pool of 200k names,
//! so about half the lookups miss (as `access()` probing for absent trigger files does). Each
//! thread resolves a random name; one operation in 1000 creates, renames or removes one instead
//! (a third each), which keeps the entry count steady on average. Every variant hashes with
//! foldhash (a cheap, seeded hash, as a kernel's name hash is), so the lookup, not SipHash,
//! dominates. Variants:
//!
//! - `scalelock-mutex`: `scalelock::Mutex<HashMap>`, one lock around the map (OSv today);
//! - `scalelock`, `scalelock-biased`: `scalelock::RwLock<HashMap>` and
//!   `scalelock::BiasedRwLock<HashMap>` around the map;
//! - `std`, `parking_lot`: an rwlock around the map (the familiar baselines);
//! - `dashmap`: `DashMap` (sharded rwlocks), the well-known concurrent map;
//! - `scalelock-rcu`: 8192 hash slots, each an `Rcu` cell owning one small bucket of dentries
//!   (about 12, names inline as Linux keeps short dentry names), with the bucket's one-byte hash
//!   tags beside the cell under a seqcount (see [`rcu_map`]). A hit reads the slot and one
//!   dentry line; a miss, the slot alone. Each thread keeps an `RcuReader` (QSBR-style RCU): it
//!   stays pinned and declares a quiescent state every 64 lookups, so a lookup takes no lock,
//!   pays no fence and writes nothing shared. An update copies one bucket and publishes it.
//!
//! Lookups, removes and renames name their path with a copy of the name (as `access()` passes
//! a path from the caller's buffer), never the cache's own string: a map that stores keys out of
//! line pays for reading its key, as it would in a server.
//!
//! Writers of the sharded maps (RCU and DashMap) take one map-wide writer mutex, like Linux's
//! `rename_lock`, so that a rename (insert the new name, then remove the old one, across two
//! shards) is atomic against other writers; a lookup may see both names for a moment, never
//! neither. At 0.1% writes that mutex is never the bottleneck.
//!
//! Checks: every inode a lookup returns is intact (its fields agree), and at the end the map
//! holds exactly 100k entries plus the creates minus the removes that succeeded.

use super::{Point, Selection, Workload};
use crate::bench::harness::{measure, sample_every_for, Measurement, Trial};
use foldhash::fast::RandomState;
use scalelock::rcu::RcuReader;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// See the module docs.
pub struct PathLookup;

/// Entries at the start.
const ENTRIES: usize = 100_000;
/// Names the operations draw from: about half are present at any time.
const POOL: usize = 2 * ENTRIES;
/// One operation in this many is a create, rename or remove.
const UPDATE_ONE_IN: u64 = 1000;
/// Rough cost of one lookup, for the latency sampling interval.
const OP_NS: u64 = 150;

/// The variants, in table order; `scalelock-rcu` is ours.
const VARIANTS: &[&str] = &[
    "scalelock-mutex",
    "scalelock",
    "scalelock-biased",
    "std",
    "parking_lot",
    "dashmap",
    "scalelock-rcu",
];

/// A small inode record whose fields must agree with each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inode {
    ino: u64,
    mode: u32,
    nlink: u32,
    size: u64,
}

impl Inode {
    fn new(ino: u64) -> Inode {
        Inode {
            ino,
            mode: 0o100644 | (ino as u32 & 0o7),
            nlink: 1,
            size: ino.wrapping_mul(4096),
        }
    }

    fn intact(&self) -> bool {
        *self == Inode::new(self.ino)
    }
}

/// A dentry cache. `acquired` is called first thing once the lookup holds its lock (or pin), for
/// the acquisition-latency sample.
trait Dcache: Send + Sync + 'static {
    /// A cache holding the first [`ENTRIES`] names of `names`, name `i` with inode `i`.
    fn build(names: &[Arc<str>]) -> Self;
    fn lookup(&self, path: &str, acquired: impl FnOnce()) -> Option<Inode>;
    /// Inserts `path` if absent; whether it did.
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool;
    /// Removes `path` if present; whether it did.
    fn remove(&self, path: &str) -> bool;
    /// Moves `from` to `to` if `from` is present and `to` absent; whether it did.
    fn rename(&self, from: &str, to: &Arc<str>) -> bool;
    fn len(&self) -> usize;
}

type Map = HashMap<Arc<str>, Inode, RandomState>;

fn build_map(names: &[Arc<str>]) -> Map {
    names[..ENTRIES]
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), Inode::new(i as u64)))
        .collect()
}

fn map_create(m: &mut Map, path: &Arc<str>, inode: Inode) -> bool {
    if m.contains_key(&**path) {
        return false;
    }
    m.insert(path.clone(), inode);
    true
}

fn map_rename(m: &mut Map, from: &str, to: &Arc<str>) -> bool {
    if m.contains_key(&**to) {
        return false;
    }
    match m.remove(from) {
        Some(inode) => {
            m.insert(to.clone(), inode);
            true
        }
        None => false,
    }
}

/// A whole map behind one lock: `$read` and `$write` turn `&self.0` into a guard.
macro_rules! locked_map {
    ($name:ident, $lock:ty, |$l:ident| $read:expr, $write:expr) => {
        struct $name($lock);

        impl Dcache for $name {
            fn build(names: &[Arc<str>]) -> Self {
                $name(<$lock>::new(build_map(names)))
            }
            fn lookup(&self, path: &str, acquired: impl FnOnce()) -> Option<Inode> {
                let $l = &self.0;
                let m = $read;
                acquired();
                m.get(path).copied()
            }
            fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
                let $l = &self.0;
                map_create(&mut $write, path, inode)
            }
            fn remove(&self, path: &str) -> bool {
                let $l = &self.0;
                let removed = $write.remove(path);
                removed.is_some()
            }
            fn rename(&self, from: &str, to: &Arc<str>) -> bool {
                let $l = &self.0;
                map_rename(&mut $write, from, to)
            }
            fn len(&self) -> usize {
                let $l = &self.0;
                let m = $read;
                m.len()
            }
        }
    };
}

locked_map!(MutexMap, scalelock::Mutex<Map>, |l| l.lock(), l.lock());
locked_map!(RwMap, scalelock::RwLock<Map>, |l| l.read(), l.write());
locked_map!(
    BiasedRwMap,
    scalelock::BiasedRwLock<Map>,
    |l| l.read(),
    l.write()
);
locked_map!(
    StdRwMap,
    std::sync::RwLock<Map>,
    |l| l.read().unwrap(),
    l.write().unwrap()
);
locked_map!(
    ParkingLotRwMap,
    parking_lot::RwLock<Map>,
    |l| l.read(),
    l.write()
);

mod rcu_map;

/// Lookups between two quiescent states of a thread's RCU reader.
const QUIESCENT_EVERY: u32 = 64;

thread_local! {
    /// Each thread's RCU read-side section and its lookups so far: the thread stays pinned and
    /// declares a quiescent state every [`QUIESCENT_EVERY`] lookups (a few microseconds), as a
    /// server thread would between requests. Dropped, and so unpinned, when the thread exits.
    static READER: RefCell<(RcuReader, u32)> = RefCell::new((RcuReader::new(), 0));
}

/// The RCU map (see [`rcu_map`]) with a map-wide writer mutex.
struct RcuDcache {
    map: rcu_map::RcuMap,
    writers: scalelock::Mutex<()>,
}

impl Dcache for RcuDcache {
    fn build(names: &[Arc<str>]) -> Self {
        RcuDcache {
            map: rcu_map::RcuMap::new(
                names[..ENTRIES]
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n, Inode::new(i as u64))),
            ),
            writers: scalelock::Mutex::new(()),
        }
    }
    fn lookup(&self, path: &str, acquired: impl FnOnce()) -> Option<Inode> {
        READER.with(|r| {
            let mut r = r.borrow_mut();
            let (reader, reads) = &mut *r;
            *reads += 1;
            if *reads % QUIESCENT_EVERY == 0 {
                reader.quiescent();
            }
            // Inside the read-side section already: nothing to wait for.
            acquired();
            self.map.lookup(reader, path)
        })
    }
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
        let _w = self.writers.lock();
        if self.map.contains(path) {
            return false;
        }
        self.map.insert_locked(path, inode);
        true
    }
    fn remove(&self, path: &str) -> bool {
        let _w = self.writers.lock();
        self.map.remove_locked(path).is_some()
    }
    fn rename(&self, from: &str, to: &Arc<str>) -> bool {
        let _w = self.writers.lock();
        if self.map.contains(to) {
            return false;
        }
        // Insert the new name first: a lookup may see both names for a moment, never neither.
        let Some(inode) = self.lookup(from, || ()) else {
            return false;
        };
        self.map.insert_locked(to, inode);
        self.map.remove_locked(from);
        true
    }
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// DashMap, with a map-wide writer mutex for the same rename atomicity as the RCU map.
struct DashMapMap {
    map: dashmap::DashMap<Arc<str>, Inode, RandomState>,
    writers: scalelock::Mutex<()>,
}

impl Dcache for DashMapMap {
    fn build(names: &[Arc<str>]) -> Self {
        DashMapMap {
            map: build_map(names).into_iter().collect(),
            writers: scalelock::Mutex::new(()),
        }
    }
    fn lookup(&self, path: &str, acquired: impl FnOnce()) -> Option<Inode> {
        let r = self.map.get(path);
        acquired();
        r.map(|r| *r)
    }
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
        let _w = self.writers.lock();
        match self.map.entry(path.clone()) {
            dashmap::Entry::Occupied(_) => false,
            dashmap::Entry::Vacant(v) => {
                v.insert(inode);
                true
            }
        }
    }
    fn remove(&self, path: &str) -> bool {
        let _w = self.writers.lock();
        self.map.remove(path).is_some()
    }
    fn rename(&self, from: &str, to: &Arc<str>) -> bool {
        let _w = self.writers.lock();
        if self.map.contains_key(&**to) {
            return false;
        }
        let Some(inode) = self.map.get(from).map(|r| *r) else {
            return false;
        };
        self.map.insert(to.clone(), inode);
        self.map.remove(from);
        true
    }
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// The shared state of one point: the cache, the name pool, and the counters the checks use
/// (updates are rare, so counting them in shared atomics costs nothing measurable).
struct Shared<D> {
    cache: D,
    names: Arc<[Arc<str>]>,
    /// The callers' copies of `names`: lookups, removes and renames name their path with these,
    /// as `access()` passes a path from the caller's buffer, never the cache's own string.
    paths: Vec<Box<str>>,
    torn: AtomicU64,
    created: AtomicU64,
    removed: AtomicU64,
}

/// Runs one point on variant `D`.
fn run<D: Dcache>(trial: &Trial, names: &Arc<[Arc<str>]>) -> Result<Measurement, String> {
    let shared = Shared {
        cache: D::build(names),
        names: names.clone(),
        paths: names.iter().map(|n| Box::from(&**n)).collect(),
        torn: AtomicU64::new(0),
        created: AtomicU64::new(0),
        removed: AtomicU64::new(0),
    };
    let m = measure(trial, &shared, |sh, w| {
        let r = w.rand();
        let i = (r >> 16) as usize % POOL;
        let (name, path) = (&sh.names[i], &*sh.paths[i]);
        if r % UPDATE_ONE_IN != 0 {
            let s = w.sample();
            if let Some(inode) = sh.cache.lookup(path, || w.acquired(s)) {
                if !inode.intact() {
                    sh.torn.fetch_add(1, Relaxed);
                }
            }
            return 1;
        }
        match (r >> 8) % 3 {
            0 => {
                let ino = POOL as u64 + (w.rand() >> 1);
                if sh.cache.create(name, Inode::new(ino)) {
                    sh.created.fetch_add(1, Relaxed);
                }
            }
            1 => {
                if sh.cache.remove(path) {
                    sh.removed.fetch_add(1, Relaxed);
                }
            }
            _ => {
                let to = &sh.names[(w.rand() >> 16) as usize % POOL];
                sh.cache.rename(path, to);
            }
        }
        1
    });
    let torn = shared.torn.load(Relaxed);
    if torn != 0 {
        return Err(format!("{torn} lookups returned a torn inode"));
    }
    let (created, removed) = (shared.created.load(Relaxed), shared.removed.load(Relaxed));
    let want = ENTRIES as u64 + created - removed;
    let len = shared.cache.len() as u64;
    if len != want {
        return Err(format!(
            "the cache holds {len} entries, but {ENTRIES} + {created} created - {removed} removed \
             = {want}"
        ));
    }
    Ok(m)
}

/// Runs one point of one variant.
type Runner = fn(&Trial, &Arc<[Arc<str>]>) -> Result<Measurement, String>;

/// The runner of a variant named in [`VARIANTS`].
fn runner(variant: &str) -> Runner {
    match variant {
        "scalelock-mutex" => run::<MutexMap>,
        "scalelock" => run::<RwMap>,
        "scalelock-biased" => run::<BiasedRwMap>,
        "std" => run::<StdRwMap>,
        "parking_lot" => run::<ParkingLotRwMap>,
        "dashmap" => run::<DashMapMap>,
        "scalelock-rcu" => run::<RcuDcache>,
        _ => unreachable!("unknown path-lookup variant {variant}"),
    }
}

impl Workload for PathLookup {
    fn name(&self) -> &'static str {
        "path-lookup"
    }

    fn about(&self) -> &'static str {
        "Dentry cache: 100k paths -> small inode records; 99.9% lookups (half miss), 0.1% \
         create/rename/remove. Mutex<HashMap> (OSv's dentry mutex); scalelock, scalelock-biased, \
         std and parking_lot RwLock<HashMap>; DashMap; scalelock's RCU map (8192 slots, each an \
         Rcu cell; QSBR readers; an update copies one ~12-entry bucket). It reproduces a VFS that \
         took a mutex on every access(), which MySQL calls on every statement, where RCU 'did \
         wonders' for a routing table."
    }

    fn columns(&self) -> Vec<&'static str> {
        VARIANTS.to_vec()
    }

    fn ours(&self) -> &'static str {
        "scalelock-rcu"
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        let names: Arc<[Arc<str>]> = (0..POOL)
            .map(|i| Arc::from(format!("/var/lib/mysql/db{}/t{i}.TRG", i % 97)))
            .collect();
        let mut points = Vec::new();
        for &variant in VARIANTS.iter().filter(|v| sel.wants(v)) {
            for &threads in &sel.threads {
                let names = names.clone();
                let run = runner(variant);
                points.push(
                    Point::new(variant, threads, move |t| run(t, &names))
                        .sample_every(sample_every_for(OP_NS))
                        .param("entries", ENTRIES as u64)
                        .param("update_pct", 0.1),
                );
            }
        }
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Arc<[Arc<str>]> {
        (0..POOL).map(|i| Arc::from(format!("/p/{i}"))).collect()
    }

    /// Every variant implements the same dentry-cache semantics.
    fn semantics<D: Dcache>() {
        let names = names();
        let c = D::build(&names);
        assert_eq!(c.len(), ENTRIES);
        assert_eq!(c.lookup("/p/7", || ()), Some(Inode::new(7)));
        assert_eq!(c.lookup(&names[ENTRIES], || ()), None);
        let fresh = &names[ENTRIES + 1];
        assert!(c.create(fresh, Inode::new(1_000_000)));
        assert!(!c.create(fresh, Inode::new(1)), "create of a present name");
        assert_eq!(c.lookup(fresh, || ()), Some(Inode::new(1_000_000)));
        assert!(c.rename("/p/7", &names[ENTRIES + 2]));
        assert_eq!(c.lookup("/p/7", || ()), None);
        assert_eq!(c.lookup(&names[ENTRIES + 2], || ()), Some(Inode::new(7)));
        assert!(!c.rename("/p/8", fresh), "rename onto a present name");
        assert!(
            !c.rename("/p/7", &names[ENTRIES + 3]),
            "rename of an absent name"
        );
        assert!(c.remove("/p/8"));
        assert!(!c.remove("/p/8"));
        assert_eq!(c.len(), ENTRIES);
        let mut acquired = false;
        c.lookup("/p/9", || acquired = true);
        assert!(acquired, "lookup must report its acquisition");
    }

    #[test]
    fn every_variant_has_dentry_cache_semantics() {
        semantics::<MutexMap>();
        semantics::<RwMap>();
        semantics::<BiasedRwMap>();
        semantics::<StdRwMap>();
        semantics::<ParkingLotRwMap>();
        semantics::<DashMapMap>();
        semantics::<RcuDcache>();
    }

    #[test]
    fn the_rcu_map_stays_consistent_under_concurrent_lookups_and_updates() {
        let trial = Trial {
            threads: 4,
            warmup: std::time::Duration::from_millis(5),
            duration: std::time::Duration::from_millis(100),
            sample_every: 64,
        };
        let m = run::<RcuDcache>(&trial, &names()).expect("consistency checks");
        assert!(m.ops_all > 0);
    }
}
