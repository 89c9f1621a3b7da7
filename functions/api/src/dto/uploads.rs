//! Presigned uploads of images (assets).

use std::collections::BTreeMap;

use atelier_shared::domain::AssetKind;
use atelier_shared::services::uploads::UploadSlot;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/uploads` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadRequest {
    /// What the image is for; each kind has its own types and size limit.
    #[schema(value_type = AssetKind, required = true)]
    pub kind: Option<String>,
    /// `image/png`, `image/jpeg` or `image/webp` (a mask: `image/png`).
    #[schema(value_type = String, required = true, example = "image/png")]
    pub content_type: Option<String>,
    /// Exact size of the file to upload, in bytes (an original: at most 20 MiB; a mask: 8 MiB;
    /// a style reference: 10 MiB).
    #[schema(value_type = i64, required = true, minimum = 1)]
    pub bytes: Option<i64>,
}

/// A presigned upload: PUT the file's bytes to `upload_url` with exactly these headers.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadView {
    pub asset_id: String,
    #[schema(format = "uri")]
    pub upload_url: String,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

impl From<UploadSlot> for UploadView {
    fn from(s: UploadSlot) -> UploadView {
        UploadView {
            asset_id: s.asset_id.to_string(),
            upload_url: s.upload.url,
            method: s.upload.method,
            headers: s.upload.headers.into_iter().collect(),
            expires_at: atelier_shared::clock::format(s.expires_at),
        }
    }
}
