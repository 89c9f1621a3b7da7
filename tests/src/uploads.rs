//! The upload endpoints: presigned slots, the PUT to one, and deleting an asset.

use atelier_shared::domain::UserId;
use axum::body::Body;
use http::StatusCode;
use serde_json::{Value, json};

use crate::harness::Harness;
use crate::reply::Reply;

impl Harness {
    /// `POST /v1/uploads`.
    pub async fn create_upload(
        &self,
        user: &UserId,
        kind: &str,
        content_type: &str,
        bytes: i64,
    ) -> Reply {
        let body = json!({ "kind": kind, "content_type": content_type, "bytes": bytes });
        let req = Harness::json_request("POST", "/v1/uploads")
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// PUTs bytes to a presigned upload with the headers it names; returns the HTTP status.
    pub async fn put_upload(
        &self,
        upload: &Reply,
        bytes: Vec<u8>,
        content_type: Option<&str>,
    ) -> u16 {
        let url = upload.str("upload_url");
        let mut req = reqwest::Client::new().put(url).body(bytes);
        if let Some(headers) = upload.body.get("headers").and_then(Value::as_object) {
            for (k, v) in headers {
                if k == "content-length" {
                    continue; // reqwest sets the real length of the body
                }
                let v = if k == "content-type" {
                    content_type.unwrap_or(v.as_str().unwrap_or(""))
                } else {
                    v.as_str().unwrap_or("")
                };
                req = req.header(k.as_str(), v);
            }
        }
        req.send().await.map(|r| r.status().as_u16()).unwrap_or(0)
    }

    /// Uploads an image of `kind` and returns its asset id.
    pub async fn upload(&self, user: &UserId, kind: &str, png: Vec<u8>) -> String {
        let slot = self
            .create_upload(user, kind, "image/png", png.len() as i64)
            .await;
        assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
        assert_eq!(self.put_upload(&slot, png, None).await, 200, "upload PUT");
        slot.str("asset_id")
    }

    /// `DELETE /v1/assets/{id}`.
    pub async fn delete_asset(&self, user: &UserId, id: &str) -> Reply {
        self.delete(user, &format!("/v1/assets/{id}")).await
    }
}
