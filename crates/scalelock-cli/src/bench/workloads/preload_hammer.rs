//! `preload-hammer`: `mutex-hammer` as a C program sees it: glibc's `pthread_mutex_t` with and
//! without scalelock's preload library.
//!
//! Every point runs in a process of its own (see [`crate::bench::child`]) that hammers one
//! default `pthread_mutex_t` through `pthread_mutex_lock`/`unlock`, exactly the calls a C or
//! C++ server makes. `pthread` and `pthread-adaptive` are glibc's default and adaptive mutexes;
//! `scalelock-preload` is the same default mutex in a process started with `LD_PRELOAD` set to
//! scalelock's library (as `scalelock run` starts a program), which answers those calls with
//! scalelock's mutex. The child checks that the library is loaded and serving locks before it
//! measures, so a silent fall-back to glibc cannot pass for scalelock.
//!
//! Check: as `mutex-hammer`, every word ends equal to the number of operations.

use super::child_points::{child_points, ChildEnv};
use super::mutex_hammer::{HammerBench, WORDS};
use super::{Point, Selection, Workload};
use crate::bench::harness::{sample_every_for, Measurement, Trial};
use crate::bench::locks;

/// See the module docs.
pub struct PreloadHammer;

/// The series compared, as they appear in the `lock` column.
pub const LOCKS: [&str; 3] = ["pthread", "pthread-adaptive", OURS];

/// The default `pthread_mutex_t` answered by scalelock's preload library.
const OURS: &str = "scalelock-preload";

impl Workload for PreloadHammer {
    fn name(&self) -> &'static str {
        "preload-hammer"
    }

    fn about(&self) -> &'static str {
        "mutex-hammer through the C interface: every thread locks one default pthread_mutex_t \
         in a loop, increments eight words and unlocks. Each point runs in a process of its \
         own: glibc's default and adaptive mutexes, and scalelock-preload, the same default \
         mutex in a process started with LD_PRELOAD=scalelock's library (as `scalelock run` \
         starts an unmodified C/C++ server). The question a server's operator asks: does the \
         library make my program's hot mutex faster or slower?"
    }

    fn columns(&self) -> Vec<&'static str> {
        LOCKS.to_vec()
    }

    fn ours(&self) -> &'static str {
        OURS
    }

    fn plan(&self, sel: &Selection) -> Vec<Point> {
        child_points(self.name(), sel, &LOCKS, preload_env, run_here, |p| {
            p.sample_every(sample_every_for(40))
                .param("words", WORDS as u64)
        })
    }
}

/// In the parent: what the child's environment adds, the library preloaded for ours.
fn preload_env(lock: &str) -> ChildEnv {
    if lock != OURS {
        return Ok(Vec::new());
    }
    let lib = crate::launch::find_library()?;
    let lib = lib
        .to_str()
        .ok_or_else(|| format!("{}: not a UTF-8 path", lib.display()))?;
    Ok(vec![("LD_PRELOAD", lib.to_string())])
}

/// In the child: hammers glibc's mutex of that kind, through the library for ours.
fn run_here(lock: &str, trial: &Trial) -> Result<Measurement, String> {
    let serving = preload_serving();
    let glibc_lock = match (lock, serving) {
        (OURS, true) => "pthread",
        (OURS, false) => {
            return Err("the preload library is not loaded, or not serving locks \
                        (SCALELOCK_LOCK=glibc?): LD_PRELOAD was not honoured"
                .into())
        }
        (_, true) => return Err(format!("{lock} must run without the preload library")),
        (other, false) => other,
    };
    locks::run_mutex(glibc_lock, &HammerBench, trial)
}

/// Whether scalelock's preload library is loaded in this process and serves locks with
/// scalelock's own (its `scalelock_preload_active` says 1).
fn preload_serving() -> bool {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"scalelock_preload_active".as_ptr()) };
    if sym.is_null() {
        return false;
    }
    // SAFETY: the library exports `scalelock_preload_active` as `extern "C" fn() -> c_int`.
    let active: extern "C" fn() -> libc::c_int = unsafe { std::mem::transmute(sym) };
    active() == 1
}
