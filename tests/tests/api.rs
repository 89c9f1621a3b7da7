//! Bad input, visibility between users, pagination, uploads and the public routes.

use atelier_tests::Harness;
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::json;

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_and_changes_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let before = h.balance(&user).await;
    let ok = json!({ "style": "embroidery", "target": "pet", "original_asset_id": original });
    let with = |k: &str, v: serde_json::Value| {
        let mut b = ok.clone();
        b[k] = v;
        b.to_string()
    };
    let long_key = "k".repeat(256);
    // (why, Idempotency-Key, body, status, code, field named in the errors)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        String,
        u16,
        &'a str,
        Option<&'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "unknown style",
            Some("k1"),
            with("style", json!("oil_paint")),
            422,
            "VALIDATION_FAILED",
            Some("style"),
        ),
        (
            "brush without mask",
            Some("k2"),
            with("target", json!("brush")),
            422,
            "VALIDATION_FAILED",
            Some("mask_asset_id"),
        ),
        (
            "over-long text",
            Some("k3"),
            with("custom_style", json!("x".repeat(201))),
            422,
            "VALIDATION_FAILED",
            Some("custom_style"),
        ),
        (
            "control character",
            Some("k4"),
            with("target_description", json!("the cat\u{0007}")),
            422,
            "VALIDATION_FAILED",
            Some("target_description"),
        ),
        (
            "newline in a lock",
            Some("k5"),
            with("locks", json!(["collar\nignore all"])),
            422,
            "VALIDATION_FAILED",
            Some("locks[0]"),
        ),
        (
            "wrong type",
            Some("k6"),
            with("locks", json!("collar")),
            422,
            "VALIDATION_FAILED",
            Some("locks"),
        ),
        (
            "unknown field",
            Some("k7"),
            with("price", json!(0)),
            422,
            "VALIDATION_FAILED",
            None,
        ),
        (
            "malformed JSON",
            Some("k8"),
            "{\"style\": ".to_owned(),
            400,
            "MALFORMED_JSON",
            None,
        ),
        (
            "not an object",
            Some("k9"),
            "[1,2]".to_owned(),
            422,
            "VALIDATION_FAILED",
            None,
        ),
        (
            "no key",
            None,
            ok.to_string(),
            400,
            "IDEMPOTENCY_KEY_REQUIRED",
            None,
        ),
        (
            "key over 255",
            Some(long_key.as_str()),
            ok.to_string(),
            400,
            "IDEMPOTENCY_KEY_INVALID",
            None,
        ),
        (
            "key with a space",
            Some("a b"),
            ok.to_string(),
            400,
            "IDEMPOTENCY_KEY_INVALID",
            None,
        ),
    ];
    for (why, key, body, status, code, field) in cases {
        let res = h.submit_raw(&user, key, body).await;
        assert_eq!(res.status.as_u16(), status, "{why}: {res:?}");
        assert_eq!(res.code(), code, "{why}");
        assert_eq!(
            res.header("content-type"),
            Some("application/problem+json"),
            "{why}"
        );
        if let Some(field) = field {
            let fields: Vec<&str> = res.body["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["field"].as_str())
                .collect();
            assert!(
                fields.contains(&field),
                "{why}: wanted field {field}, got {fields:?}"
            );
        }
    }
    assert_eq!(h.balance(&user).await, before, "nothing was charged");
    assert_eq!(h.ledger(&user).await.len(), 1, "only the signup grant");
    assert_eq!(h.get(&user, "/v1/edits").await.body["items"], json!([]));
}

#[tokio::test]
async fn oversized_or_wrong_typed_uploads_are_refused() {
    let h = Harness::new().await;
    let user = h.user();
    let cases = [
        ("gif original", "original", "image/gif", 100, "content_type"),
        ("jpeg mask", "mask", "image/jpeg", 100, "content_type"),
        (
            "21 MB original",
            "original",
            "image/png",
            21 * 1024 * 1024,
            "bytes",
        ),
        ("empty file", "original", "image/png", 0, "bytes"),
        ("unknown kind", "avatar", "image/png", 100, "kind"),
    ];
    for (why, kind, ct, bytes, field) in cases {
        let res = h.create_upload(&user, kind, ct, bytes).await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{why}: {res:?}"
        );
        assert_eq!(res.body["errors"][0]["field"], field, "{why}");
    }
}

