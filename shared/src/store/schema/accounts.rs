//! An account's row and the signup grant of a verified address.

use serde::{Deserialize, Serialize};

// Only named by the docs' links.
#[cfg(doc)]
use super::attr;

use crate::domain::{AddressHash, Credits, UserId};

/// The account: balance and the in-flight count of rule 11.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountItem {
    pub user_id: UserId,
    pub credits: Credits,
    pub in_flight: i64,
    pub rev: i64,
    pub created_at: String,
    /// Created from a token without a verified e-mail: the signup grant is owed, not given.
    /// Absent on every account created with its grant (all accounts before this existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signup_pending: bool,
    /// [`attr::SIGNUP_ADDRESS_USED`]: the verified address already had its grant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signup_address_used: bool,
    /// Present while the account is on hold: new submits are refused until an operator
    /// releases it (`atelier-admin account release`) or the dispute behind it is won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// [`attr::CLOSED_AT`]: the account is being deleted or was; nothing new is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// [`attr::CLOSED_BY`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
    /// [`attr::DELETED_AT`]: the deletion finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
    /// [`attr::CONSUMPTION_CONSENT_AT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumption_consent_at: Option<String>,
    /// [`attr::APP_ACCOUNT_TOKEN`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_account_token: Option<String>,
}

/// The [`attr::DELETION_STATE`] of a closed account whose deletion is not finished.
pub const DELETION_PENDING: &str = "pending";

/// The signup grant of one verified address: which account got it and when. The address
/// itself is never stored, only its keyed hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignupItem {
    pub address_hash: AddressHash,
    pub user_id: UserId,
    pub granted_at: String,
}
