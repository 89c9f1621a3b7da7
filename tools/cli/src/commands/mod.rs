//! The commands: each is a few API calls and what to print about them.
//!
//! Paid commands (`edit`, `repair`) follow one path: fingerprint the request, find or write
//! its journal entry (key and uploaded assets), submit with that key, record the job, wait,
//! download, and only then forget the entry. See `journal.rs` for why.
//!
//! `ctx` is what every command gets, `wire` the API's JSON; `auth` logs in and out,
//! `account` and `jobs` read, `edits` quotes and pays (sent once by `submit`, awaited and
//! downloaded by `wait`), `purchases` buys credits.

mod account;
mod auth;
mod ctx;
mod edits;
mod jobs;
mod purchases;
mod submit;
mod wait;
mod wire;

pub use account::{balance, ledger, packs, styles};
pub use auth::{LoginWith, login, logout};
pub use ctx::Ctx;
pub use edits::{edit, quote, repair};
pub use jobs::{cancel, job, jobs};
pub use purchases::buy;