#[tokio::test]
async fn the_presigned_upload_accepts_only_the_declared_size_and_type() {
    let h = Harness::new().await;
    let user = h.user();
    let png = Harness::png(4, 4);
    let slot = h
        .create_upload(&user, "original", "image/png", png.len() as i64)
        .await;
    assert_eq!(slot.status, StatusCode::CREATED);

    let mut bigger = png.clone();
    bigger.extend_from_slice(&[0; 10]);
    assert_eq!(
        h.put_upload(&slot, bigger, None).await,
        403,
        "a larger body than declared"
    );
    assert_eq!(
        h.put_upload(&slot, png.clone(), Some("image/jpeg")).await,
        403,
        "another content type"
    );
    assert_eq!(
        h.put_upload(&slot, png, None).await,
        200,
        "exactly as declared"
    );
}

#[tokio::test]
async fn another_users_job_is_404() {
    let h = Harness::new().await;
    let (owner, stranger) = (h.user(), h.user());
    let original = h.upload(&owner, "original", Harness::png(4, 4)).await;
    let job = h
        .submit(
            &owner,
            Some("mine"),
            &json!({ "style": "mosaic", "target": "person", "original_asset_id": original }),
        )
        .await;
    assert_eq!(job.status, StatusCode::ACCEPTED);
    let path = format!("/v1/edits/{}", job.str("id"));

    assert_eq!(h.get(&stranger, &path).await.status, StatusCode::NOT_FOUND);
    assert_eq!(h.get(&stranger, "/v1/edits").await.body["items"], json!([]));
    assert_eq!(h.get(&owner, &path).await.status, StatusCode::OK);
    assert_eq!(
        h.get(&owner, "/v1/edits/not-a-job-id").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn no_authorizer_context_is_401() {
    let h = Harness::new().await;
    for uri in ["/v1/account", "/v1/edits", "/v1/account/ledger"] {
        let res = h
            .call(
                None,
                Request::get(uri)
                    .body(Body::empty())
                    .expect("a valid request"),
            )
            .await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{uri}");
        assert_eq!(res.code(), "UNAUTHENTICATED");
    }
}

#[tokio::test]
async fn public_routes_need_no_token() {
    let h = Harness::new().await;
    let styles = h
        .call(
            None,
            Request::get("/v1/styles")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await;
    assert_eq!(styles.status, StatusCode::OK);
    assert_eq!(styles.body["items"].as_array().map(Vec::len), Some(15));
    let health = h
        .call(
            None,
            Request::get("/healthz")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await;
    assert_eq!(health.body["status"], "ok");
    let missing = h
        .call(
            None,
            Request::get("/nope")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await;
    assert_eq!(
        (missing.status, missing.code()),
        (StatusCode::NOT_FOUND, "NOT_FOUND")
    );
}

#[tokio::test]
async fn jobs_and_ledger_page_newest_first_and_cursors_are_the_callers_own() {
    let h = Harness::new().await;
    let (user, stranger) = (h.user(), h.user());
    h.fund_to(&user, 100).await;
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let res = h
            .submit(
                &user,
                Some(&format!("page-{i}")),
                &json!({ "style": "linocut", "target": "pet", "original_asset_id": original }),
            )
            .await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        ids.push(res.str("id"));
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }

    let first = h.get(&user, "/v1/edits?limit=2").await;
    let cursor = first.str("next_cursor");
    let second = h
        .get(&user, &format!("/v1/edits?limit=2&cursor={cursor}"))
        .await;

    let seen: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|p| p.body["items"].as_array().cloned().unwrap_or_default())
        .filter_map(|j| j["id"].as_str().map(str::to_owned))
        .collect();
    ids.reverse();
    assert_eq!(seen, ids, "newest first, each once");
    assert_eq!(
        h.get(&stranger, &format!("/v1/edits?cursor={cursor}"))
            .await
            .code(),
        "INVALID_CURSOR"
    );
    assert_eq!(
        h.get(&user, "/v1/edits?limit=0").await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        h.get(&user, "/v1/edits?cursor=garbage!").await.code(),
        "INVALID_CURSOR"
    );

    let ledger = h.get(&user, "/v1/account/ledger?limit=10").await;
    let kinds: Vec<&str> = ledger.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["debit", "debit", "debit", "grant", "grant"],
        "{ledger:?}"
    );
}

/// A cursor in the right shape for the caller whose other key values are empty: DynamoDB
/// would refuse it as a start key, so the API refuses it first.
fn forged_cursor(fields: &[(&str, &str)]) -> String {
    use base64::Engine;
    let map: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::Value::Object(map).to_string())
}

#[tokio::test]
async fn a_cursor_with_empty_key_values_is_400_invalid_cursor_on_both_lists() {
    let h = Harness::new().await;
    let user = h.user();
    let me = user.as_str();
    let cases = [
        (
            "/v1/edits",
            forged_cursor(&[("user_id", me), ("job_id", ""), ("user_sort", "")]),
        ),
        (
            "/v1/edits",
            forged_cursor(&[("user_id", me), ("job_id", "j"), ("user_sort", "")]),
        ),
        (
            "/v1/account/ledger",
            forged_cursor(&[("user_id", me), ("ref", ""), ("at_ref", "")]),
        ),
        (
            "/v1/account/ledger",
            forged_cursor(&[("user_id", ""), ("ref", "r"), ("at_ref", "a")]),
        ),
    ];
    for (path, cursor) in cases {
        let res = h.get(&user, &format!("{path}?cursor={cursor}")).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{path}: {res:?}");
        assert_eq!(res.code(), "INVALID_CURSOR", "{path}");
    }
}

#[tokio::test]
async fn hidden_characters_are_refused_in_every_text_field_and_change_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let before = h.balance(&user).await;
    let ok = json!({ "style": "embroidery", "target": "pet", "original_asset_id": original });
    // (field, value, field named in the refusal)
    let cases = [
        (
            "target_description",
            json!("the cat\u{E0049}\u{E0047}\u{E004E}"),
            "target_description",
        ),
        ("custom_style", json!("wool\u{00AD}felt"), "custom_style"),
        ("locks", json!(["the\u{2062}collar"]), "locks[0]"),
        (
            "target_description",
            json!("\u{202E}tac eht"),
            "target_description",
        ),
        (
            "target_description",
            json!("the cat\u{FEFF}"),
            "target_description",
        ),
    ];
    for (i, (field, value, named)) in cases.into_iter().enumerate() {
        let mut body = ok.clone();
        body[field] = value;
        for res in [
            h.submit(&user, Some(&format!("hidden-{i}")), &body).await,
            h.quote(&user, &body).await,
        ] {
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{field}: {res:?}"
            );
            let errors = res.body["errors"].as_array().cloned().unwrap_or_default();
            assert!(
                errors
                    .iter()
                    .any(|e| e["field"] == named && e["code"] == "invisible_character"),
                "{field}: {errors:?}"
            );
        }
    }
    assert_eq!(h.balance(&user).await, before, "nothing was charged");
    assert_eq!(h.get(&user, "/v1/edits").await.body["items"], json!([]));
}

