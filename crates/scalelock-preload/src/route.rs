//! Who serves a call on a lock object: scalelock, glibc, or nobody yet.
//!
//! Every type's entry points share one shape, [`serve`]: a null pointer is `EINVAL`; the type's
//! [`Served::view`] of the object says what scalelock serves it as and whether glibc's own
//! `init` marked it; a fast check answers the common case (scalelock's mode is settled and the
//! object is not glibc's); anything else goes the way [`route`] decides: glibc serves the call
//! under `SCALELOCK_LOCK=glibc` and for the objects glibc's own `init` marked as its kind
//! (process-shared, robust, ...), unless glibc cannot be called yet (the call came from inside
//! the resolution of glibc's functions), in which case such an object gets `EAGAIN` and any
//! other is served by scalelock.

use crate::config::{self, mode, Mode};
use crate::real;
use core::ffi::c_int;

/// A pthread type whose objects scalelock serves in place, unless glibc does.
pub(crate) trait Served {
    /// What scalelock serves an object as: its in-place view, and whatever else the type's
    /// functions need (a mutex's type).
    type Ours<'a>;

    /// The object at `p` as [`serve`] and [`route`] see it: what scalelock serves it as, and
    /// whether its bytes mark it as one of glibc's own kinds (which only glibc's `init` writes).
    ///
    /// # Safety
    /// `p` is non-null, aligned and points at a live object of the type.
    unsafe fn view<'a>(p: *mut Self) -> (Self::Ours<'a>, bool);
}

/// Who serves a call on an object: scalelock, with `T` (see [`Served::Ours`]), or glibc.
pub(crate) enum Route<T> {
    /// scalelock.
    Ours(T),
    /// glibc's own function.
    Glibc,
    /// glibc's object, but glibc cannot be called yet (re-entered from the resolution): `EAGAIN`.
    Unavailable,
}

/// Decides who serves a call on `p`: glibc under `SCALELOCK_LOCK=glibc` and for glibc's own
/// kinds of object, scalelock otherwise, and nobody (`Unavailable`) for glibc's kinds while glibc
/// cannot be called yet.
///
/// # Safety
/// As for [`Served::view`].
#[inline]
pub(crate) unsafe fn route<'a, P: Served>(p: *mut P) -> Route<P::Ours<'a>> {
    // SAFETY: the caller's promise.
    let (ours, glibc_object) = unsafe { P::view(p) };
    decide(ours, glibc_object)
}

/// [`route`] once the object is read (or, for `init`, its attributes): `glibc_object` says
/// whether it is one of glibc's own kinds.
#[inline]
pub(crate) fn decide<T>(ours: T, glibc_object: bool) -> Route<T> {
    if mode() == Mode::Glibc || glibc_object {
        if real::available() {
            return Route::Glibc;
        }
        if glibc_object {
            return Route::Unavailable;
        }
    }
    Route::Ours(ours)
}

/// Serves a call on `p`: `EINVAL` for a null pointer; otherwise `on_ours` at once when the mode
/// is settled on scalelock's locks and the object is not glibc's (the fast check), else as
/// [`route`] decides: `on_ours`, `on_glibc`, or `EAGAIN` where glibc serves the object but cannot
/// be called yet.
///
/// # Safety
/// `p` is null or aligned and points at a live object of its type.
#[inline(always)]
pub(crate) unsafe fn serve<'a, P: Served>(
    p: *mut P,
    on_ours: impl FnOnce(P::Ours<'a>) -> c_int,
    on_glibc: impl FnOnce() -> c_int,
) -> c_int {
    if p.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: non-null, and otherwise the caller's promise.
    let (ours, glibc_object) = unsafe { P::view(p) };
    if !glibc_object && config::ours_for_sure() {
        return on_ours(ours);
    }
    // The object is read again: only the fast path keeps its first reading live, so that the
    // hot entry points need no more registers (and stack) than that path uses.
    // SAFETY: as above.
    match unsafe { route(p) } {
        Route::Ours(ours) => on_ours(ours),
        Route::Glibc => on_glibc(),
        Route::Unavailable => libc::EAGAIN,
    }
}
