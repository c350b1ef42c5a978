//! glibc's own lock functions, for the objects (and the mode) that pass through.
//!
//! All of them are resolved at once, on the library's load or on the first call that needs one,
//! with `dlsym(RTLD_NEXT, ..)` (condvars with `dlvsym(.., "GLIBC_2.3.2")`, the version every
//! program since 2002 binds to). `dlsym` may call `malloc`, and an interposed `malloc` may take a
//! pthread mutex: such a call, made from inside the resolution by the resolving thread, finds
//! [`available`] false and is served by scalelock's own implementation instead (see `mutex.rs`).
//! Other threads wait for the resolution to finish.

use core::ffi::{c_int, c_void, CStr};
use core::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use libc::{clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, pthread_mutexattr_t};
use libc::{pthread_rwlock_t, pthread_rwlockattr_t, pthread_spinlock_t, timespec};

const UNRESOLVED: u8 = 0;
const RESOLVING: u8 = 1;
const RESOLVED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNRESOLVED);
/// `pthread_self()` of the thread resolving (valid while `STATE == RESOLVING`).
static RESOLVER: AtomicU64 = AtomicU64::new(0);

macro_rules! real_fns {
    ($( $fname:ident = $sym:literal $(@ $ver:literal)? ( $($arg:ident : $ty:ty),* ); )*) => {
        /// One of glibc's functions, for [`address`].
        #[allow(non_camel_case_types, clippy::upper_case_acronyms, dead_code)]
        #[derive(Clone, Copy)]
        #[repr(usize)]
        pub(crate) enum Idx { $($fname,)* COUNT }

        /// (symbol, version) of each function, in `Idx` order.
        const SYMBOLS: [(&CStr, Option<&CStr>); Idx::COUNT as usize] = [
            $( ($sym, real_fns!(@ver $($ver)?)), )*
        ];

        static TABLE: [AtomicUsize; Idx::COUNT as usize] =
            [const { AtomicUsize::new(0) }; Idx::COUNT as usize];

        $(
            /// glibc's function of the same name; `ENOSYS` if this glibc lacks it.
            ///
            /// # Safety
            /// As for the glibc function; [`available`] must have returned true.
            #[allow(clippy::missing_safety_doc, dead_code)]
            pub(crate) unsafe fn $fname($($arg: $ty),*) -> c_int {
                let p = TABLE.get(Idx::$fname as usize).map_or(0, |a| a.load(Ordering::Relaxed));
                if p == 0 {
                    return libc::ENOSYS;
                }
                // SAFETY: `p` is the address dlsym returned for this very symbol, whose C
                // prototype is the one declared here.
                let f: unsafe extern "C" fn($($ty),*) -> c_int = unsafe { core::mem::transmute(p) };
                // SAFETY: the caller passes arguments valid for the glibc function.
                unsafe { f($($arg),*) }
            }
        )*
    };
    (@ver $v:literal) => { Some($v) };
    (@ver) => { None };
}

