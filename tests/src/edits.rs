//! The edit endpoints: quotes, submits, reads (long-poll, conditional, formats), repairs,
//! cancels, adoptions and image deletion, and downloading a result.

use atelier_shared::domain::UserId;
use axum::body::Body;
use http::{Request, StatusCode};
use serde_json::{Value, json};

use crate::harness::Harness;
use crate::reply::Reply;

impl Harness {
    /// `POST /v1/quotes`.
    pub async fn quote(&self, user: &UserId, body: &Value) -> Reply {
        let req = Harness::json_request("POST", "/v1/quotes")
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/edits` with a key and a JSON body.
    pub async fn submit(&self, user: &UserId, key: Option<&str>, body: &Value) -> Reply {
        self.submit_raw(user, key, body.to_string()).await
    }

    /// `POST /v1/edits` with raw body bytes.
    pub async fn submit_raw(&self, user: &UserId, key: Option<&str>, body: String) -> Reply {
        let mut b = Harness::json_request("POST", "/v1/edits");
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        self.call(
            Some(user),
            b.body(Body::from(body))
                .unwrap_or_else(|e| panic!("request: {e}")),
        )
        .await
    }

    /// Uploads a sample photo and submits an edit of it; returns the job id.
    pub async fn submit_photo(
        &self,
        user: &UserId,
        key: &str,
        photo: Vec<u8>,
        mut body: Value,
    ) -> String {
        let original = self.upload(user, "original", photo).await;
        body["original_asset_id"] = json!(original);
        let res = self.submit(user, Some(key), &body).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        res.str("id")
    }

    /// The job as its owner sees it.
    pub async fn job(&self, user: &UserId, id: &str) -> Reply {
        self.get(user, &format!("/v1/edits/{id}")).await
    }

    /// `GET /v1/edits/{id}{query}` with request headers (`Prefer`, `If-None-Match`): the
    /// long-poll and the conditional read.
    pub async fn job_with(
        &self,
        user: &UserId,
        id: &str,
        query: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = Request::get(format!("/v1/edits/{id}{query}"));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// The job with its result's `url` serving `format` (`GET /v1/edits/{id}?format=`).
    pub async fn job_in(&self, user: &UserId, id: &str, format: &str) -> Reply {
        self.get(user, &format!("/v1/edits/{id}?format={format}"))
            .await
    }

    /// `POST /v1/edits/{id}/repairs` with a key and a JSON body.
    pub async fn repair(&self, user: &UserId, id: &str, key: &str, body: &Value) -> Reply {
        let req = Harness::json_request("POST", &format!("/v1/edits/{id}/repairs"))
            .header("idempotency-key", key)
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/edits/{id}/cancel`.
    pub async fn cancel(&self, user: &UserId, id: &str) -> Reply {
        let req = Request::post(format!("/v1/edits/{id}/cancel"))
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/edits/{id}/adopt`: choose a repair's rejected candidate.
    pub async fn adopt(&self, user: &UserId, id: &str) -> Reply {
        let req = Request::post(format!("/v1/edits/{id}/adopt"))
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `DELETE /v1/edits/{id}/images`.
    pub async fn delete_edit_images(&self, user: &UserId, id: &str) -> Reply {
        self.delete(user, &format!("/v1/edits/{id}/images")).await
    }
}

/// The bytes behind a presigned download URL (a result), asserting `200`.
pub async fn download(url: &str) -> Vec<u8> {
    let res = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("download: {e}"));
    assert_eq!(res.status(), 200, "download of {url}");
    res.bytes()
        .await
        .unwrap_or_else(|e| panic!("download body: {e}"))
        .to_vec()
}
