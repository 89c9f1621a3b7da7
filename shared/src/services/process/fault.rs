//! Crash points for the fault tests. The steps are named always; making the process "die"
//! at one exists only with the `fault-injection` feature, which no Lambda build enables
//! (`Run::crash`, beside `Run`).

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
