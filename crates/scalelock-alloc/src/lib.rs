//! Large-allocation pool (see issue: lock-free fast paths for allocations of a page and more).
