//! The stand-in model server: the OpenAI image-edit and chat-completions endpoints, and
//! Gemini's `generateContent` ([`gemini`]), over real HTTP, so every test exercises the real [`atelier_shared::adapters::model::ModelClient`] over the wire.
//! It is the default model when no provider key is configured, so the local run works offline.
//!
//! - It does real image work: the edit restyles deterministically per medium
//!   ([`restyle`]) inside the mask, spilling a few pixels past it as real models do, or inside
//!   the region it finds itself from the `Target:` line ([`scene`]).
//! - The vision calls answer from measurement of the images: a readiness check that cannot
//!   single out the target asks which one; a review that measures real change outside the
//!   selection; a comparison by a measured score. User data never steers them.
//! - It counts calls per kind and per job (`X-Client-Request-Id`) and takes scripted faults
//!   ([`state`]): errors, timeouts, latency, malformed answers, missing usage, not ready.
//!
//! Control endpoints: `GET /_stand-in/calls`, `POST /_stand-in/reset` (counters and faults),
//! `GET|POST|DELETE /_stand-in/faults`.

pub mod api;
pub mod control;
pub mod credentials;
mod exchange;
pub mod gemini;
mod judge;
mod render;
pub mod restyle;
pub mod samples;
pub mod scene;
mod seen;
pub mod state;
pub mod wire_diff;

use std::net::SocketAddr;
use std::time::Duration;

pub use control::Control;
pub use state::{CallCounts, Counts, Fault, FaultCall, FaultRule, StandIn};

/// Server options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How long a `timeout` fault holds a request when its rule names no `ms`.
    pub hold: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            hold: api::DEFAULT_HOLD,
        }
    }
}

/// A running server. Dropping it stops the server (in-flight requests are cut).
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    state: StandIn,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for the model client, e.g. `http://127.0.0.1:40123`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server's counters and faults, for in-process tests.
    pub fn state(&self) -> &StandIn {
        &self.state
    }

    /// Stops serving.
    pub fn stop(self) {
        self.task.abort();
    }

    /// Waits until the server stops by itself (an accept error); used by the binary.
    pub async fn wait(mut self) -> std::io::Result<()> {
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a server on `addr` (port 0 for any free port) with default options.
pub async fn spawn(addr: SocketAddr) -> std::io::Result<(SocketAddr, ServerHandle)> {
    spawn_with(addr, Options::default()).await
}

/// Starts a server on `addr` with `options`.
pub async fn spawn_with(
    addr: SocketAddr,
    options: Options,
) -> std::io::Result<(SocketAddr, ServerHandle)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let state = StandIn::new(options.hold);
    let app = api::router(state.clone());
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, ServerHandle { addr, state, task }))
}