real_fns! {
    mutex_init = c"pthread_mutex_init"(m: *mut pthread_mutex_t, a: *const pthread_mutexattr_t);
    mutex_destroy = c"pthread_mutex_destroy"(m: *mut pthread_mutex_t);
    mutex_lock = c"pthread_mutex_lock"(m: *mut pthread_mutex_t);
    mutex_trylock = c"pthread_mutex_trylock"(m: *mut pthread_mutex_t);
    mutex_timedlock = c"pthread_mutex_timedlock"(m: *mut pthread_mutex_t, t: *const timespec);
    mutex_clocklock = c"pthread_mutex_clocklock"(
        m: *mut pthread_mutex_t, c: clockid_t, t: *const timespec);
    mutex_unlock = c"pthread_mutex_unlock"(m: *mut pthread_mutex_t);
    cond_init = c"pthread_cond_init" @ c"GLIBC_2.3.2"(
        c: *mut pthread_cond_t, a: *const pthread_condattr_t);
    cond_destroy = c"pthread_cond_destroy" @ c"GLIBC_2.3.2"(c: *mut pthread_cond_t);
    cond_wait = c"pthread_cond_wait" @ c"GLIBC_2.3.2"(
        c: *mut pthread_cond_t, m: *mut pthread_mutex_t);
    cond_timedwait = c"pthread_cond_timedwait" @ c"GLIBC_2.3.2"(
        c: *mut pthread_cond_t, m: *mut pthread_mutex_t, t: *const timespec);
    cond_clockwait = c"pthread_cond_clockwait"(
        c: *mut pthread_cond_t, m: *mut pthread_mutex_t, k: clockid_t, t: *const timespec);
    cond_signal = c"pthread_cond_signal" @ c"GLIBC_2.3.2"(c: *mut pthread_cond_t);
    cond_broadcast = c"pthread_cond_broadcast" @ c"GLIBC_2.3.2"(c: *mut pthread_cond_t);
    spin_init = c"pthread_spin_init"(s: *mut pthread_spinlock_t, p: c_int);
    spin_destroy = c"pthread_spin_destroy"(s: *mut pthread_spinlock_t);
    spin_lock = c"pthread_spin_lock"(s: *mut pthread_spinlock_t);
    spin_trylock = c"pthread_spin_trylock"(s: *mut pthread_spinlock_t);
    spin_unlock = c"pthread_spin_unlock"(s: *mut pthread_spinlock_t);
    rwlock_init = c"pthread_rwlock_init"(l: *mut pthread_rwlock_t, a: *const pthread_rwlockattr_t);
    rwlock_destroy = c"pthread_rwlock_destroy"(l: *mut pthread_rwlock_t);
    rwlock_rdlock = c"pthread_rwlock_rdlock"(l: *mut pthread_rwlock_t);
    rwlock_tryrdlock = c"pthread_rwlock_tryrdlock"(l: *mut pthread_rwlock_t);
    rwlock_timedrdlock = c"pthread_rwlock_timedrdlock"(l: *mut pthread_rwlock_t, t: *const timespec);
    rwlock_clockrdlock = c"pthread_rwlock_clockrdlock"(
        l: *mut pthread_rwlock_t, c: clockid_t, t: *const timespec);
    rwlock_wrlock = c"pthread_rwlock_wrlock"(l: *mut pthread_rwlock_t);
    rwlock_trywrlock = c"pthread_rwlock_trywrlock"(l: *mut pthread_rwlock_t);
    rwlock_timedwrlock = c"pthread_rwlock_timedwrlock"(l: *mut pthread_rwlock_t, t: *const timespec);
    rwlock_clockwrlock = c"pthread_rwlock_clockwrlock"(
        l: *mut pthread_rwlock_t, c: clockid_t, t: *const timespec);
    rwlock_unlock = c"pthread_rwlock_unlock"(l: *mut pthread_rwlock_t);
}

/// The address of glibc's function `f` (0 if this glibc lacks it), for C code that must call it
/// without a Rust frame in between (a cancellation point unwinds through its caller).
///
/// [`available`] must have returned true.
pub(crate) fn address(f: Idx) -> usize {
    TABLE
        .get(f as usize)
        .map_or(0, |a| a.load(Ordering::Relaxed))
}

fn self_id() -> u64 {
    // SAFETY: pthread_self has no preconditions; it reads the thread pointer.
    unsafe { libc::pthread_self() as u64 }
}

/// Resolves glibc's functions if nobody has yet. Returns whether they can be called now: false
/// only for a call made by the resolving thread from inside the resolution.
#[inline]
pub(crate) fn available() -> bool {
    STATE.load(Ordering::Acquire) == RESOLVED || resolve()
}

/// Resolves every function once (see [`available`]).
#[cold]
pub(crate) fn resolve() -> bool {
    loop {
        match STATE.compare_exchange(UNRESOLVED, RESOLVING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                RESOLVER.store(self_id(), Ordering::Relaxed);
                for (slot, (name, version)) in TABLE.iter().zip(SYMBOLS.iter()) {
                    slot.store(lookup(name, *version) as usize, Ordering::Relaxed);
                }
                STATE.store(RESOLVED, Ordering::Release);
                return true;
            }
            Err(RESOLVED) => return true,
            Err(_) => {
                if RESOLVER.load(Ordering::Relaxed) == self_id() {
                    return false;
                }
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
            }
        }
    }
}

fn lookup(name: &CStr, version: Option<&CStr>) -> *mut c_void {
    if let Some(v) = version {
        // SAFETY: NUL-terminated symbol and version names; RTLD_NEXT searches the objects after
        // this library, that is glibc.
        let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), v.as_ptr()) };
        if !p.is_null() {
            return p;
        }
    }
    // SAFETY: as above.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// In a forked child: a resolution that another (now gone) thread was doing is started over.
pub(crate) fn after_fork_child() {
    if STATE.load(Ordering::Relaxed) == RESOLVING && RESOLVER.load(Ordering::Relaxed) != self_id() {
        STATE.store(UNRESOLVED, Ordering::Relaxed);
    }
}
