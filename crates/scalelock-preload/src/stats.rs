//! Lockstat for the program's pthread locks, on scalelock's address-keyed lockstat
//! ([`scalelock::stats::raw`]).
//!
//! Every lock is identified by the address of its `pthread_*_t` (scalelock's raw lock lives at
//! offset 0, so the waits its contended path records land on the same key) and every acquisition
//! by the return address of the C call (see `entry_with_caller!`), which the report prints as
//! `function+0xoffset`. With `SCALELOCK_LOCKSTAT` on (`1`, `on`, `exit`), the library counts
//! every acquisition and attributes every wait to its caller; the table is written when the
//! process exits, and when it dies of a SIGINT it had left at its default action (the
//! `scalelock profile` and Ctrl-C case), to `SCALELOCK_LOCKSTAT_FILE` if set, else to stderr,
//! `SCALELOCK_LOCKSTAT_TOP` rows per part (default 20). Writing the table allocates nothing.
//! SIGTERM, left at its default action, writes it too.
//!
//! A lock the program destroys (or initialises anew in the memory of one it never destroyed)
//! is folded into the row `(destroyed)@function` of the function that first used it, with its
//! call sites, and its entries are freed (see `destroyed`): a server that creates and
//! destroys locks all the time keeps its live locks in rows of their own, and the table never
//! fills with locks that are gone. Locks in the static memory of the program and of the
//! libraries loaded with it keep their rows.
//!
//! With `SCALELOCK_LOCKSTAT_FORMAT=dump` (what `scalelock profile` asks for) each process writes
//! `SCALELOCK_LOCKSTAT_FILE.PID`, instead of the table, scalelock's machine-readable dump of every entry
//! ([`scalelock::stats::dump_to_fd`]), then a copy of `/proc/self/maps` between the lines `maps`
//! and `end`, so that the command can name the addresses from the program's object files after
//! it has exited. The file is created with mode 0600 and never through a symbolic link.

use crate::config::write_stderr;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use scalelock::stats::{self, raw};
use scalelock::wait::now_ns;

/// Runs `record` while lockstat records: one relaxed load (once it has read the environment)
/// and a branch on the lock path; the recording itself is out of line.
#[inline]
pub(crate) fn when_recording(record: impl FnOnce()) {
    if raw::enabled() {
        out_of_line(record);
    }
}

#[cold]
#[inline(never)]
fn out_of_line(f: impl FnOnce()) {
    f()
}

/// Counts an acquisition of the lock at `lock` (nothing while recording is off); the first one
/// recorded labels the lock with `caller`, so the per-lock table names the function that first
/// used each lock.
///
/// Counted per lock only, not per call site: a server such as MariaDB acquires thousands of
/// short-lived locks from hundreds of sites, and a (lock, site) entry for each would fill
/// lockstat's fixed table within seconds. Waits, which are what the table ranks, keep their
/// call sites (see [`waiting_at`]).
#[inline]
pub(crate) fn acquired(lock: usize, caller: usize) {
    if raw::enabled() {
        raw::acquired_by(lock, caller);
    }
}

/// The lock at `lock` is gone (the program destroyed it, or initialises a new one in its
/// memory): lockstat folds its rows into those of the destroyed locks the same function first
/// used, and frees its entries for the locks the program creates next (see
/// `scalelock::stats::raw::destroyed`; nothing while lockstat is off, or has no rows of the
/// lock).
///
/// Not a lock in static memory (see [`STATIC_SEGMENTS`]): its address is never another lock's,
/// and `scalelock profile` names it by its symbol (a program that destroys its global locks as
/// it exits would otherwise see them all folded).
#[inline]
pub(crate) fn destroyed(lock: usize) {
    if raw::enabled() && !is_static(lock) {
        raw::destroyed(lock);
    }
}

/// How many writable segments [`STATIC_SEGMENTS`] holds at most.
const MAX_STATIC_SEGMENTS: usize = 128;

/// The writable segments (`.data`, `.bss`) of the objects loaded when the library was, as
/// `[start, end)` address pairs, noted once at load while lockstat is on: what [`destroyed`]
/// leaves alone. A library loaded later with `dlopen` is not in it (its global locks are folded
/// when destroyed); nor are segments past [`MAX_STATIC_SEGMENTS`].
static STATIC_SEGMENTS: [[AtomicUsize; 2]; MAX_STATIC_SEGMENTS] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; MAX_STATIC_SEGMENTS];
/// How many of [`STATIC_SEGMENTS`] are filled in.
static STATIC_SEGMENT_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Whether `addr` lies in one of the [`STATIC_SEGMENTS`].
fn is_static(addr: usize) -> bool {
    // Acquire: pairs with the Release that published the count after its segments.
    let n = STATIC_SEGMENT_COUNT.load(Ordering::Acquire);
    STATIC_SEGMENTS.iter().take(n).any(|[start, end]| {
        (start.load(Ordering::Relaxed)..end.load(Ordering::Relaxed)).contains(&addr)
    })
}

