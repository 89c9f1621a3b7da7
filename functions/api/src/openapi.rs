//! The OpenAPI document, generated from the handlers' annotations and kept in the repository
//! (`functions/api/openapi.json`; a test fails when they differ).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::handlers::{account, edits, public, quotes, uploads};

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

#[derive(OpenApi)]
#[openapi(
    info(title = "Atelier API", version = "1.0.0", description = "Paid AI photo edits in handmade media. Errors are RFC 9457 problem details with a stable `code`."),
    paths(
        public::healthz, public::styles, public::openapi,
        quotes::create_quote, uploads::create_upload,
        edits::create_edit, edits::get_edit, edits::list_edits, edits::cancel_edit, edits::create_repair,
        account::get_account, account::get_ledger,
    ),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

/// The document.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
