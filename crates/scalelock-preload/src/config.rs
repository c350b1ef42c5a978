//! `SCALELOCK_LOCK`: which locks serve the program, read once without allocating.

use core::sync::atomic::{AtomicU8, Ordering};

/// The lock implementation the library serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// scalelock's adaptive locks (the default).
    Scalelock,
    /// scalelock's locks with `SpinPolicy::Always`: waiters spin and never sleep.
    Spin,
    /// Every call goes to glibc unchanged.
    Glibc,
}

/// 0 until read; then 1 + the mode's index.
static MODE: AtomicU8 = AtomicU8::new(0);

const SCALELOCK: u8 = 1;
const SPIN: u8 = 2;
const GLIBC: u8 = 3;

fn decode(v: u8) -> Mode {
    match v {
        SPIN => Mode::Spin,
        GLIBC => Mode::Glibc,
        _ => Mode::Scalelock,
    }
}

/// The mode, read from the environment on the first call.
#[inline]
pub fn mode() -> Mode {
    let v = MODE.load(Ordering::Relaxed);
    if v != 0 {
        decode(v)
    } else {
        mode_from_env()
    }
}

/// Whether the mode has been read and is one of scalelock's (not `Glibc`): the one look the
/// entry points make before taking their fast path; anything else goes the slow way, through
/// [`mode`].
#[inline]
pub(crate) fn ours_for_sure() -> bool {
    matches!(MODE.load(Ordering::Relaxed), SCALELOCK | SPIN)
}

/// Parses a `SCALELOCK_LOCK` value (`pthread` is accepted for `glibc`, as the bench names it;
/// empty means the default).
pub fn parse_mode(value: &[u8]) -> Option<Mode> {
    match value {
        b"" | b"scalelock" | b"default" => Some(Mode::Scalelock),
        b"spin" => Some(Mode::Spin),
        b"glibc" | b"pthread" => Some(Mode::Glibc),
        _ => None,
    }
}

pub(crate) fn write_stderr(bytes: &[u8]) {
    // SAFETY: write(2) of a borrowed byte slice to fd 2; a short or failed write only loses the
    // message.
    unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
}

#[cold]
fn mode_from_env() -> Mode {
    let mut mode = Mode::Scalelock;
    let mut bad: &[u8] = &[];
    // SAFETY: getenv with a NUL-terminated name; glibc's getenv takes no lock and does not
    // allocate. The result, if not null, is a NUL-terminated string owned by the environment.
    let raw = unsafe { libc::getenv(c"SCALELOCK_LOCK".as_ptr()) };
    if !raw.is_null() {
        // SAFETY: non-null, NUL-terminated (see above); read at once.
        let value = unsafe { core::ffi::CStr::from_ptr(raw) }.to_bytes();
        match parse_mode(value) {
            Some(m) => mode = m,
            None => bad = value,
        }
    }
    let v = match mode {
        Mode::Scalelock => SCALELOCK,
        Mode::Spin => SPIN,
        Mode::Glibc => GLIBC,
    };
    match MODE.compare_exchange(0, v, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {
            // Only the thread that decided reports and applies the choice.
            if !bad.is_empty() {
                write_stderr(b"scalelock: ignoring SCALELOCK_LOCK=");
                write_stderr(bad);
                write_stderr(b": expected scalelock, spin or glibc; using scalelock\n");
            }
            if mode == Mode::Spin {
                scalelock::wait::set_spin_policy(scalelock::wait::SpinPolicy::Always);
            }
            mode
        }
        // Another thread decided first (it sets the spin policy: that only changes how long
        // waiters spin, never correctness, so nobody waits for it).
        Err(current) => decode(current),
    }
}
