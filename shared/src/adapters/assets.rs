//! The private bucket. Every object lives under its owner's prefix
//! (`uploads/{user}/{kind}/{asset}`), so "not the caller's" and "missing" are the same 404.
//! Clients upload straight to S3 with a presigned PUT whose length and type are signed.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;

use crate::domain::{AssetId, AssetKind, ResultFormat, UserId};
use crate::error::AwsError;

/// A presigned upload.
#[derive(Debug, Clone)]
pub struct PresignedUpload {
    pub url: String,
    pub method: String,
    /// Headers the client must send exactly (they are signed).
    pub headers: Vec<(String, String)>,
}

/// The bucket.
#[derive(Clone, Debug)]
pub struct Assets {
    s3: Client,
    bucket: String,
}

impl Assets {
    pub fn new(s3: Client, bucket: String) -> Assets {
        Assets { s3, bucket }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The object key of an upload.
    pub fn upload_key(user: &UserId, kind: AssetKind, id: &AssetId) -> String {
        format!(
            "uploads/{}/{}/{}",
            user.as_str(),
            kind.as_str(),
            id.as_str()
        )
    }

    /// A PUT URL that accepts exactly `bytes` bytes of `content_type`.
    pub async fn presign_upload(
        &self,
        key: &str,
        content_type: &str,
        bytes: u64,
        ttl: Duration,
    ) -> Result<PresignedUpload, AwsError> {
        let config = PresigningConfig::expires_in(ttl)
            .map_err(|e| AwsError::new("assets.presign.config", e))?;
        let length = i64::try_from(bytes).map_err(|e| AwsError::new("assets.presign.length", e))?;
        let req = self
            .s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .content_length(length)
            .presigned(config)
            .await
            .map_err(|e| AwsError::new("assets.presign", e))?;
        let headers = req
            .headers()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("host"))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        Ok(PresignedUpload {
            url: req.uri().to_owned(),
            method: req.method().to_owned(),
            headers,
        })
    }

    /// Whether an object exists (HeadObject; 404 is `false`).
    pub async fn exists(&self, key: &str) -> Result<bool, AwsError> {
        Ok(self.etag(key).await?.is_some())
    }

