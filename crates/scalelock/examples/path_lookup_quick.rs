//! Quick path-lookup measurement (seed 000, OSv's VFS `access()` behind the dentry mutex).
//!
//! `cargo run --release -p scalelock --example path_lookup_quick [threads,..] [millis]`
//!
//! A dentry cache: a map from path to a small inode record, 100k entries out of a pool of 200k
//! names; each thread resolves random names (99.9%; half hit, half miss, like `access()` probing
//! for trigger files) and occasionally creates, renames or removes one (0.1%). Variants:
//! `scalelock::Mutex<HashMap>` (OSv today), `std::sync::RwLock<HashMap>`, an RCU map (a fixed
//! array of shards, each an `Rcu` cell, so an update copies one small shard) and `DashMap`.
//! Every lookup checks that the inode it found is intact; at the end each map's entry count must
//! match the creates and removes that succeeded.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use foldhash::fast::RandomState;
use scalelock::rcu::Rcu;
use scalelock::Mutex;

/// Entries at the start.
const ENTRIES: usize = 100_000;
/// Names that operations draw from (half of them present at any time, on average).
const POOL: usize = 2 * ENTRIES;
/// One operation in this many is a create, rename or remove.
const UPDATE_ONE_IN: u64 = 1000;

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

/// What every variant offers: the dentry-cache operations.
trait Dcache: Sync {
    fn name(&self) -> &'static str;
    fn lookup(&self, path: &str) -> Option<Inode>;
    /// Inserts `path` if absent; whether it did.
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool;
    /// Removes `path` if present; whether it did.
    fn remove(&self, path: &str) -> bool;
    /// Moves `from` to `to` if `from` is present and `to` absent; whether it did.
    fn rename(&self, from: &str, to: &Arc<str>) -> bool;
    fn len(&self) -> usize;
}

/// Every variant hashes with foldhash (fast, seeded): a dentry cache uses a cheap name hash, and
/// SipHash would take most of an operation and hide what the locks cost.
type Map = HashMap<Arc<str>, Inode, RandomState>;

fn build(names: &[Arc<str>]) -> Map {
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

/// OSv today: one sleeping mutex around the whole map.
struct MutexMap(Mutex<Map>);

impl Dcache for MutexMap {
    fn name(&self) -> &'static str {
        "scalelock-mutex"
    }
    fn lookup(&self, path: &str) -> Option<Inode> {
        self.0.lock().get(path).copied()
    }
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
        map_create(&mut self.0.lock(), path, inode)
    }
    fn remove(&self, path: &str) -> bool {
        self.0.lock().remove(path).is_some()
    }
    fn rename(&self, from: &str, to: &Arc<str>) -> bool {
        map_rename(&mut self.0.lock(), from, to)
    }
    fn len(&self) -> usize {
        self.0.lock().len()
    }
}

/// The familiar baseline: std's RwLock around the whole map.
struct StdRwMap(std::sync::RwLock<Map>);

impl Dcache for StdRwMap {
    fn name(&self) -> &'static str {
        "std-rwlock"
    }
    fn lookup(&self, path: &str) -> Option<Inode> {
        self.0.read().unwrap().get(path).copied()
    }
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
        map_create(&mut self.0.write().unwrap(), path, inode)
    }
    fn remove(&self, path: &str) -> bool {
        self.0.write().unwrap().remove(path).is_some()
    }
    fn rename(&self, from: &str, to: &Arc<str>) -> bool {
        map_rename(&mut self.0.write().unwrap(), from, to)
    }
    fn len(&self) -> usize {
        self.0.read().unwrap().len()
    }
}

/// Shards of the RCU map (about 25 entries each at 100k entries).
const SHARD_BITS: u32 = 12;

/// One shard: a small hash table keyed by the path's hash, computed once per operation (the
/// shard takes the hash's top bits, the table a remix of all of them).
type Shard = hashbrown::HashTable<(Arc<str>, Inode)>;

/// The RCU map: a fixed array of shards, each an `Rcu` cell, so an update copies one small
/// shard (about 25 entries), not the map. Writers of the whole map are serialised by one mutex
/// (like Linux's `rename_lock`), so a rename (insert the new name, then remove the old one) is
/// atomic against other writers; readers may briefly see both names, never neither.
struct RcuMap {
    shards: Box<[Rcu<Shard>]>,
    hasher: RandomState,
    writers: Mutex<()>,
}

