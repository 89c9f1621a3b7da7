//! Uploads: the API never sees image bytes. It hands out a short-lived PUT URL into the
//! caller's own prefix with the declared size and type signed, so S3 refuses anything else.

use crate::domain::validation::FieldCode;
use std::time::Duration;

use super::App;
use crate::adapters::assets::{Assets, PresignedUpload};
use crate::clock::{self, Instant};
use crate::domain::EmailStatus;
use crate::domain::validation::FieldErrors;
use crate::domain::{AssetId, AssetKind, UserId};
use crate::error::Error;
use crate::store::quotas::{UploadCount, UploadLimits};

/// A validated upload request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadSpec {
    pub kind: AssetKind,
    pub content_type: &'static str,
    pub bytes: u64,
}

impl UploadSpec {
    /// Validates the loose fields of `POST /v1/uploads`.
    pub fn parse(
        kind: Option<&str>,
        content_type: Option<&str>,
        bytes: Option<i64>,
    ) -> Result<UploadSpec, FieldErrors> {
        let mut errors = FieldErrors::default();
        let kind = match kind {
            None => {
                errors.push("kind", FieldCode::Required, "is required");
                None
            }
            Some(k) => AssetKind::parse(k.trim()).or_else(|| {
                errors.push(
                    "kind",
                    FieldCode::UnknownKind,
                    "must be one of original, mask, style_reference",
                );
                None
            }),
        };
        let content_type = match (kind, content_type) {
            (_, None) => {
                errors.push("content_type", FieldCode::Required, "is required");
                None
            }
            (None, Some(_)) => None,
            (Some(kind), Some(ct)) => {
                let ct = ct.trim().to_ascii_lowercase();
                let found = kind
                    .content_types()
                    .iter()
                    .copied()
                    .find(|allowed| *allowed == ct);
                if found.is_none() {
                    errors.push(
                        "content_type",
                        FieldCode::UnsupportedType,
                        format!(
                            "must be one of {} for a {}",
                            kind.content_types().join(", "),
                            kind.as_str()
                        ),
                    );
                }
                found
            }
        };
        let bytes = match (kind, bytes) {
            (_, None) => {
                errors.push("bytes", FieldCode::Required, "is required");
                None
            }
            (_, Some(b)) if b <= 0 => {
                errors.push("bytes", FieldCode::TooSmall, "must be at least 1");
                None
            }
            (Some(kind), Some(b)) if b.unsigned_abs() > kind.max_bytes() => {
                errors.push(
                    "bytes",
                    FieldCode::TooLarge,
                    format!(
                        "must be at most {} for a {}",
                        kind.max_bytes(),
                        kind.as_str()
                    ),
                );
                None
            }
            (_, Some(b)) => Some(b.unsigned_abs()),
        };
        match (kind, content_type, bytes) {
            (Some(kind), Some(content_type), Some(bytes)) if errors.is_empty() => Ok(UploadSpec {
                kind,
                content_type,
                bytes,
            }),
            _ => Err(errors),
        }
    }
}

/// An upload slot handed to the client.
#[derive(Debug, Clone)]
pub struct UploadSlot {
    pub asset_id: AssetId,
    pub upload: PresignedUpload,
    pub expires_at: Instant,
}

/// A day's counter outlives its day by this much before TTL may delete it (TTL deletes
/// within days, not on the second; the counter is only read for its own day).
const COUNTER_KEPT_FOR: Duration = Duration::from_secs(2 * 86_400);

/// When TTL may delete a per-user counter of `now`'s UTC day (uploads, previews): Unix seconds.
pub(crate) fn day_counter_expires_at(now: clock::Instant) -> i64 {
    (now + clock::until_next_utc_day(now) + COUNTER_KEPT_FOR).unix_timestamp()
}

/// Creates a presigned upload in the caller's prefix, after counting it against the caller's
/// slots and bytes for the UTC day (one conditional update; refused: nothing presigned).
pub async fn create_upload(
    app: &App,
    user: &UserId,
    email: EmailStatus,
    spec: &UploadSpec,
) -> Result<UploadSlot, Error> {
    let account = super::accounts::ensure_account(app, user, email).await?;
    if account.closed_at.is_some() {
        return Err(Error::AccountClosed);
    }
    let (day_slots, day_bytes) = count_against_the_day(app, user, spec.bytes).await?;
    let asset_id = AssetId::generate();
    let key = Assets::upload_key(user, spec.kind, &asset_id);
    let ttl = Duration::from_secs(app.config.limits.upload_url_ttl_secs);
    let upload = app
        .assets
        .presign_upload(&key, spec.content_type, spec.bytes, ttl)
        .await?;
    tracing::info!(user_id = %user, asset_id = %asset_id, kind = spec.kind.as_str(), bytes = spec.bytes, day_slots, day_bytes, "upload_presigned");
    Ok(UploadSlot {
        asset_id,
        upload,
        expires_at: clock::now() + ttl,
    })
}

/// Counts the upload; the day's slots and bytes with it.
async fn count_against_the_day(app: &App, user: &UserId, bytes: u64) -> Result<(u32, u64), Error> {
    let now = clock::now();
    let limits = UploadLimits {
        slots: app.config.limits.upload_slots_per_day,
        bytes: app.config.limits.upload_bytes_per_day,
    };
    let expires_at = day_counter_expires_at(now);
    let day = super::budget::day_of(now);
    match app
        .store
        .count_upload(user, &day, bytes, limits, expires_at)
        .await?
    {
        UploadCount::Counted { slots, bytes } => Ok((slots, bytes)),
        UploadCount::Refused { slots, bytes } => {
            tracing::info!(user_id = %user, slots, bytes, "upload_limit_reached");
            Err(Error::UploadLimitReached {
                slots_used: slots,
                slot_limit: limits.slots,
                bytes_used: bytes,
                byte_limit: limits.bytes,
                retry_after: clock::until_next_utc_day(now),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_limits() {
        let ok = UploadSpec::parse(Some("mask"), Some("image/png"), Some(10));
        assert_eq!(ok.map(|s| s.bytes).ok(), Some(10));
        let cases: &[(&str, &str, i64, &str, &str)] = &[
            (
                "mask",
                "image/jpeg",
                10,
                "content_type",
                "a mask must be lossless",
            ),
            (
                "original",
                "image/gif",
                10,
                "content_type",
                "gif is not accepted",
            ),
            ("original", "image/png", 0, "bytes", "empty"),
            (
                "original",
                "image/png",
                20 * 1024 * 1024 + 1,
                "bytes",
                "oversized",
            ),
            ("poster", "image/png", 10, "kind", "unknown kind"),
        ];
        for (kind, ct, bytes, field, why) in cases {
            let errs = UploadSpec::parse(Some(kind), Some(ct), Some(*bytes)).err();
            assert!(
                errs.is_some_and(|e| e.0.iter().any(|f| f.field == *field)),
                "{why}"
            );
        }
    }
}
