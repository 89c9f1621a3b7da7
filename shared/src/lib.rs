//! Atelier's shared library: every rule lives here once, and the three functions, the admin
//! tool and the local runner only translate events into calls on it.
//!
//! The folders are the layers; each imports only from the layers below it (a test in
//! `tests/tests/layers.rs` holds this):
//!
//! - [`domain`]: values and pure rules, no I/O — ids, the style catalog, the validated edit
//!   request, [`domain::pricing`] (what an edit costs the user), [`domain::prompts`],
//!   [`domain::imaging`] (limited decoding, masks, compositing, leakage),
//!   [`domain::validation`], [`domain::webhooks`] (events and their signatures).
//! - [`adapters`]: the world outside — AWS clients, the S3 bucket, the SQS doorbell, the model
//!   providers (with [`adapters::model::catalogue`]: what a model call costs us), the payments
//!   provider, webhook delivery, metrics and logs, and [`adapters::cors`]: what a browser may send
//!   to the API and the bucket (one definition, exported to the infrastructure).
//! - [`store`]: DynamoDB; [`store::schema`] holds every table, key and attribute name.
//! - [`services`]: the use cases the functions call (submit, process, sweep, accounts, …).
//!
//! At the root: [`config`] (the environment, parsed once), [`error`], [`clock`].

pub mod adapters;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod services;
pub mod store;

pub use error::Error;
