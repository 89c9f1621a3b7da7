//! Atelier's shared library: every rule lives here once, and the three functions, the admin
//! tool and the local runner only translate events into calls on it.
//!
//! - [`domain`]: newtype ids, the style catalog, the validated edit request and its hash.
//! - [`pricing`]: the one price function: what an edit costs the user, in credits (quotes and
//!   charges).
//! - [`store`]: DynamoDB adapters; [`store::schema`] holds every table, key and attribute name.
//! - [`queue`], [`assets`]: SQS doorbell and the private S3 bucket.
//! - [`services`]: use cases (submit, accounts, uploads, audit, grant).
//! - [`imaging`]: limited decoding, masks, compositing through a mask, leakage.
//! - [`model`]: the model client (OpenAI wire), vision answers, and [`model::cost`]: what a
//!   model call costs us in micro-dollars.
//! - [`prompts`]: the prompt recipes (numbered image roles; user text only as JSON data).

pub mod address_key;
pub mod assets;
pub mod aws;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod imaging;
pub mod metrics;
pub mod model;
pub mod payments;
pub mod pricing;
pub mod prompts;
pub mod provision;
pub mod queue;
pub mod services;
pub mod store;
pub mod telemetry;
pub mod validation;
pub mod webhooks;

pub use error::Error;
