//! The RCU dentry cache of `path-lookup`: a fixed array of hash slots, each an `Rcu` cell holding
//! one small bucket of dentries, with the bucket's hash tags beside the cell under a seqcount.
//!
//! A lookup should read as few cache lines as it can, because at 100k entries every line it reads
//! is a likely cache miss, and misses, not instructions, are what a lookup costs. The design
//! follows Linux's dcache (an RCU hash table whose dentries keep short names inline, with
//! seqcounts that let lock-free readers detect a concurrent change):
//!
//! ```text
//!  slots: [Slot; 8192], 64 bytes each (512 KB)
//!  +------+-----+--------------------------+---------+---------------------+
//!  | seq  | len | tags: 8 hash bits of the | entries | bucket: Rcu<Bucket> |
//!  | (u32)|(u16)| first 32 dentries        | (ptr)   | (owns the version)  |
//!  +------+-----+--------------------------+---------+---------------------+
//!                                              |
//!                 current version's dentries:  v
//!                 +------------+------------+-----+
//!                 | Dentry 0   | Dentry 1   | ... |   one line each: inline name + inode
//!                 +------------+------------+-----+
//! ```
//!
//! A lookup hashes the path, picks the slot, pins, and reads `seq`, then the dentries' address,
//! their count and the tags, then `seq` again: if it did not change (and is even), they belong to
//! one version, current at some moment after the pin, so still alive (if a writer was at work,
//! the lookup scans the cell's current version by name instead: readers never wait). A tag match
//! sends the lookup to exactly one `Dentry` line, where the inline name is compared and the inode copied:
//! one line besides the slot for a hit, none for a miss. A locked `HashMap` reads its control
//! bytes, the entry and the key's heap string: three lines for a hit. Dentries past the first 16
//! of a slot (rare at about 12 per slot) are compared by name.
//!
//! Writers (serialised by the map-wide writer mutex the caller holds) build the new version
//! first, then make `seq` odd, publish the version's address, count and tags, swap the version
//! into the `Rcu` cell (which retires the old one), and make `seq` even again; readers that
//! overlapped retry. The retired version is freed by the cell once no reader can still see it.
//! Readers write nothing shared: the pin writes only the thread's own epoch slot.

use super::Inode;
use foldhash::fast::RandomState;
use scalelock::rcu::{Rcu, RcuReader};
use std::hash::BuildHasher;
use std::sync::atomic::{fence, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Slots of the map: 8192, about 12 entries each at 100k entries (512 KB of slots).
const SLOT_BITS: u32 = 13;

/// Entries whose tags a slot holds; later ones (rare at about 12 per slot) are compared by name.
pub(super) const TAGS: usize = 32;

/// Tag bytes per tag word.
const PER_WORD: usize = 8;
/// `0x01` in every byte.
const LOW_BITS: u64 = u64::from_ne_bytes([0x01; 8]);
/// `0x80` in every byte.
const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Names up to this many bytes are stored in the dentry itself, as Linux's dentries keep short
/// names inline (`DNAME_INLINE_LEN`): comparing a name then reads no other line.
pub(super) const INLINE_NAME: usize = 38;

/// A dentry name: inline when short, else shared.
#[derive(Clone)]
enum Name {
    Inline { len: u8, bytes: [u8; INLINE_NAME] },
    Shared(Arc<str>),
}

impl Name {
    fn new(name: &Arc<str>) -> Name {
        if name.len() <= INLINE_NAME {
            let mut bytes = [0; INLINE_NAME];
            bytes[..name.len()].copy_from_slice(name.as_bytes());
            Name::Inline {
                len: name.len() as u8,
                bytes,
            }
        } else {
            Name::Shared(name.clone())
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..*len as usize],
            Name::Shared(s) => s.as_bytes(),
        }
    }
}

/// One dentry: its name and inode, one cache line.
#[derive(Clone)]
#[repr(align(64))]
pub(super) struct Dentry {
    name: Name,
    inode: Inode,
}

impl Dentry {
    /// A dentry.
    pub(super) fn new(name: &Arc<str>, inode: Inode) -> Dentry {
        Dentry {
            name: Name::new(name),
            inode,
        }
    }
}

/// One immutable version of a bucket: its dentries, exactly as many as it holds (one line
/// each). Lookups never read this struct, only the dentry a tag points them to, through the
/// slot's `entries` pointer; the `Rcu` cell owns the version and frees it once no reader can
/// still be looking.
pub(super) struct Bucket {
    entries: Box<[Dentry]>,
}

