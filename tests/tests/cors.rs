//! CORS from the one definition (`atelier_shared::adapters::cors`): the local runner answers a browser
//! as API Gateway's HTTP API does with the CORS configuration CDK and Terraform deploy, for
//! every route and method of the OpenAPI document; another origin gets no CORS header; and
//! every presigned request the app makes passes the bucket's rule (checked here from the one
//! definition, besides ministack's own evaluation in the browser tests).

use std::collections::BTreeSet;

use atelier_local::authorizer::Authorizer;
use atelier_local::issuer::DevIssuer;
use atelier_local::serve::ISSUER_PATH;
use atelier_shared::adapters::cors::{self, Origins};
use atelier_tests::Harness;
use http::StatusCode;
use serde_json::Value;

const APP: &str = "http://127.0.0.1:5173";
const FOREIGN: &str = "http://localhost:5173";

/// Called by Stripe's and Apple's servers, never by a page.
const SERVER_TO_SERVER: &[&str] = &["/v1/webhooks/stripe", "/v1/webhooks/apple"];

async fn start() -> String {
    let h = Harness::new().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let base = format!(
        "http://{}",
        listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
    );
    let issuer_url = format!("{base}{ISSUER_PATH}");
    let issuer = DevIssuer::ephemeral(&issuer_url).unwrap_or_else(|e| panic!("{e}"));
    let router = atelier_local::serve::app(
        h.app.clone(),
        Authorizer::new(&issuer_url, "atelier"),
        Some(issuer),
    );
    let origins = Origins::parse(APP).unwrap_or_else(|e| panic!("{e}"));
    let router = atelier_local::cors::layer(router, origins);
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// Every (path, method, request headers) a page may use, from the committed OpenAPI document.
fn browser_operations() -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/openapi.json"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        if SERVER_TO_SERVER.contains(&path.as_str()) {
            continue;
        }
        for (method, op) in item.as_object().into_iter().flatten() {
            let mut headers = vec!["authorization".to_owned(), "content-type".to_owned()];
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "header" {
                    headers.push(p["name"].as_str().unwrap_or("").to_ascii_lowercase());
                }
            }
            let path = path.replace("{id}", "01jexample");
            ops.push((path, method.to_ascii_uppercase(), headers));
        }
    }
    ops
}

fn list(res: &reqwest::Response, name: &str) -> BTreeSet<String> {
    res.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

async fn preflight(
    base: &str,
    path: &str,
    origin: &str,
    method: &str,
    headers: &[String],
) -> reqwest::Response {
    reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}{path}"))
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header("access-control-request-headers", headers.join(","))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn the_app_origin_may_use_every_route_and_method_of_the_document_delete_included() {
    let base = start().await;
    let ops = browser_operations();
    assert!(
        ops.iter().any(|(_, m, _)| m == "DELETE"),
        "the document has DELETE routes"
    );
    for (path, method, headers) in ops {
        let res = preflight(&base, &path, APP, &method, &headers).await;
        assert_eq!(res.status(), StatusCode::NO_CONTENT, "{method} {path}");
        let origin = res.headers().get("access-control-allow-origin");
        assert_eq!(
            origin.and_then(|v| v.to_str().ok()),
            Some(APP),
            "{method} {path}"
        );
        let methods = list(&res, "access-control-allow-methods");
        assert!(
            methods.contains(&method.to_ascii_lowercase()),
            "{method} {path}"
        );
        let allowed = list(&res, "access-control-allow-headers");
        for h in &headers {
            assert!(allowed.contains(h), "{method} {path}: {h} not allowed");
        }
    }
}

#[tokio::test]
async fn a_preflight_from_another_origin_is_refused_without_cors_headers() {
    let base = start().await;
    let res = preflight(
        &base,
        "/v1/account",
        FOREIGN,
        "DELETE",
        &["authorization".to_owned()],
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(
        res.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control-"))
    );
}

#[tokio::test]
async fn an_answer_to_the_app_exposes_what_it_reads_and_one_to_another_origin_nothing() {
    let base = start().await;
    let http = reqwest::Client::new();
    let get = |origin: &'static str| {
        http.get(format!("{base}/v1/styles"))
            .header("origin", origin)
            .send()
    };
    let res = get(APP).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["access-control-allow-origin"], APP);
    let exposed: BTreeSet<String> = cors::API
        .expose_headers
        .iter()
        .map(|h| (*h).to_owned())
        .collect();
    assert_eq!(list(&res, "access-control-expose-headers"), exposed);
    for h in ["etag", "location", "retry-after", "preference-applied"] {
        assert!(exposed.contains(h), "{h} must be readable by the app");
    }
    // Refused by the browser: the answer carries no CORS header at all.
    let res = get(FOREIGN).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        res.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("access-control-"))
    );
}

#[tokio::test]
async fn every_presigned_upload_the_app_makes_passes_the_bucket_rule() {
    let h = Harness::new().await;
    let user = h.user();
    let kinds = [
        ("original", "image/png"),
        ("original", "image/jpeg"),
        ("mask", "image/png"),
        ("style_reference", "image/png"),
    ];
    for (kind, content_type) in kinds {
        let slot = h.create_upload(&user, kind, content_type, 1000).await;
        assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
        let method = slot.str("method");
        assert!(cors::BUCKET.allows_method(&method), "{method}");
        let headers = slot.body["headers"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(!headers.is_empty(), "the length and type are signed");
        assert!(
            cors::BUCKET.allows_headers(headers.keys().map(String::as_str)),
            "{headers:?} not all in cors::BUCKET"
        );
    }
    // Results and originals are plain GETs of presigned URLs.
    assert!(cors::BUCKET.allows_method("GET"));
}

#[tokio::test]
async fn the_local_bucket_gets_the_deployed_rule() {
    let h = Harness::new().await;
    let bucket = h.app.config.resources.bucket.clone();
    let origins = Origins::parse(APP).unwrap_or_else(|e| panic!("{e}"));
    atelier_shared::store::provision::ensure_bucket_cors(&h.clients, &bucket, &origins)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let got = h
        .clients
        .s3
        .get_bucket_cors()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let rules = got.cors_rules();
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert_eq!(rule.allowed_methods(), cors::BUCKET.allow_methods);
    assert_eq!(rule.allowed_headers(), cors::BUCKET.allow_headers);
    assert_eq!(rule.expose_headers(), cors::BUCKET.expose_headers);
    assert_eq!(rule.allowed_origins(), [APP]);
}