#[tokio::test]
async fn the_quote_is_what_the_edit_charges() {
    let h = Harness::new().await;
    let user = h.funded_user(100).await;
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let mask = h.upload(&user, "mask", Harness::png(4, 4)).await;
    let reference = h.upload(&user, "style_reference", Harness::png(4, 4)).await;
    let bodies = [
        json!({ "style": "crochet", "target": "pet", "original_asset_id": original }),
        json!({ "style": "crochet", "target": "background", "original_asset_id": original, "style_reference_asset_id": reference }),
        json!({ "style": "crochet", "target": "brush", "original_asset_id": original, "mask_asset_id": mask }),
    ];
    for (i, body) in bodies.iter().enumerate() {
        let quote = h.quote(&user, body).await;
        let before = h.balance(&user).await;
        let res = h.submit(&user, Some(&format!("q-{i}")), body).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        let price = quote.body["credits"].as_i64().expect("the quote's price");
        assert_eq!(res.body["credits"].as_i64(), Some(price));
        assert_eq!(h.balance(&user).await, before - price, "case {i}");
    }
}

#[tokio::test]
async fn the_served_openapi_document_matches_the_committed_one() {
    let h = Harness::new().await;
    let served = h
        .call(
            None,
            Request::get("/v1/openapi.json")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await
        .body;
    // The document generated from the handlers' annotations; the route serves the file.
    let generated =
        serde_json::to_value(atelier_api::openapi::document()).expect("the document serializes");
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions/api/openapi.json");
    // Compared as JSON values: key order depends on serde_json's `preserve_order`, which
    // feature unification may switch on in a workspace-wide build.
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        let pretty = sorted_json(&generated);
        std::fs::write(&path, &pretty).unwrap_or_else(|e| panic!("{e}"));
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("functions/api/openapi.json"))
            .expect("functions/api/openapi.json is JSON");
    assert!(
        committed == generated,
        "functions/api/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo xtask test -- openapi`"
    );
    assert!(
        served == committed,
        "the route serves another document than functions/api/openapi.json"
    );
    for path in [
        "/v1/edits",
        "/v1/edits/{id}",
        "/v1/uploads",
        "/v1/quotes",
        "/v1/account",
        "/v1/account/ledger",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path} documented");
    }
}

