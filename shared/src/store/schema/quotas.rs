//! The quotas table's keys and rows: per-user counters, devices and push tokens' owners.

use serde::{Deserialize, Serialize};

use crate::domain::UserId;

/// The `quota` key of a caller's request counter for the window starting at `start` (Unix
/// seconds).
pub fn request_window_key(start: i64) -> String {
    format!("requests#{start}")
}

/// The `quota` key of a user's upload counter for one UTC day (`YYYY-MM-DD`).
pub fn upload_quota_key(day: &str) -> String {
    format!("uploads#{day}")
}

/// The `quota` key of a user's preview counter for one UTC day (`YYYY-MM-DD`).
pub fn preview_quota_key(day: &str) -> String {
    format!("previews#{day}")
}

/// The `quota` key of a user's long-poll slots (one row a user, expired by TTL a day after
/// its last wait).
pub const WAITS_QUOTA: &str = "waits";

/// The `quota` key of a user's device counter (never expired: it has no `expires_at`).
pub const DEVICES_QUOTA: &str = "devices";
/// The prefix of a device row's `quota` key.
pub const DEVICE_PREFIX: &str = "device#";

/// The `quota` key of one device of a user: `device#<id>`.
pub fn device_key(id: &crate::domain::device::DeviceId) -> String {
    format!("{DEVICE_PREFIX}{id}")
}

/// A device registered for push (quotas table, beside the user's counters; no TTL). Written
/// only in a transaction with the user's [`DEVICES_QUOTA`] count, so the count is exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceItem {
    pub user_id: UserId,
    /// [`device_key`].
    pub quota: String,
    pub platform: crate::domain::device::Platform,
    pub token: crate::domain::device::PushToken,
    pub created_at: String,
    pub updated_at: String,
}

/// The partition of a push token's owner row in the quotas table: `push-token#` and the
/// SHA-256 of the token (hex; an APNs token's hex in lower case, its case meaning nothing).
/// A user id never holds `#`, so it is never a user's partition.
pub fn push_token_key(token: &crate::domain::device::PushToken) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(token.as_str().to_ascii_lowercase().as_bytes());
    format!("{PUSH_TOKEN_PREFIX}{}", hex::encode(digest))
}

/// The prefix of a push token's owner row's partition ([`push_token_key`]).
pub const PUSH_TOKEN_PREFIX: &str = "push-token#";
/// The sort key of a push token's owner row.
pub const PUSH_TOKEN_OWNER: &str = "owner";

/// Which device of which account holds a push token (quotas table, [`push_token_key`] /
/// [`PUSH_TOKEN_OWNER`]): the uniqueness guard that gives a token one owner. Written in the
/// registration's transaction, which also removes the device row of the previous owner that
/// still holds the token; a row whose device has since changed its token or gone is stale
/// and harmless (a move removes the previous device only while it still holds the token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushTokenOwnerItem {
    /// [`push_token_key`] (the table's partition key).
    pub user_id: String,
    /// [`PUSH_TOKEN_OWNER`].
    pub quota: String,
    pub owner_id: UserId,
    pub device_id: crate::domain::device::DeviceId,
    pub updated_at: String,
}

/// A user's upload counter for one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadDayItem {
    pub user_id: UserId,
    pub quota: String,
    pub slots: u32,
    pub bytes: u64,
    pub expires_at: i64,
}
