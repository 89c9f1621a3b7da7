//! Crash points for the fault tests. The steps are named always; making the process "die"
//! at one exists only with the `fault-injection` feature, which no Lambda build enables.

use super::{Run, Stop};

/// A point in processing; with fault injection the process "dies" right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    AfterClaim,
    AfterReserve,
    AfterCheck,
    /// The edit call returned and its usage is saved; nothing settled or stored yet.
    AfterEdit,
    AfterStore,
    AfterReview,
}

impl Run<'_> {
    #[cfg(feature = "fault-injection")]
    pub(super) fn crash(&self, step: Step) -> Result<(), Stop> {
        if self.p.crash_at == Some(step) {
            tracing::warn!(step = ?step, "simulated_crash");
            return Err(Stop::Crash(step));
        }
        Ok(())
    }

    #[cfg(not(feature = "fault-injection"))]
    #[inline(always)]
    pub(super) fn crash(&self, _step: Step) -> Result<(), Stop> {
        Ok(())
    }
}