#[tokio::test]
async fn the_openapi_document_names_every_failure_code_and_the_daily_limit() {
    let h = Harness::new().await;
    let served = h
        .call(
            None,
            Request::get("/v1/openapi.json")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await
        .body;
    let codes = served["components"]["schemas"]["JobFailure"]["properties"]["code"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for code in atelier_shared::domain::FailureCode::ALL {
        assert!(
            codes.contains(code.as_str()),
            "{code} missing from {codes:?}"
        );
    }
    let edits = served["paths"]["/v1/edits"]["post"]["responses"]["429"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(edits.contains("DAILY_LIMIT_REACHED"), "{edits:?}");
}

/// A receiver's developer reads the events in the document (OpenAPI 3.1 `webhooks`): every
/// event type, its signed headers and the payload schema; and every route documents the 500 and
/// 503 any route can answer.
#[tokio::test]
async fn the_openapi_document_describes_every_webhook_event_and_every_server_error() {
    let h = Harness::new().await;
    let served = h
        .call(
            None,
            Request::get("/v1/openapi.json")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await
        .body;
    for kind in atelier_shared::domain::webhooks::EventType::ALL {
        let post = &served["webhooks"][kind.as_str()]["post"];
        let schema = &post["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(schema, "#/components/schemas/WebhookEvent", "{kind:?}");
        let headers: Vec<&str> = post["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(
            headers,
            ["webhook-id", "webhook-timestamp", "webhook-signature"]
        );
    }
    let types = &served["components"]["schemas"]["WebhookEventType"]["enum"];
    let all = atelier_shared::domain::webhooks::EventType::ALL;
    assert_eq!(types.as_array().map(Vec::len), Some(all.len()));
    for (path, item) in served["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            for status in ["500", "503"] {
                assert!(
                    op["responses"][status].is_object(),
                    "{method} {path} {status}"
                );
            }
        }
    }
}

/// What generated clients (the web app's TypeScript; Swift and Kotlin for mobile) need from the
/// document: required, non-nullable request fields with enums, timestamps with a format, the
/// headers a client acts on, a described response everywhere and no Rust doc links.
#[tokio::test]
async fn the_openapi_document_is_strict_enough_for_generated_clients() {
    let h = Harness::new().await;
    let doc = h
        .call(
            None,
            Request::get("/v1/openapi.json")
                .body(Body::empty())
                .expect("a valid request"),
        )
        .await
        .body;
    let schemas = &doc["components"]["schemas"];
    let edit = &schemas["EditRequest"];
    for field in ["style", "target", "original_asset_id"] {
        assert!(
            edit["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|f| f == field)),
            "EditRequest.{field} required: {edit}"
        );
    }
    assert_eq!(
        edit["properties"]["style"]["$ref"],
        "#/components/schemas/StyleId"
    );
    assert_eq!(
        edit["properties"]["target"]["$ref"],
        "#/components/schemas/Target"
    );
    assert_eq!(schemas["Target"]["enum"].as_array().map(Vec::len), Some(4));
    // The texts a person types carry the limits the validators refuse at.
    for (schema, field, max) in [
        ("EditRequest", "target_description", 200),
        ("EditRequest", "custom_style", 200),
        ("RepairRequest", "instruction", 300),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["maxLength"], max,
            "{schema}.{field}"
        );
    }
    assert_eq!(
        schemas["StyleId"]["enum"].as_array().map(Vec::len),
        Some(15)
    );
    assert_eq!(
        schemas["UploadRequest"]["properties"]["kind"]["$ref"],
        "#/components/schemas/AssetKind"
    );
    for (schema, field) in [
        ("JobView", "created_at"),
        ("ResultView", "url_expires_at"),
        ("UploadView", "expires_at"),
        ("LedgerEntryView", "created_at"),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["format"], "date-time",
            "{schema}.{field}"
        );
    }
    let edits = &doc["paths"]["/v1/edits"]["post"]["responses"];
    assert!(edits["202"]["headers"]["Location"].is_object(), "{edits}");
    assert!(
        edits["200"]["headers"]["Idempotent-Replayed"].is_object(),
        "{edits}"
    );
    assert!(
        edits["429"]["headers"]["Retry-After"].is_object(),
        "{edits}"
    );
    assert!(
        doc["servers"].as_array().is_some_and(|s| !s.is_empty()),
        "a servers entry"
    );
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            for (status, res) in op["responses"].as_object().into_iter().flatten() {
                let text = res["description"].as_str().unwrap_or_default();
                assert!(
                    !text.trim().is_empty(),
                    "{method} {path} {status} has no description"
                );
            }
        }
    }
    assert!(
        !doc.to_string().contains("[`"),
        "a Rust doc link leaks into the document"
    );
}

