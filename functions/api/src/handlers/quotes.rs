//! Quotes: the price from the same function that charges.

use atelier_shared::domain::EditRequest;
use atelier_shared::domain::pricing::{self, Quote};
use axum::Json;

use crate::auth::Caller;
use crate::error::{ApiError, Problem};
use crate::extract::JsonBody;

/// The price of an edit request, exactly what `POST /v1/edits` would charge.
#[utoipa::path(post, path = "/v1/quotes", tag = "edits", request_body = EditRequest,
    security(("bearer" = [])),
    responses((status = 200, body = Quote, description = "the price in credits, with its parts"), (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: `errors` names each bad field")))]
pub async fn create_quote(
    _caller: Caller,
    JsonBody(req): JsonBody<EditRequest>,
) -> Result<Json<Quote>, ApiError> {
    let spec = req.validate().map_err(ApiError::validation)?;
    Ok(Json(pricing::quote(&spec)))
}
