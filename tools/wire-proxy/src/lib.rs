//! A small HTTP/1.1 reverse proxy between the code and the local AWS (ministack).
//!
//! - It counts every request by service and operation ([`Proxy::counts`], `GET /_proxy/counts`),
//!   so call counts are measured on the wire rather than estimated.
//! - It injects, on a seeded share of requests ([`FaultPlan`]), the faults real AWS produces and
//!   the emulator never does: `TransactionCanceledException` with `TransactionConflict`,
//!   throttling, 500s, S3 `SlowDown`, a connection dropped after the emulator applied the request,
//!   and added latency. Each injected fault is recorded ([`Proxy::faults`]).
//!
//! Bodies stream both ways (a 12 MB S3 PUT is never buffered); only the small bodies the
//! decision needs are read first (a TransactWriteItems about to be cancelled, a query-protocol
//! form).
//!
//! Point an SDK at [`Proxy::url`] (as `AWS_ENDPOINT_URL`, or the config loader's
//! `endpoint_url`), with path-style S3.
//!
//! - It records, when asked ([`Proxy::record`]), the IAM authorisations each caller's requests
//!   need: principal, action and resource ARN ([`record`]), for the permission check in
//!   `infra/iam`.
//!
//! Control endpoints (for a proxy run as its own process): `GET /_proxy/counts`,
//! `GET /_proxy/faults`, `GET /_proxy/calls`, `POST /_proxy/reset`, `PUT /_proxy/plan` (a
//! [`FaultPlan`] as JSON, or `null` for none).

pub mod classify;
pub mod fault;
pub mod record;

mod body;
mod control;
mod counts;
mod forward;
mod handle;
mod proxy;
mod state;

pub use classify::{Operation, Protocol, Service};
pub use counts::Counts;
pub use fault::{Decision, FaultKind, FaultPlan};
pub use proxy::{Proxy, ProxyError, write_calls};
pub use record::{Attribution, Call};
pub use state::InjectedFault;
