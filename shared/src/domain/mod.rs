//! Domain values and pure rules: no I/O, and no import from outside `domain`. Each value is
//! built by a fallible constructor at the edge, so holding one means it is valid; storage uses
//! `#[serde(transparent)]` forms.

pub mod breaker;
pub mod catalogue;
pub mod credentials;
pub mod device;
pub mod edit;
pub mod failure;
pub mod grant;
pub mod identity;
pub mod ids;
pub mod imaging;
pub mod job;
pub mod ledger;
pub mod money;
pub mod pack;
pub mod pricing;
pub mod prompts;
pub mod push;
pub mod repair_request;
pub mod result;
pub mod style;
pub mod trace;
pub mod validation;
pub mod webhooks;

pub use credentials::ContentCredentials;
pub use edit::{AssetKind, EditRequest, EditSpec, InputVersion, Strength, Target};
pub use failure::{Candidate, FailureCode, JobFailure};
pub use grant::{GrantNameError, GrantReason, Operator};
pub use identity::{AddressHash, AddressKey, EmailStatus};
pub use ids::{AssetId, Credits, IdempotencyKey, JobId, Operation, UserId};
pub use job::{CurrentVersion, Dispatch, Job, JobState, NewJob, RepairOf, Stage};
pub use ledger::LedgerKind;
pub use money::Micros;
pub use pack::{Pack, PackError, PackId, Packs};
pub use repair_request::{RepairRequest, RepairSpec};
pub use result::{
    AreaBox, ComparisonOutcome, ComparisonRecord, JobResult, LeakageRecord, NotAdoptable,
    ResultFormat, ReviewRecord, ReviewVerdict,
};
pub use style::{STYLES, Style, StyleId};
pub use trace::TraceId;
