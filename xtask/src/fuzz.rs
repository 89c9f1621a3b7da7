//! `cargo xtask fuzz [--requests N] [--seed S]` — schemathesis against the served OpenAPI
//! document of a private local run, then `atelier-admin audit` on the same tables.
//!
//! It starts its own ministack (port 4604), the stand-in model server (8805) and
//! `atelier-local serve` (8804, with the dev issuer), gets a dev token, and runs the pinned
//! schemathesis (its own venv, `.venv/fuzz`) with every check and a printed seed: the same seed
//! replays the same requests. The run fails on any 5xx, any schemathesis failure, fewer
//! requests than asked for, a refusal that is not problem+json or a JSON body that is not an
//! object accepted ([`REFUSALS_PY`](refusals::REFUSALS_PY)), or an audit that is not clean. It prints the requests sent, the
//! status histogram, the 5xx count, the audit result and the wall time.

mod command;
mod config;
mod refusals;
mod schemathesis;
mod service;
mod store_env;

pub use command::fuzz;
pub(crate) use service::{Service, spawn, start_model_and_api, wait_ready};
