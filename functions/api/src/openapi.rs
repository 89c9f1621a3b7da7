//! The OpenAPI document, generated from the handlers' annotations and kept in the repository
//! (`functions/api/openapi.json`; a test fails when they differ), and the route that serves it.
//! This module depends on the handlers; no handler depends on it.

use atelier_shared::domain::IdempotencyKey;
use atelier_shared::domain::webhooks::{EventType, Payload, sign};
use atelier_shared::services::watch::WAITS_PER_USER;
use axum::response::IntoResponse;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder, Schema};
use utoipa::{Modify, Number, OpenApi};

use crate::extract::Pagination;
use crate::handlers::{
    account, app_store, devices, edits, google_play, payments, public, quotes, uploads,
};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// What the shared edges of every route answer and accept, written once from the same
/// constants instead of on each handler (found missing by `cargo xtask fuzz`): the authorizer's
/// 401 on every secured route; the JSON body extractor's 400 (malformed), 413 and 415 on every
/// route with a body; the pagination extractor's 422 and its `limit` range; the
/// `Idempotency-Key` header's rule; and `{WAITS_PER_USER}` in a parameter's description
/// becomes that constant's value.
struct EdgeResponses;

fn problem(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

impl Modify for EdgeResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let ops = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for op in ops.into_iter().flatten() {
                let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let has_body = op.request_body.is_some();
                let mut paginated = false;
                for p in op.parameters.iter_mut().flatten() {
                    if let Some(d) = p.description.as_mut() {
                        *d = d.replace("{WAITS_PER_USER}", &WAITS_PER_USER.to_string());
                    }
                    let Some(RefOr::T(Schema::Object(schema))) = p.schema.as_mut() else {
                        continue;
                    };
                    match (&p.parameter_in, p.name.as_str()) {
                        (ParameterIn::Query, "limit") => {
                            paginated = true;
                            schema.minimum = Some(Number::UInt(1));
                            schema.maximum = Some(Number::UInt(Pagination::MAX_LIMIT.into()));
                        }
                        (ParameterIn::Header, "Idempotency-Key") => {
                            schema.min_length = Some(1);
                            schema.max_length = Some(IdempotencyKey::MAX_LEN);
                            schema.pattern = Some("^[!-~]+$".to_owned());
                        }
                        _ => {}
                    }
                }
                let responses = &mut op.responses.responses;
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| problem(description));
                };
                if secured {
                    add("401", "UNAUTHENTICATED: no valid bearer token");
                }
                if has_body {
                    add("400", "MALFORMED_JSON");
                    add("413", "PAYLOAD_TOO_LARGE");
                    add("415", "UNSUPPORTED_MEDIA_TYPE: JSON required");
                }
                if paginated {
                    add("400", "INVALID_CURSOR");
                    add("422", "VALIDATION_FAILED: limit out of range");
                }
                add(
                    "500",
                    "INTERNAL: the store or AWS failed; opaque, logged with its cause",
                );
                add(
                    "503",
                    "TRY_AGAIN: transactions kept conflicting; retry after `Retry-After`",
                );
            }
        }
    }
}

/// The events a deployment's webhook endpoints receive (OpenAPI 3.1 `webhooks`), one entry
/// per [`EventType`], each a signed POST of a [`Payload`] (Standard Webhooks headers). utoipa
/// has no `webhooks` field, so the section rides in the document's top-level map.
struct Webhooks;

impl Modify for Webhooks {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut schemas = Vec::new();
        <Payload as utoipa::ToSchema>::schemas(&mut schemas);
        schemas.push((
            <Payload as utoipa::ToSchema>::name().into_owned(),
            <Payload as utoipa::PartialSchema>::schema(),
        ));
        components.schemas.extend(schemas);
        let header = |name: &str, description: &str| {
            serde_json::json!({"name": name, "in": "header", "required": true,
                "description": description, "schema": {"type": "string"}})
        };
        let parameters = [
            header(
                sign::ID_HEADER,
                "the event's id: the same on every retry; dedupe by it",
            ),
            header(sign::TIMESTAMP_HEADER, "Unix seconds of this attempt"),
            header(
                sign::SIGNATURE_HEADER,
                "space-separated `v1,<base64 HMAC-SHA256>` of `id.timestamp.body`, one per active secret",
            ),
        ];
        let event = |kind: EventType| {
            serde_json::json!({"post": {
                "summary": format!("{}: signed, at least once", kind.as_str()),
                "operationId": format!("webhook_{}", kind.as_str().replace('.', "_")),
                "parameters": parameters,
                "requestBody": {"required": true, "content": {"application/json": {"schema":
                    {"$ref": format!("#/components/schemas/{}", <Payload as utoipa::ToSchema>::name())}}}},
                "responses": {"2XX": {"description": "received; any other answer (or none within the timeout) is retried"}},
            }})
        };
        let section: serde_json::Map<String, serde_json::Value> = EventType::ALL
            .iter()
            .map(|k| (k.as_str().to_owned(), event(*k)))
            .collect();
        openapi
            .extensions
            .get_or_insert_with(Default::default)
            .insert("webhooks".to_owned(), section.into());
    }
}

/// The longest texts a person types, written into the schema from the validators' own
/// constants (utoipa takes only literals there), so clients show a counter at the same limit
/// the API refuses at (the web app checks its copy against this document).
struct TextLimits;

