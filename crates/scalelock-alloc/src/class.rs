//! Size classes: every page count up to four pages, then four classes per power of two.
//!
//! # Table
//!
//! ```text
//!   class   0   1   2   3 |  4   5   6   7 |  8  9 10 11 | 12 13 14 15 | ... | 48 ... 51
//!   pages   1   2   3   4 |  5   6   7   8 | 10 12 14 16 | 20 24 28 32 | ... | 10240 ... 16384
//!           one per page  | step 1 (2^2)   | step 2      | step 4      |     | step 2048
//! ```
//!
//! Class `c >= 4` lies in the group `k = 2 + (c - 4) / 4` and holds `2^k + (i + 1) * 2^(k-2)`
//! pages with `i = (c - 4) % 4`: at most 25 % internal waste, a page at most below 32 KiB. Every
//! class size is a multiple of [`PAGE`], so every block is page-aligned. The default cap (4 MiB,
//! 1024 pages) is class 35; the largest supported cap ([`MAX_CAP`], 64 MiB) is class 51.

/// The page size the pool is built for; blocks are aligned to it. On a system with another page
/// size the pool forwards everything to its backing allocator.
///
/// ```
/// assert_eq!(scalelock_alloc::PAGE, 4096);
/// ```
pub const PAGE: usize = 4096;
const PAGE_SHIFT: u32 = 12;

/// Number of classes up to [`MAX_CAP`].
pub const MAX_CLASSES: usize = 52;

/// The largest cap a pool accepts (64 MiB); larger requests always go to the backing allocator.
///
/// ```
/// use scalelock_alloc::{Config, MAX_CAP};
/// assert_eq!(Config::new().cap(usize::MAX).normalized().cap, MAX_CAP);
/// ```
pub const MAX_CAP: usize = 64 << 20;

/// The class holding `size` bytes (`1 <= size <= MAX_CAP`).
#[inline]
pub const fn class_of(size: usize) -> usize {
    let pages = (size + PAGE - 1) >> PAGE_SHIFT;
    if pages <= 4 {
        return if pages == 0 { 0 } else { pages - 1 };
    }
    // k = floor(log2(pages - 1)) >= 2; the group (2^k, 2^(k+1)] is split into four steps.
    let k = usize::BITS - 1 - (pages - 1).leading_zeros();
    let idx = (pages - 1 - (1 << k)) >> (k - 2);
    4 + (k as usize - 2) * 4 + idx
}

/// How many times the new size a block may be for `realloc` to keep it in place (see
/// [`may_serve`]).
pub const REALLOC_RATIO: usize = 4;

/// Whether `realloc` keeps a block of class `block` in place for a new size of class `request`:
/// the same class, or a larger one at most [`REALLOC_RATIO`] times its size. (A free block of
/// any larger class may serve a new allocation, see `cache::borrow`; a `realloc` that shrinks a
/// block far below its size moves it, so that the large block serves a large request again.)
#[inline]
pub const fn may_serve(block: usize, request: usize) -> bool {
    block >= request && class_size(block) <= REALLOC_RATIO * class_size(request)
}

/// The block size of class `c`, in bytes.
#[inline]
pub const fn class_size(c: usize) -> usize {
    SIZES[c]
}

/// [`class_size`] for every class, computed at compile time.
const SIZES: [usize; MAX_CLASSES] = {
    let mut t = [0usize; MAX_CLASSES];
    let mut c = 0;
    while c < MAX_CLASSES {
        t[c] = compute_size(c);
        c += 1;
    }
    t
};

const fn compute_size(c: usize) -> usize {
    let pages = if c < 4 {
        c + 1
    } else {
        let k = 2 + (c - 4) / 4;
        let idx = (c - 4) % 4;
        (1 << k) + ((idx + 1) << (k - 2))
    };
    pages << PAGE_SHIFT
}

/// Magazine capacity of class `c`: about [`MAGAZINE_BYTES`] of blocks, between 1 and
/// [`MAG_SLOTS`]. Classes up to 32 KiB move 32 blocks per depot exchange, 512 KiB blocks two,
/// 1 MiB and larger one. A thread caches at most two magazines per class.
#[inline]
pub const fn magazine_cap(c: usize) -> usize {
    CAPS[c] as usize
}

/// [`magazine_cap`] for every class, computed at compile time (no division on the hot path).
const CAPS: [u8; MAX_CLASSES] = {
    let mut t = [0u8; MAX_CLASSES];
    let mut c = 0;
    while c < MAX_CLASSES {
        t[c] = compute_cap(c) as u8;
        c += 1;
    }
    t
};

const fn compute_cap(c: usize) -> usize {
    let n = MAGAZINE_BYTES / class_size(c);
    if n < 1 {
        1
    } else if n > MAG_SLOTS {
        MAG_SLOTS
    } else {
        n
    }
}

/// Slots in a magazine.
pub const MAG_SLOTS: usize = 32;

/// Bytes of blocks a magazine aims to hold (see [`magazine_cap`]).
pub const MAGAZINE_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_monotonic_page_multiples_and_tight() {
        let mut prev = 0;
        for c in 0..MAX_CLASSES {
            let s = class_size(c);
            assert!(s > prev, "class {c}");
            assert_eq!(s % PAGE, 0);
            assert_eq!(class_of(s), c, "size {s}");
            assert_eq!(class_of(prev + 1), c, "size {}", prev + 1);
            // At most 25 % waste above four pages.
            if c >= 4 {
                assert!((s - prev - 1) * 4 <= prev + 1 + PAGE * 4, "class {c}");
            }
            prev = s;
        }
        assert_eq!(class_size(MAX_CLASSES - 1), MAX_CAP);
        assert_eq!(class_of(4 << 20), 35);
        assert_eq!(class_of(1), 0);
    }

    #[test]
    fn realloc_keeps_a_block_for_its_class_and_sizes_down_to_a_quarter_of_it() {
        let c = class_of(640 << 10);
        assert!(may_serve(c, c));
        assert!(may_serve(c, class_of(400 << 10)));
        assert!(may_serve(c, class_of(160 << 10)));
        assert!(!may_serve(c, class_of(120 << 10)));
        assert!(!may_serve(class_of(300 << 10), c));
    }

    #[test]
    fn magazine_capacity_bounds() {
        for c in 0..MAX_CLASSES {
            let m = magazine_cap(c);
            assert!((1..=MAG_SLOTS).contains(&m));
        }
        assert_eq!(magazine_cap(0), MAG_SLOTS);
        assert_eq!(magazine_cap(class_of(512 << 10)), 2);
        assert_eq!(magazine_cap(class_of(1 << 20)), 1);
        assert_eq!(magazine_cap(class_of(4 << 20)), 1);
    }
}