/// `PUT` `uri` as `user` with a raw JSON body.
async fn put_raw(
    h: &Harness,
    user: &atelier_shared::domain::UserId,
    uri: &str,
    body: &str,
) -> atelier_tests::Reply {
    let req = Harness::json_request("PUT", uri)
        .body(Body::from(body.to_owned()))
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call(Some(user), req).await
}

/// serde reads a JSON array as a struct's fields in order: `[true]` would be
/// `{"consented": true}`. Every body is an object; anything else is refused before it is read.
#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_422_and_writes_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let before = h.balance(&user).await;
    let token = "ab".repeat(32);
    let edit_in_order = json!([
        "embroidery",
        "pet",
        null,
        original,
        null,
        null,
        null,
        null,
        []
    ]);

    let consent = put_raw(&h, &user, "/v1/account/consumption-consent", "[true]").await;
    let device = put_raw(
        &h,
        &user,
        "/v1/devices/phone",
        &json!(["ios", token]).to_string(),
    )
    .await;
    let edit = h.submit(&user, Some("array-edit"), &edit_in_order).await;
    let scalars = [" \"x\"", "true", "null", "7"];
    let mut others = Vec::new();
    for body in scalars {
        others.push((
            body,
            put_raw(&h, &user, "/v1/account/consumption-consent", body).await,
        ));
    }

    for (why, res) in [("consent", &consent), ("device", &device), ("edit", &edit)]
        .into_iter()
        .chain(others.iter().map(|(b, r)| (*b, r)))
    {
        res.assert_problem(StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED", why);
        assert_eq!(
            res.header("content-type"),
            Some("application/problem+json"),
            "{why}"
        );
        assert_eq!(res.body["errors"][0]["field"], "body", "{why}: {res:?}");
    }
    let account = h
        .app
        .store
        .get_account(&user)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let consent_at = account.and_then(|a| a.consumption_consent_at);
    assert_eq!(consent_at, None, "no consent was recorded");
    assert!(
        h.device_ids(&user).await.is_empty(),
        "no device was registered"
    );
    assert_eq!(h.balance(&user).await, before, "nothing was charged");
    assert_eq!(h.ledger(&user).await.len(), 1, "only the signup grant");
    assert_eq!(h.get(&user, "/v1/edits").await.body["items"], json!([]));
    let object = put_raw(
        &h,
        &user,
        "/v1/account/consumption-consent",
        " {\"consented\": true}",
    )
    .await;
    assert_eq!(
        object.status,
        StatusCode::OK,
        "the same route takes an object: {object:?}"
    );
}

/// Webhook routes read the raw body (its bytes are what the provider signed); past their
/// limit they answer the same `413` problem as the JSON routes, not axum's plain text.
#[tokio::test]
async fn an_oversized_webhook_body_is_a_413_problem() {
    let h = Harness::new().await;
    let cases = [
        ("/v1/webhooks/google", 20 * 1024),
        ("/v1/webhooks/stripe", 300 * 1024),
        ("/v1/webhooks/apple", 300 * 1024),
    ];
    for (uri, bytes) in cases {
        let body = format!("{{\"pad\":\"{}\"}}", "x".repeat(bytes));
        let req = Harness::json_request("POST", uri)
            .body(Body::from(body))
            .unwrap_or_else(|e| panic!("request: {e}"));
        let res = h.call(None, req).await;
        res.assert_problem(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", uri);
        assert_eq!(
            res.header("content-type"),
            Some("application/problem+json"),
            "{uri}"
        );
        let detail = res.body["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains("at most"),
            "{uri} names its limit: {detail}"
        );
    }
}

/// `value` as pretty JSON with every object's keys sorted, whatever serde_json's
/// `preserve_order` (a filtered build may switch it on): the committed document's one layout.
fn sorted_json(value: &serde_json::Value) -> String {
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let entries = keys.into_iter().map(|k| (k.clone(), sorted(&map[k])));
                serde_json::Value::Object(entries.collect())
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sorted(value)).unwrap_or_else(|e| panic!("{e}")) + "\n"
}