impl Bucket {
    /// The dentry named `path`, without tags (for writers and checks).
    pub(super) fn find(&self, path: &[u8]) -> Option<Inode> {
        self.entries
            .iter()
            .find(|d| d.name.as_bytes() == path)
            .map(|d| d.inode)
    }
}

/// One slot: the bucket's current version and, under `seq`, where its dentries are, how many,
/// and the tags of the first [`TAGS`].
#[repr(align(64))]
struct Slot {
    /// Even: `entries`, `len` and `tags` describe `bucket`'s current version. Odd: a writer is
    /// changing them.
    seq: AtomicU32,
    len: AtomicU16,
    /// One-byte tags of the first [`TAGS`] dentries, eight to a word (matched eight at once).
    tags: [AtomicU64; TAGS / PER_WORD],
    /// The current version's dentries (`len` of them).
    entries: AtomicPtr<Dentry>,
    bucket: Rcu<Bucket>,
}

/// A slot's tag for a hash: bits the slot index (the top 16 at most) does not use.
#[inline]
fn tag(h: u64) -> u8 {
    (h >> 16) as u8
}

/// The RCU map.
pub(super) struct RcuMap {
    slots: Box<[Slot]>,
    /// `64 - log2(slots)`: a hash's slot is its top bits.
    slot_shift: u32,
    hasher: RandomState,
}

