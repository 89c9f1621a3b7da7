//! Routes and layers only.

use std::convert::Infallible;

use atelier_shared::services::App;
use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, delete, get, post, put};
use axum::{Extension, Router};

use crate::error::{ApiError, ProblemCode};
use crate::extract::{BodyLimit, MAX_JSON_BYTES};
use crate::handlers::{
    account, app_store, devices, edits, google_play, payments, public, quotes, uploads,
};
use crate::{openapi, rate_limit};

/// The API's router, as Lambda and the local runner serve it.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/healthz", get(public::healthz))
        .route("/v1/styles", get(public::styles))
        .route("/v1/openapi.json", get(openapi::openapi))
        .route("/v1/quotes", post(quotes::create_quote))
        .route("/v1/uploads", post(uploads::create_upload))
        .route("/v1/edits", post(edits::create_edit).get(edits::list_edits))
        .route("/v1/edits/{id}", get(edits::get_edit))
        .route("/v1/edits/{id}/cancel", post(edits::cancel_edit))
        .route("/v1/edits/{id}/adopt", post(edits::adopt_candidate))
        .route("/v1/edits/{id}/repairs", post(edits::create_repair))
        .route("/v1/edits/{id}/images", delete(edits::delete_edit_images))
        .route("/v1/assets/{id}", delete(uploads::delete_asset))
        .route(
            "/v1/account",
            get(account::get_account).delete(account::delete_account),
        )
        .route("/v1/account/ledger", get(account::get_ledger))
        .route(
            "/v1/account/consumption-consent",
            put(account::put_consumption_consent),
        )
        .route("/v1/account/export", get(account::export_account))
        .route("/v1/devices", get(devices::list_devices))
        .route(
            "/v1/devices/{id}",
            put(devices::put_device).delete(devices::delete_device),
        )
        .route("/v1/packs", get(payments::list_packs))
        .route("/v1/checkout", post(payments::create_checkout))
        .route(
            "/v1/webhooks/stripe",
            limited(post(payments::stripe_webhook), payments::MAX_WEBHOOK_BYTES),
        )
        .route(
            "/v1/purchases/apple",
            post(app_store::create_apple_purchase),
        )
        .route(
            "/v1/webhooks/apple",
            limited(
                post(app_store::apple_webhook),
                app_store::MAX_NOTIFICATION_BYTES,
            ),
        )
        .route(
            "/v1/purchases/google",
            post(google_play::create_google_purchase),
        )
        .route("/v1/webhooks/google", post(google_play::google_webhook))
        .fallback(|| async { ApiError::not_found().detail("no such route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                http::StatusCode::METHOD_NOT_ALLOWED,
                ProblemCode::MethodNotAllowed,
                "Method not allowed",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_JSON_BYTES))
        .layer(Extension(BodyLimit(MAX_JSON_BYTES)))
        // Outermost: a caller past its budget costs one counter update and nothing else.
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            rate_limit::per_caller,
        ))
        .with_state(app)
}

/// `route` with a body limit of its own: axum's (what the body extractors read up to) and
/// the same figure for the `413` problem to name.
fn limited(route: MethodRouter<App>, max: usize) -> MethodRouter<App> {
    route
        .layer::<_, Infallible>(DefaultBodyLimit::max(max))
        .layer(Extension(BodyLimit(max)))
}