/// The hash a shard's table uses: its low bits (the table's index) and top bits (its tags) must
/// not be the shard bits, which every entry of a shard shares.
fn inner(h: u64) -> u64 {
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl RcuMap {
    fn new(names: &[Arc<str>]) -> RcuMap {
        let hasher = RandomState::default();
        let mut shards: Vec<Shard> = (0..1 << SHARD_BITS).map(|_| Shard::new()).collect();
        for (i, name) in names[..ENTRIES].iter().enumerate() {
            let h = hasher.hash_one(&**name);
            let e = (name.clone(), Inode::new(i as u64));
            shards[(h >> (64 - SHARD_BITS)) as usize]
                .insert_unique(inner(h), e, |e| inner(hasher.hash_one(&*e.0)));
        }
        RcuMap {
            shards: shards.into_iter().map(Rcu::new).collect(),
            hasher,
            writers: Mutex::new(()),
        }
    }

    /// The path's hash and shard.
    fn shard(&self, path: &str) -> (u64, &Rcu<Shard>) {
        let h = self.hasher.hash_one(path);
        (h, &self.shards[(h >> (64 - SHARD_BITS)) as usize])
    }

    /// Inserts into the shard; the caller holds `writers` and knows `path` is absent.
    fn insert_locked(&self, path: &Arc<str>, inode: Inode) {
        let (h, shard) = self.shard(path);
        shard.update(|t| {
            let mut t = t.clone();
            t.insert_unique(inner(h), (path.clone(), inode), |e| {
                inner(self.hasher.hash_one(&*e.0))
            });
            t
        });
    }

    /// Removes from the shard; the caller holds `writers`.
    fn remove_locked(&self, path: &str) -> Option<Inode> {
        let (h, shard) = self.shard(path);
        let mut removed = None;
        let _: Result<(), ()> = shard.try_update(|t| {
            t.find(inner(h), |e| &*e.0 == path).ok_or(())?;
            let mut t = t.clone();
            let (e, _) = t
                .find_entry(inner(h), |e| &*e.0 == path)
                .map_err(|_| ())?
                .remove();
            removed = Some(e.1);
            Ok(t)
        });
        removed
    }
}

impl Dcache for RcuMap {
    fn name(&self) -> &'static str {
        "scalelock-rcu"
    }
    fn lookup(&self, path: &str) -> Option<Inode> {
        let (h, shard) = self.shard(path);
        shard.read().find(inner(h), |e| &*e.0 == path).map(|e| e.1)
    }
    fn create(&self, path: &Arc<str>, inode: Inode) -> bool {
        let _w = self.writers.lock();
        if self.lookup(path).is_some() {
            return false;
        }
        self.insert_locked(path, inode);
        true
    }
    fn remove(&self, path: &str) -> bool {
        let _w = self.writers.lock();
        self.remove_locked(path).is_some()
    }
    fn rename(&self, from: &str, to: &Arc<str>) -> bool {
        let _w = self.writers.lock();
        if self.lookup(to).is_some() {
            return false;
        }
        match self.lookup(from) {
            Some(inode) => {
                self.insert_locked(to, inode);
                self.remove_locked(from);
                true
            }
            None => false,
        }
    }
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }
}

/// The crates.io peer: DashMap (sharded RwLocks). Its per-key operations are atomic on their
/// own; a rename spans two keys, so writers take one mutex as in the RCU map.
struct DashMapMap {
    map: dashmap::DashMap<Arc<str>, Inode, RandomState>,
    writers: Mutex<()>,
}

impl Dcache for DashMapMap {
    fn name(&self) -> &'static str {
        "dashmap"
    }
    fn lookup(&self, path: &str) -> Option<Inode> {
        self.map.get(path).map(|r| *r)
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
        match self.map.get(from).map(|r| *r) {
            Some(inode) => {
                self.map.insert(to.clone(), inode);
                self.map.remove(from);
                true
            }
            None => false,
        }
    }
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Unmeasured time before each measurement.
const WARMUP: Duration = Duration::from_millis(100);

/// Ops per thread between checks of the stop flag.
const BATCH: u64 = 32;

