//! The running server: its routes, and the handle that stops it when dropped.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};

use crate::books::{Options, Shared};
use crate::checkout::{checkout_page, pay};
use crate::events::events;
use crate::payments::{close_dispute, dispute, refund};
use crate::refunds;
use crate::sessions::{create_session, get_session, list_sessions};

/// A running server. Dropping it stops the server.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until the server stops by itself; used by the binary.
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

/// Starts a server on `addr` (port 0: any free port).
pub async fn spawn(addr: SocketAddr, options: Options) -> std::io::Result<ServerHandle> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let shared = Shared {
        options: Arc::new(options),
        base_url: Arc::new(format!("http://{addr}")),
        books: Arc::default(),
        http: reqwest::Client::new(),
    };
    let app = router(shared);
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(ServerHandle { addr, task })
}

fn router(shared: Shared) -> Router {
    Router::new()
        .route(
            "/v1/checkout/sessions",
            post(create_session).get(list_sessions),
        )
        .route(
            "/v1/refunds",
            post(refunds::create_refund).get(refunds::list_refunds),
        )
        .route("/v1/checkout/sessions/{id}", get(get_session))
        .route("/checkout/{id}", get(checkout_page))
        .route("/checkout/{id}/pay", post(pay))
        .route("/_stand-in/payments/{pi}/refund", post(refund))
        .route("/_stand-in/payments/{pi}/dispute", post(dispute))
        .route("/_stand-in/disputes/{dp}/close", post(close_dispute))
        .route("/_stand-in/events", get(events))
        .with_state(shared)
}
