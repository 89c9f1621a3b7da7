//! Domain values. Each is built by a fallible constructor at the edge, so holding one means it
//! is valid; storage uses `#[serde(transparent)]` forms.

pub mod edit;
pub mod ids;
pub mod job;
pub mod repair_request;
pub mod style;

pub use edit::{AssetKind, EditRequest, EditSpec, Strength, Target};
pub use ids::{AssetId, Credits, IdempotencyKey, JobId, Operation, UserId};
pub use job::JobState;
pub use repair_request::{RepairRequest, RepairSpec};
pub use style::{STYLES, Style, StyleId};