    /// An object's ETag, which names its exact bytes (HeadObject); `None` when it does not
    /// exist.
    pub async fn etag(&self, key: &str) -> Result<Option<String>, AwsError> {
        match self
            .s3
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(head) => head
                .e_tag
                .map(Some)
                .ok_or_else(|| AwsError::new("assets.head.etag", NoEtag)),
            Err(e) => {
                let not_found = e.as_service_error().is_some_and(|s| s.is_not_found())
                    || has_status(e.raw_response(), 404);
                if not_found {
                    Ok(None)
                } else {
                    Err(AwsError::new("assets.head", e))
                }
            }
        }
    }

    /// Reads an object of at most `max_bytes` (checked from its length before the body is
    /// read). `Ok(None)` when it does not exist.
    pub async fn get_limited(
        &self,
        key: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, AssetReadError> {
        let out = match self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) if has_status(e.raw_response(), 404) => return Ok(None),
            Err(e) => return Err(AssetReadError::Aws(AwsError::new("assets.get", e))),
        };
        let declared = out.content_length.unwrap_or(0).max(0).unsigned_abs();
        if declared > max_bytes {
            return Err(AssetReadError::TooLarge {
                bytes: declared,
                max: max_bytes,
            });
        }
        let body = out
            .body
            .collect()
            .await
            .map_err(|e| AssetReadError::Aws(AwsError::new("assets.read", e)))?;
        let bytes = body.into_bytes();
        if bytes.len() as u64 > max_bytes {
            return Err(AssetReadError::TooLarge {
                bytes: bytes.len() as u64,
                max: max_bytes,
            });
        }
        Ok(Some(bytes.to_vec()))
    }

    /// Stores an image privately (server-side encryption is the bucket's default).
    pub async fn put_image(
        &self,
        key: &str,
        bytes: Vec<u8>,
        format: ResultFormat,
    ) -> Result<(), AwsError> {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(format.content_type())
            .body(bytes.into())
            .send()
            .await
            .map_err(|e| AwsError::new("assets.put", e))?;
        Ok(())
    }

    /// A short-lived GET URL for a private object.
    pub async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, AwsError> {
        let config = PresigningConfig::expires_in(ttl)
            .map_err(|e| AwsError::new("assets.presign.config", e))?;
        let req = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(config)
            .await
            .map_err(|e| AwsError::new("assets.presign_get", e))?;
        Ok(req.uri().to_owned())
    }

    /// A short-lived GET URL that a browser saves as `filename` (`Content-Disposition:
    /// attachment`) with `content_type`, also cross-origin, where `<a download>` is ignored.
    pub async fn presign_download(
        &self,
        key: &str,
        ttl: Duration,
        filename: &str,
        content_type: &str,
    ) -> Result<String, AwsError> {
        let config = PresigningConfig::expires_in(ttl)
            .map_err(|e| AwsError::new("assets.presign.config", e))?;
        let req = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .response_content_disposition(format!("attachment; filename=\"{filename}\""))
            .response_content_type(content_type)
            .presigned(config)
            .await
            .map_err(|e| AwsError::new("assets.presign_download", e))?;
        Ok(req.uri().to_owned())
    }

    /// Deletes one object (S3 answers success for a key that is already gone).
    pub async fn delete(&self, key: &str) -> Result<(), AwsError> {
        self.s3
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| AwsError::new("assets.delete", e))?;
        Ok(())
    }

    /// Up to 1,000 keys under `prefix` (one ListObjectsV2 page).
    pub async fn list_page(&self, prefix: &str) -> Result<Vec<String>, AwsError> {
        let out = self
            .s3
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .send()
            .await
            .map_err(|e| AwsError::new("assets.list", e))?;
        Ok(out
            .contents
            .unwrap_or_default()
            .into_iter()
            .filter_map(|o| o.key)
            .collect())
    }

    /// Deletes every object under `prefix`, a listed page at a time (list, then delete what
    /// was listed, until a listing comes back empty); returns how many it deleted. Safe to
    /// repeat and to resume after a crash: what is gone is simply not listed again.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<usize, AwsError> {
        let mut deleted = 0;
        loop {
            let keys = self.list_page(prefix).await?;
            if keys.is_empty() {
                return Ok(deleted);
            }
            for key in &keys {
                self.delete(key).await?;
            }
            deleted += keys.len();
        }
    }

    /// Copies `from` to `to` within the bucket (server-side; no bytes pass through us), only
    /// if `from` still has `etag` (`x-amz-copy-source-if-match`, checked by S3 atomically with
    /// the copy), so the copy is exactly the bytes that ETag names.
    pub async fn copy_if_match(
        &self,
        from: &str,
        to: &str,
        etag: &str,
    ) -> Result<Copied, AwsError> {
        match self
            .s3
            .copy_object()
            .bucket(&self.bucket)
            .copy_source(format!("{}/{from}", self.bucket))
            .copy_source_if_match(etag)
            .key(to)
            .send()
            .await
        {
            Ok(_) => Ok(Copied::Done),
            Err(e) if has_status(e.raw_response(), 404) => Ok(Copied::SourceMissing),
            Err(e) if has_status(e.raw_response(), 412) => Ok(Copied::SourceChanged),
            Err(e) => Err(AwsError::new("assets.copy", e)),
        }
    }

    /// Every prefix holding `user`'s objects: uploads, and results (which hold each edit's
    /// kept inputs, see [`Assets::kept_input_key`]).
    pub fn user_prefixes(user: &UserId) -> [String; 2] {
        [
            format!("uploads/{}/", user.as_str()),
            format!("results/{}/", user.as_str()),
        ]
    }

    /// Where a job's own images live (its result, candidates and kept inputs).
    pub fn job_prefix(user: &UserId, job: &crate::domain::JobId) -> String {
        format!("results/{}/{}/", user.as_str(), job.as_str())
    }

    /// The edit's own copy of an input, made by the consumer that claimed the edit, from the
    /// upload's bytes the job recorded at submit: repairs read it, so they keep working after
    /// the upload expires or is deleted. Under the job's results prefix, so it lives as long as
    /// the result it can repair (the same lifecycle rule) and goes with it.
    pub fn kept_input_key(user: &UserId, root: &crate::domain::JobId, kind: AssetKind) -> String {
        format!("{}inputs/{}", Assets::job_prefix(user, root), kind.as_str())
    }

    /// Where a job's delivered image (or a kept candidate) is stored in `format`.
    pub fn result_key(
        user: &UserId,
        job: &crate::domain::JobId,
        name: &str,
        format: ResultFormat,
    ) -> String {
        format!(
            "results/{}/{}/{}.{}",
            user.as_str(),
            job.as_str(),
            name,
            format.extension()
        )
    }
}

/// How a conditional copy ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    Done,
    /// The source is gone (deleted, or expired).
    SourceMissing,
    /// The source has other bytes than the ETag named (overwritten since).
    SourceChanged,
}

/// S3 answered a HeadObject of an existing object without its ETag (it never should).
#[derive(Debug, thiserror::Error)]
#[error("HeadObject answered without an ETag")]
struct NoEtag;

fn has_status(raw: Option<&aws_sdk_s3::config::http::HttpResponse>, status: u16) -> bool {
    raw.is_some_and(|r| r.status().as_u16() == status)
}

/// Reading an input image failed.
#[derive(Debug, thiserror::Error)]
pub enum AssetReadError {
    #[error("object is {bytes} bytes, over the limit of {max}")]
    TooLarge { bytes: u64, max: u64 },
    #[error(transparent)]
    Aws(AwsError),
}