/// User + system CPU time of the whole process.
fn process_cpu() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass; RUSAGE_SELF is always valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs the workload on `threads` threads for `dur`; returns ops/s and CPU ns per op.
fn run(map: &dyn Dcache, names: &[Arc<str>], threads: usize, dur: Duration) -> (f64, f64) {
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let net_creates = AtomicU64::new(0);
    let start = Barrier::new(threads + 1);
    let measuring = AtomicBool::new(false);
    let (elapsed, cpu) = thread::scope(|s| {
        for t in 0..threads {
            let (stop, ops, net, start, measuring) =
                (&stop, &ops, &net_creates, &start, &measuring);
            s.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1).wrapping_mul(0xa076_1d64);
                let mut rand = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let (mut n, mut net_local, mut counting) = (0u64, 0u64, false);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    if !counting && measuring.load(Ordering::Relaxed) {
                        // Warm-up over: count from here.
                        counting = true;
                        n = 0;
                    }
                    for _ in 0..BATCH {
                        let r = rand();
                        let name = &names[(r >> 16) as usize % POOL];
                        if r % UPDATE_ONE_IN != 0 {
                            if let Some(inode) = map.lookup(name) {
                                assert!(inode.intact(), "{}: torn inode {inode:?}", map.name());
                            }
                            continue;
                        }
                        match (r >> 8) % 3 {
                            0 => {
                                let ino = (POOL as u64) + (rand() >> 1);
                                if map.create(name, Inode::new(ino)) {
                                    net_local = net_local.wrapping_add(1);
                                }
                            }
                            1 => {
                                if map.remove(name) {
                                    net_local = net_local.wrapping_sub(1);
                                }
                            }
                            _ => {
                                let to = &names[(rand() >> 16) as usize % POOL];
                                map.rename(name, to);
                            }
                        }
                    }
                    n += BATCH;
                }
                ops.fetch_add(n, Ordering::Relaxed);
                net.fetch_add(net_local, Ordering::Relaxed);
            });
        }
        start.wait();
        thread::sleep(WARMUP);
        measuring.store(true, Ordering::Relaxed);
        let (t0, cpu0) = (Instant::now(), process_cpu());
        thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        (t0.elapsed(), process_cpu() - cpu0)
    });
    let want = (ENTRIES as u64).wrapping_add(net_creates.load(Ordering::Relaxed));
    assert_eq!(
        map.len() as u64,
        want,
        "{}: entries lost or duplicated",
        map.name()
    );
    // Threads count a little past the window (to their next batch end): negligible at 500 ms.
    let ops = ops.load(Ordering::Relaxed) as f64;
    (ops / elapsed.as_secs_f64(), cpu.as_nanos() as f64 / ops)
}

/// Builds a fresh, fully populated map of one variant.
type MakeMap<'a> = dyn Fn() -> Box<dyn Dcache> + 'a;

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: Vec<usize> = args
        .next()
        .map(|a| {
            a.split(',')
                .map(|t| t.parse().expect("threads: 1,2,4"))
                .collect()
        })
        .unwrap_or_else(|| vec![1, 2, 4]);
    let dur = Duration::from_millis(args.next().map_or(500, |a| a.parse().expect("millis")));

    let names: Vec<Arc<str>> = (0..POOL)
        .map(|i| Arc::from(format!("/var/lib/mysql/db{}/t{i}.TRG", i % 97)))
        .collect();
    let makers: [(&str, &MakeMap); 4] = [
        ("scalelock-mutex", &|| {
            Box::new(MutexMap(Mutex::new(build(&names))))
        }),
        ("std-rwlock", &|| {
            Box::new(StdRwMap(std::sync::RwLock::new(build(&names))))
        }),
        ("dashmap", &|| {
            Box::new(DashMapMap {
                map: build(&names).into_iter().collect(),
                writers: Mutex::new(()),
            })
        }),
        ("scalelock-rcu", &|| Box::new(RcuMap::new(&names))),
    ];

    let only = std::env::var("VARIANTS").ok();
    println!("path-lookup: {ENTRIES} entries, 1 update in {UPDATE_ONE_IN}, {dur:?} per point");
    print!("{:<16}", "variant");
    for t in &threads {
        print!(" {:>20}", format!("{t} thr Mops/s (cpu ns/op)"));
    }
    println!(" {:>8}", "2t/1t");
    for (name, make) in makers {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|v| v == name))
        {
            continue;
        }
        let row: Vec<(f64, f64)> = threads
            .iter()
            .map(|&t| run(&*make(), &names, t, dur))
            .collect();
        print!("{name:<16}");
        for (ops, cpu) in &row {
            print!(" {:>20}", format!("{:.2} ({cpu:.0})", ops / 1e6));
        }
        let scale = match (
            threads.iter().position(|&t| t == 1),
            threads.iter().position(|&t| t == 2),
        ) {
            (Some(a), Some(b)) => format!("{:.2}x", row[b].0 / row[a].0),
            _ => "-".into(),
        };
        println!(" {scale:>8}");
    }
}
