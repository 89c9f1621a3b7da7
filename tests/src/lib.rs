//! Test harness: the real API router on real AWS-protocol services (ministack, started by
//! `cargo xtask test`). One helper per endpoint; every test gets its own users and keys, so
//! tests run in parallel on shared tables.

pub mod app_store;
pub mod app_store_api;
pub mod google_play;
pub mod iam;
pub mod keychain;
pub mod push;
pub mod receiver;
pub mod stripe;

mod account;
mod aws;
pub mod credentials;
mod edits;
mod harness;
mod images;
mod local;
mod process;
mod reply;
mod stand_in;
mod telemetry;
mod uploads;

pub use aws::{put_jobs, sqs_event};
pub use edits::download;
pub use harness::Harness;
pub use images::{sha256, tiny_png};
pub use local::{LocalApi, local_listener};
pub use process::{AdminRun, admin, build_binary};
pub use reply::Reply;
pub use stand_in::{JobCalls, StandIn};
pub use telemetry::{LogCapture, capture_logs, flushed_metrics};