impl Modify for TextLimits {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use atelier_shared::domain::{edit::limits, repair_request::INSTRUCTION_CHARS};
        let limits = [
            (
                "EditRequest",
                "target_description",
                limits::TARGET_DESCRIPTION_CHARS,
            ),
            ("EditRequest", "custom_style", limits::CUSTOM_STYLE_CHARS),
            ("RepairRequest", "instruction", INSTRUCTION_CHARS),
        ];
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        for (schema, field, max) in limits {
            if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(schema)
                && let Some(RefOr::T(Schema::Object(property))) = object.properties.get_mut(field)
            {
                property.max_length = Some(max);
            }
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Atelier API", version = "1.0.0", description = "Paid AI photo edits in handmade media. Errors are RFC 9457 problem details with a stable `code`."),
    servers((url = "/", description = "the origin serving this document: the local runner, or the deployed API's URL")),
    paths(
        public::healthz, public::styles, openapi,
        quotes::create_quote, uploads::create_upload, uploads::delete_asset,
        edits::create_edit, edits::get_edit, edits::list_edits, edits::cancel_edit, edits::adopt_candidate, edits::create_repair,
        edits::delete_edit_images,
        account::get_account, account::get_ledger, account::delete_account, account::export_account,
        account::put_consumption_consent,
        devices::put_device, devices::delete_device, devices::list_devices,
        payments::list_packs, payments::create_checkout, payments::stripe_webhook,
        app_store::create_apple_purchase, app_store::apple_webhook,
        google_play::create_google_purchase, google_play::google_webhook,
    ),
    modifiers(&BearerAuth, &EdgeResponses, &Webhooks, &TextLimits),
)]
struct ApiDoc;

/// The document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The committed document (`functions/api/openapi.json`), which the route serves as it is:
/// the test `the_served_openapi_document_matches_the_committed_one` keeps it equal to
/// [`document`]. Serving the file instead of building the document at each request keeps
/// every schema builder out of the binary (docs/benchmarks.md, issue 50).
pub const COMMITTED: &str = include_str!("../openapi.json");

/// This API's OpenAPI document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "public", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
pub async fn openapi() -> impl IntoResponse {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        COMMITTED,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use atelier_shared::adapters::cors;
    use utoipa::openapi::path::{Operation, ParameterIn};

    use super::*;

    /// Called by Stripe's servers, never by a page: no CORS.
    const SERVER_TO_SERVER: &[&str] = &[
        "/v1/webhooks/stripe",
        "/v1/webhooks/apple",
        "/v1/webhooks/google",
    ];

    /// Response headers a page may read without CORS exposing them (the safelist), and `Vary`,
    /// which is for caches, not for the app.
    const READABLE_WITHOUT_EXPOSE: &[&str] = &["cache-control", "content-type", "vary"];

    fn browser_operations() -> Vec<(String, &'static str, Operation)> {
        let doc = document();
        let mut ops = Vec::new();
        for (path, item) in doc.paths.paths {
            if SERVER_TO_SERVER.contains(&path.as_str()) {
                continue;
            }
            for (method, op) in [
                ("GET", item.get),
                ("POST", item.post),
                ("PUT", item.put),
                ("PATCH", item.patch),
                ("DELETE", item.delete),
            ] {
                if let Some(op) = op {
                    ops.push((path.clone(), method, op));
                }
            }
        }
        ops
    }

    #[test]
    fn cors_allows_every_method_a_route_has() {
        let refused: Vec<_> = browser_operations()
            .into_iter()
            .filter(|(_, m, _)| !cors::API.allows_method(m))
            .map(|(p, m, _)| format!("{m} {p}"))
            .collect();
        assert!(refused.is_empty(), "not in cors::API: {refused:?}");
    }

    #[test]
    fn cors_allows_every_request_header_a_route_reads() {
        let mut headers = BTreeSet::from(["authorization".to_owned(), "content-type".to_owned()]);
        for (_, _, op) in browser_operations() {
            for p in op.parameters.into_iter().flatten() {
                if matches!(p.parameter_in, ParameterIn::Header) {
                    headers.insert(p.name.to_ascii_lowercase());
                }
            }
        }
        let refused: Vec<_> = headers
            .iter()
            .filter(|h| !cors::API.allows_headers(std::iter::once(h.as_str())))
            .collect();
        assert!(refused.is_empty(), "not in cors::API: {refused:?}");
    }

    #[test]
    fn cors_exposes_every_response_header_a_route_sends() {
        let mut missing = BTreeSet::new();
        for (path, method, op) in browser_operations() {
            for (status, response) in op.responses.responses {
                let RefOr::T(response) = response else {
                    continue;
                };
                for name in response.headers.keys() {
                    let name = name.to_ascii_lowercase();
                    let exposed = cors::API.expose_headers.contains(&name.as_str());
                    if !exposed && !READABLE_WITHOUT_EXPOSE.contains(&name.as_str()) {
                        missing.insert(format!("{name} ({method} {path} {status})"));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not exposed by cors::API: {missing:?}");
    }

    #[test]
    fn the_wait_limit_in_the_document_is_the_constant() {
        let text = serde_json::to_string(&document()).unwrap();
        assert!(!text.contains("{WAITS_PER_USER}"));
        assert!(text.contains(&format!("already holds {WAITS_PER_USER} waits")));
    }
}
