//! The hooks when lockstat is compiled out (no `lockstat` feature, or a loom build): they do
//! nothing and inline to nothing.

use super::HoldSampled;

/// Stands in for `hook::Recorder`.
pub(crate) struct Recorder;

impl Recorder {
    #[inline(always)]
    pub(crate) fn begin() -> Recorder {
        Recorder
    }

    #[inline(always)]
    pub(crate) fn none() -> Recorder {
        Recorder
    }

    #[inline(always)]
    pub(crate) fn sleep(&mut self) {}

    #[inline(always)]
    pub(crate) fn yielded(&mut self, _took_ns: u64) {}

    #[inline(always)]
    pub(crate) fn done(
        &self,
        _raw: &dyn HoldSampled,
        ok: bool,
        _spun_ns: u32,
        _handoff: bool,
    ) -> bool {
        ok
    }

    #[inline(always)]
    pub(crate) fn done_at(&self, _lock: usize, ok: bool, _spun_ns: u32, _handoff: bool) -> bool {
        ok
    }

    #[inline(always)]
    pub(crate) fn done_waited(&self, _lock: usize, ok: bool, _spun_ns: u32) -> bool {
        ok
    }
}

/// Stands in for `hook::released`.
#[inline(always)]
pub(crate) fn released(_lock: usize) {}