/// Notes the writable segments of every loaded object in [`STATIC_SEGMENTS`] (at load: the
/// process is still quiet, and `dl_iterate_phdr` takes the loader's lock).
fn note_static_segments() {
    extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        _data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` whose `dlpi_phdr` points at
        // `dlpi_phnum` program headers, all valid for the callback's duration.
        let (base, phdrs) = unsafe {
            let info = &*info;
            (
                info.dlpi_addr as usize,
                core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize),
            )
        };
        for ph in phdrs {
            if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_W == 0 {
                continue;
            }
            let n = STATIC_SEGMENT_COUNT.load(Ordering::Relaxed);
            let Some([start, end]) = STATIC_SEGMENTS.get(n) else {
                return 1; // full: stop
            };
            let at = base + ph.p_vaddr as usize;
            start.store(at, Ordering::Relaxed);
            end.store(at + ph.p_memsz as usize, Ordering::Relaxed);
            // Release: a reader that sees the count sees the segment.
            STATIC_SEGMENT_COUNT.store(n + 1, Ordering::Release);
        }
        0
    }
    // SAFETY: `each` matches the callback type and only reads what the loader passes it.
    unsafe { libc::dl_iterate_phdr(Some(each), core::ptr::null_mut()) };
}

/// Runs a blocking acquisition, attributing what scalelock's lock records while waiting to
/// `caller`.
#[inline]
pub(crate) fn waiting_at<R>(caller: usize, f: impl FnOnce() -> R) -> R {
    crate::stacks::contended(caller, || raw::with_caller(caller, f))
}

/// The hold in progress of a lock, for hold times: 16 otherwise unused bytes of the pthread
/// object (see the drawings in `mutex.rs` and `rwlock.rs`). Zero when no hold is being timed;
/// written only while recording is on.
///
/// A mutex or a write lock has one holder, which times every hold (`site` is its call site). A
/// read lock has many: one reader at a time claims the slot (`site` is then its `pthread_self()`,
/// which is never a code address) and its hold counts for the lock only, not for a call site.
#[repr(C)]
pub(crate) struct Hold {
    start_ns: AtomicU64,
    site: AtomicU64,
}

impl Hold {
    /// The sole holder starts a hold acquired at `caller`.
    #[inline]
    pub(crate) fn begin(&self, caller: usize) {
        if raw::enabled() {
            self.site.store(caller as u64, Ordering::Relaxed);
            self.start_ns.store(now_ns().max(1), Ordering::Relaxed);
        }
    }

    /// The sole holder of `lock` releases it.
    #[inline]
    pub(crate) fn end(&self, lock: usize) {
        when_recording(|| {
            let start = self.start_ns.load(Ordering::Relaxed);
            if start != 0 {
                self.start_ns.store(0, Ordering::Relaxed);
                let caller = self.site.load(Ordering::Relaxed) as usize;
                raw::held(lock, caller, now_ns().saturating_sub(start));
            }
        });
    }

    /// A reader that now holds a read lock times its hold if no other reader does.
    #[inline]
    pub(crate) fn begin_shared(&self) {
        if raw::enabled()
            && self.start_ns.load(Ordering::Relaxed) == 0
            && self
                .start_ns
                .compare_exchange(0, now_ns().max(1), Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            self.site.store(thread_id(), Ordering::Relaxed);
        }
    }

    /// A reader releases its read lock on `lock`: records the hold if it was timing it.
    #[inline]
    pub(crate) fn end_shared(&self, lock: usize) {
        when_recording(|| {
            if self.site.load(Ordering::Relaxed) == thread_id() {
                let start = self.start_ns.load(Ordering::Relaxed);
                self.site.store(0, Ordering::Relaxed);
                // Release: the next reader that claims the slot sees `site` cleared.
                self.start_ns.store(0, Ordering::Release);
                raw::held(lock, 0, now_ns().saturating_sub(start));
            }
        });
    }
}

fn thread_id() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The process that arranged the report (a forked child exiting must not overwrite it).
static OWNER_PID: AtomicI32 = AtomicI32::new(0);
static WRITTEN: AtomicBool = AtomicBool::new(false);

/// At load: if recording is on, arranges for the table to be written at exit and on SIGINT.
pub(crate) fn on_load() {
    if !stats::enabled() {
        return;
    }
    note_static_segments();
    let lockstat = getenv(c"SCALELOCK_LOCKSTAT").unwrap_or(b"");
    let file = getenv(c"SCALELOCK_LOCKSTAT_FILE");
    // `exit` already prints to stderr (scalelock's own printer); add ours only for a file.
    if lockstat == b"exit" && file.is_none() {
        return;
    }
    if let Some(n) = getenv(c"SCALELOCK_LOCKSTAT_STACKS").and_then(parse_count) {
        if n > 0 {
            crate::stacks::enable(n);
        }
    }
    // SAFETY: getpid has no preconditions.
    OWNER_PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    // SAFETY: registers an `extern "C" fn()` that lives as long as the process.
    unsafe { libc::atexit(write_report) };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction with a zeroed, then filled, struct; the handler only writes the
        // report (no allocation, no lock) and re-raises with the default action.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
            {
                let mut act: libc::sigaction = core::mem::zeroed();
                act.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
                act.sa_flags = libc::SA_RESETHAND;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, core::ptr::null_mut());
            }
        }
    }
}

/// SIGINT or SIGTERM at its default action: the report, then death by the signal.
extern "C" fn on_fatal_signal(sig: libc::c_int) {
    write_report();
    // SA_RESETHAND restored the default action: die of the signal as the program would have.
    // SAFETY: raise has no preconditions.
    unsafe { libc::raise(sig) };
}

fn getenv(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: NUL-terminated name; the result is null or a NUL-terminated environment string.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        None
    } else {
        // SAFETY: non-null, NUL-terminated.
        Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
    }
}

/// A decimal count from the environment (`None` unless all digits).
fn parse_count(v: &[u8]) -> Option<usize> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: usize = 0;
    for &d in v {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
    }
    Some(n)
}

fn top_rows() -> usize {
    match getenv(c"SCALELOCK_LOCKSTAT_TOP").and_then(parse_count) {
        Some(n) => n.max(1),
        None => stats::EXIT_REPORT_ROWS,
    }
}

/// Writes the table once, from the process that arranged it.
extern "C" fn write_report() {
    // SAFETY: getpid has no preconditions.
    if OWNER_PID.load(Ordering::Relaxed) != unsafe { libc::getpid() }
        || WRITTEN.swap(true, Ordering::Relaxed)
    {
        return;
    }
    let dump = getenv(c"SCALELOCK_LOCKSTAT_FORMAT") == Some(b"dump");
    let mut fd = 2;
    if let Some(path) = getenv(c"SCALELOCK_LOCKSTAT_FILE") {
        // A dump goes to `FILE.PID`: every process of the command (a shell and the program it
        // starts) leaves its own, and none overwrites another's.
        let mut name = LineBuf::new();
        name.push(path);
        if dump {
            name.push(b".");
            // SAFETY: getpid has no preconditions.
            name.decimal(unsafe { libc::getpid() } as u64);
        }
        name.push(b"\0");
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC | libc::O_NOFOLLOW;
        let f = if name.complete() {
            // SAFETY: a NUL-terminated path in our own buffer.
            unsafe { libc::open(name.as_bytes().as_ptr().cast(), flags, 0o600) }
        } else {
            -1
        };
        if f >= 0 {
            fd = f;
        } else {
            write_stderr(
                b"scalelock: cannot open SCALELOCK_LOCKSTAT_FILE; lockstat table follows\n",
            );
        }
    }
    if dump {
        stats::dump_to_fd(fd);
        copy_maps(fd);
        write_stacks(fd);
    } else {
        stats::report_to_fd(fd, top_rows());
    }
    if fd != 2 {
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
    }
}

/// Appends `/proc/self/maps` to `fd` between the lines `maps` and `end` (see the module
/// comment), with a stack buffer.
fn copy_maps(fd: libc::c_int) {
    write_all(fd, b"maps\n");
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let maps = unsafe {
        libc::open(
            c"/proc/self/maps".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if maps >= 0 {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads into our own buffer, at most its length.
            let n = unsafe { libc::read(maps, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            write_all(fd, buf.get(..n as usize).unwrap_or(&[]));
        }
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(maps) };
    }
    write_all(fd, b"end\n");
}

fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes initialised bytes of a live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = bytes.get(n as usize..).unwrap_or(&[]);
    }
}

/// Appends the sampled stacks, `stack COUNT WAIT_NS FRAME..`, one a line (see `stacks.rs`).
fn write_stacks(fd: libc::c_int) {
    crate::stacks::for_each(|count, wait_ns, frames| {
        let mut line = LineBuf::new();
        line.push(b"stack ");
        line.decimal(count);
        line.push(b" ");
        line.decimal(wait_ns);
        for &f in frames {
            line.push(b" 0x");
            line.hex(f as u64);
        }
        line.push(b"\n");
        write_all(fd, line.as_bytes());
    });
}

/// A line built on the stack, for the report (no allocation, no `core::fmt`); what does not fit
/// is dropped, and [`LineBuf::complete`] says so.
struct LineBuf {
    buf: [u8; 4096],
    len: usize,
    overflow: bool,
}

impl LineBuf {
    fn new() -> LineBuf {
        LineBuf {
            buf: [0; 4096],
            len: 0,
            overflow: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            } else {
                self.overflow = true;
            }
        }
    }

    fn digits(&mut self, mut v: u64, base: u64) {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            let d = (v % base) as u8;
            if let Some(t) = tmp.get_mut(i) {
                *t = if d < 10 { b'0' + d } else { b'a' + d - 10 };
            }
            v /= base;
            if v == 0 || i == 0 {
                break;
            }
        }
        self.push(tmp.get(i..).unwrap_or(&[]));
    }

    fn decimal(&mut self, v: u64) {
        self.digits(v, 10);
    }

    fn hex(&mut self, v: u64) {
        self.digits(v, 16);
    }

    /// Whether everything pushed fitted.
    fn complete(&self) -> bool {
        !self.overflow
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}
