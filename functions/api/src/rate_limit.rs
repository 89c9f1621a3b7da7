//! The per-caller request budget, enforced before any other work: a signed-in caller past its
//! window's budget gets `429 TOO_MANY_REQUESTS` with `Retry-After`, and nothing else runs (no
//! body read, no handler). Callers without the authorizer's claims (the webhooks, the public
//! routes) pass: `shared::services::rate_limit` says why.

use atelier_shared::clock;
use atelier_shared::services::App;
use atelier_shared::services::rate_limit::{Admission, admit};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::auth::subject;
use crate::error::{ApiError, ProblemCode};

pub async fn per_caller(State(app): State<App>, req: Request, next: Next) -> Response {
    let Some(user) = subject(req.extensions()) else {
        return next.run(req).await;
    };
    match admit(&app, &user, clock::now()).await {
        Admission::Admitted => next.run(req).await,
        Admission::Refused { retry_after_secs } => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ProblemCode::TooManyRequests,
            "Too many requests",
        )
        .detail(format!(
            "at most {} requests every {} s; try again in {retry_after_secs} s",
            app.config.limits.requests_per_window, app.config.limits.request_window_secs
        ))
        .retry_after(retry_after_secs)
        .into_response(),
    }
}