impl RcuMap {
    /// A map of these (name, inode) pairs; names must be distinct.
    pub(super) fn new<'a>(entries: impl Iterator<Item = (&'a Arc<str>, Inode)>) -> RcuMap {
        RcuMap::with_slot_bits(SLOT_BITS, entries)
    }

    /// A map of `2^bits` slots (`1..=16`; tests use few, so that rewrites race with lookups).
    fn with_slot_bits<'a>(
        bits: u32,
        entries: impl Iterator<Item = (&'a Arc<str>, Inode)>,
    ) -> RcuMap {
        assert!((1..=16).contains(&bits), "slot bits {bits} outside 1..=16");
        let hasher = RandomState::default();
        let slot_shift = 64 - bits;
        let mut buckets: Vec<Vec<Dentry>> = (0..1 << bits).map(|_| Vec::new()).collect();
        for (name, inode) in entries {
            let h = hasher.hash_one(name.as_bytes());
            buckets[(h >> slot_shift) as usize].push(Dentry::new(name, inode));
        }
        let slots = buckets
            .into_iter()
            .map(|dentries| {
                let bucket = Bucket {
                    entries: dentries.into_boxed_slice(),
                };
                let slot = Slot {
                    seq: AtomicU32::new(0),
                    len: AtomicU16::new(0),
                    tags: [const { AtomicU64::new(0) }; TAGS / PER_WORD],
                    entries: AtomicPtr::new(std::ptr::null_mut()),
                    bucket: Rcu::new(bucket),
                };
                RcuMap::describe(&slot, &slot.bucket.read(), &hasher);
                slot
            })
            .collect();
        RcuMap {
            slots,
            slot_shift,
            hasher,
        }
    }

    /// Writes where `bucket`'s dentries are, how many, and their tags into `slot` (the caller
    /// has made `seq` odd, or owns the slot alone).
    fn describe(slot: &Slot, bucket: &Bucket, hasher: &RandomState) {
        let n = bucket.entries.len();
        assert!(n <= u16::MAX as usize, "a bucket of {n} dentries");
        slot.entries
            .store(bucket.entries.as_ptr().cast_mut(), Ordering::Relaxed);
        slot.len.store(n as u16, Ordering::Relaxed);
        let mut bytes = [0u8; TAGS];
        for (t, d) in bytes.iter_mut().zip(bucket.entries.iter()) {
            *t = tag(hasher.hash_one(d.name.as_bytes()));
        }
        for (word, chunk) in slot.tags.iter().zip(bytes.chunks_exact(PER_WORD)) {
            let chunk: [u8; PER_WORD] = chunk.try_into().expect("a word of tags");
            word.store(u64::from_le_bytes(chunk), Ordering::Relaxed);
        }
    }

    #[inline]
    fn slot(&self, path: &[u8]) -> (u64, &Slot) {
        let h = self.hasher.hash_one(path);
        (h, &self.slots[(h >> self.slot_shift) as usize])
    }

    /// Looks `path` up under `reader`'s read-side section. Writes nothing shared.
    #[inline]
    pub(super) fn lookup(&self, reader: &RcuReader, path: &str) -> Option<Inode> {
        // `reader` keeps this thread pinned: no version retired from before the pin on is freed
        // while the borrow of `reader` lives.
        let path = path.as_bytes();
        let (h, slot) = self.slot(path);
        // Seqcount read side: `seq`, then the dentries' address, count and tags, then `seq` again
        // (after an Acquire fence): unchanged and even means they belong together, to a version
        // that was current after the reader pinned. A reader never waits for a writer: if one
        // is at work on this slot, it looks the name up in the cell's current version instead
        // (consistent by construction, only without the tags' short cut).
        let s1 = slot.seq.load(Ordering::Acquire);
        let entries = slot.entries.load(Ordering::Relaxed);
        let len = slot.len.load(Ordering::Relaxed) as usize;
        // Byte-parallel match: the bytes of `x` that are zero are this tag's. The classic
        // zero-byte test below has no false negatives; its rare false positives (a byte above a
        // true match) cost one name comparison.
        let want = LOW_BITS * tag(h) as u64;
        let mut candidates = [0u64; TAGS / PER_WORD];
        for (c, word) in candidates
            .iter_mut()
            .zip(&slot.tags)
            .take(len.min(TAGS).div_ceil(PER_WORD))
        {
            let x = word.load(Ordering::Relaxed) ^ want;
            *c = x.wrapping_sub(LOW_BITS) & !x & HIGH_BITS;
        }
        fence(Ordering::Acquire);
        if s1 & 1 != 0 || slot.seq.load(Ordering::Relaxed) != s1 {
            return reader.read(&slot.bucket).find(path);
        }
        // SAFETY: `entries` and `len` were read in one seqcount window that saw no writer, so
        // they are the dentries of the version that was current at that moment, which is after
        // `reader` pinned this thread. A version is retired only once it is no longer current,
        // and the `Rcu` cell frees it only after every thread pinned before the retirement has
        // unpinned; `reader` is borrowed, so this thread is still pinned and these `len`
        // dentries are alive and, being published, immutable.
        let dentries = unsafe { std::slice::from_raw_parts(entries, len) };
        let named = |d: &&Dentry| d.name.as_bytes() == path;
        for (w, mut c) in candidates.into_iter().enumerate() {
            while c != 0 {
                let i = w * PER_WORD + c.trailing_zeros() as usize / 8;
                if let Some(d) = dentries.get(i).filter(named) {
                    return Some(d.inode);
                }
                c &= c - 1;
            }
        }
        dentries.get(TAGS..)?.iter().find(named).map(|d| d.inode)
    }

    /// Publishes `f(current version)` as `path`'s bucket, if `f` returns one. The caller holds
    /// the map's writer mutex.
    fn rewrite(&self, path: &[u8], f: impl FnOnce(&Bucket) -> Option<Bucket>) {
        let (_, slot) = self.slot(path);
        let Some(next) = f(&slot.bucket.read()) else {
            return;
        };
        let s = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Release fence: a reader that sees any store below also sees `seq` odd, or a later
        // value, on its second look.
        fence(Ordering::Release);
        RcuMap::describe(slot, &next, &self.hasher);
        // Moving `next` into the cell moves the struct, not its dentries: `entries` stays valid.
        slot.bucket.store(next);
        slot.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Whether `path` is present (for writers).
    pub(super) fn contains(&self, path: &str) -> bool {
        let (_, slot) = self.slot(path.as_bytes());
        let found = slot.bucket.read().find(path.as_bytes()).is_some();
        found
    }

    /// Adds `path`, known absent; the caller holds the writer mutex.
    pub(super) fn insert_locked(&self, path: &Arc<str>, inode: Inode) {
        self.rewrite(path.as_bytes(), |b| {
            let mut d = b.entries.to_vec();
            d.push(Dentry::new(path, inode));
            Some(Bucket {
                entries: d.into_boxed_slice(),
            })
        });
    }

    /// Removes `path` if present; the caller holds the writer mutex.
    pub(super) fn remove_locked(&self, path: &str) -> Option<Inode> {
        let mut removed = None;
        self.rewrite(path.as_bytes(), |b| {
            let i = b
                .entries
                .iter()
                .position(|d| d.name.as_bytes() == path.as_bytes())?;
            let mut d = b.entries.to_vec();
            removed = Some(d.swap_remove(i).inode);
            Some(Bucket {
                entries: d.into_boxed_slice(),
            })
        });
        removed
    }

    /// Republishes `path`'s bucket with its dentries in reverse order (tests: every dentry
    /// moves, so a lookup that paired one version's tags with another's dentries would miss).
    #[cfg(test)]
    fn reverse_bucket_of(&self, path: &str) {
        self.rewrite(path.as_bytes(), |b| {
            let mut d = b.entries.to_vec();
            d.reverse();
            Some(Bucket {
                entries: d.into_boxed_slice(),
            })
        });
    }

    /// The number of dentries (a sum over the buckets, not a snapshot).
    pub(super) fn len(&self) -> usize {
        self.slots
            .iter()
            .map(|s| s.bucket.read().entries.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_one_line_per_slot_and_dentry() {
        assert_eq!(std::mem::size_of::<Rcu<Bucket>>(), 16, "rcu");
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(std::mem::size_of::<Dentry>(), 64);
    }

    #[test]
    fn finds_long_names_and_untagged_entries() {
        // About 37 names per slot: many buckets hold more than TAGS.
        let names: Vec<Arc<str>> = (0..300_000)
            .map(|i| {
                let long = if i % 3 == 0 {
                    "/a/very/long/directory/name/that/does/not/fit"
                } else {
                    ""
                };
                Arc::from(format!("{long}/f{i}"))
            })
            .collect();
        assert!(names.iter().any(|n| n.len() > INLINE_NAME));
        let map = RcuMap::new(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n, Inode::new(i as u64))),
        );
        assert!(
            map.slots
                .iter()
                .any(|s| s.bucket.read().entries.len() > TAGS),
            "no bucket has untagged entries: the test does not cover them"
        );
        let reader = RcuReader::new();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.lookup(&reader, n), Some(Inode::new(i as u64)), "{n}");
        }
        assert_eq!(map.lookup(&reader, "/absent"), None);
        assert_eq!(map.len(), names.len());
        assert_eq!(map.remove_locked(&names[3]), Some(Inode::new(3)));
        assert_eq!(map.lookup(&reader, &names[3]), None);
        assert!(!map.contains(&names[3]));
        map.insert_locked(&names[3], Inode::new(77));
        assert_eq!(map.lookup(&reader, &names[3]), Some(Inode::new(77)));
        assert_eq!(map.len(), names.len());
    }

    #[test]
    fn lookups_never_miss_a_present_name_while_its_bucket_is_rewritten() {
        // Stable names stay present throughout; a writer keeps inserting and removing other
        // names and reversing buckets, which rewrites the same buckets and moves every dentry. A
        // lookup that mixed one version's tags with another's dentries could miss a stable
        // name: the seqcount must prevent that.
        use std::sync::atomic::AtomicBool;
        // Two slots, so that every rewrite hits a slot the readers are reading, and few enough
        // names that the slots' tags cover them (dentries move on every removal).
        let stable: Vec<Arc<str>> = (0..16).map(|i| Arc::from(format!("/s/{i}"))).collect();
        let churn: Vec<Arc<str>> = (0..24).map(|i| Arc::from(format!("/c/{i}"))).collect();
        let map = RcuMap::with_slot_bits(
            1,
            stable
                .iter()
                .enumerate()
                .map(|(i, n)| (n, Inode::new(i as u64))),
        );
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..4 {
                let (map, stable, stop) = (&map, &stable, &stop);
                s.spawn(move || {
                    let mut reader = RcuReader::new();
                    let mut n = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        let i = (n * 7 + t) % stable.len();
                        let path = String::from(&*stable[i]);
                        assert_eq!(
                            map.lookup(&reader, &path),
                            Some(Inode::new(i as u64)),
                            "{path} missed during a rewrite"
                        );
                        n += 1;
                        if n.is_multiple_of(32) {
                            reader.quiescent();
                        }
                    }
                });
            }
            let t0 = std::time::Instant::now();
            let mut k = 0;
            while t0.elapsed() < std::time::Duration::from_millis(300) {
                let name = &churn[k % churn.len()];
                if map.contains(name) {
                    map.remove_locked(name);
                } else {
                    map.insert_locked(name, Inode::new(1_000_000 + k as u64));
                }
                map.reverse_bucket_of(&stable[k % stable.len()]);
                k += 1;
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}
