//! The caller's account, its ledger, its deletion and its export.

use atelier_shared::domain::LedgerKind;
use atelier_shared::store::schema::{AccountItem, LedgerItem};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::jobs::JobView;

/// What a ledger row records.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = LedgerKind)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKindView {
    Grant,
    Debit,
    Refund,
    Purchase,
    PurchaseReversal,
    ReversalRestored,
}

impl From<LedgerKind> for LedgerKindView {
    fn from(k: LedgerKind) -> LedgerKindView {
        match k {
            LedgerKind::Grant => LedgerKindView::Grant,
            LedgerKind::Debit => LedgerKindView::Debit,
            LedgerKind::Refund => LedgerKindView::Refund,
            LedgerKind::Purchase => LedgerKindView::Purchase,
            LedgerKind::PurchaseReversal => LedgerKindView::PurchaseReversal,
            LedgerKind::ReversalRestored => LedgerKindView::ReversalRestored,
        }
    }
}

/// The signup grant of the account: `given`; `pending` until a sign-in with a verified
/// address (an ID token with `email_verified`); or `address_used`: the verified address had
/// its grant on another account (one grant per address, also after deleting an account).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignupGrantView {
    Given,
    Pending,
    AddressUsed,
}

impl SignupGrantView {
    fn of(a: &AccountItem) -> SignupGrantView {
        if a.signup_address_used {
            SignupGrantView::AddressUsed
        } else if a.signup_pending {
            SignupGrantView::Pending
        } else {
            SignupGrantView::Given
        }
    }
}

/// The caller's account.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountView {
    pub user_id: String,
    pub balance: i64,
    /// Edits queued or processing.
    pub in_flight: i64,
    pub max_in_flight: u32,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// A refunded or disputed purchase took back credits already spent: new edits are
    /// refused (`403 ACCOUNT_ON_HOLD`) until support releases the account.
    pub on_hold: bool,
    pub signup_grant: SignupGrantView,
    /// The token the apps buy with: the iOS app's `appAccountToken` (StoreKit 2's
    /// `.appAccountToken(UUID)`) and the Android app's `obfuscatedAccountId` (Play Billing's
    /// `setObfuscatedAccountId`). A random UUID, the same for the account's life; a purchase
    /// carrying another is refused for this account, one carrying none is refused
    /// (`PURCHASE_NOT_BOUND`) unless the deployment accepts unbound purchases.
    #[schema(example = "3f0c6a2e-9b1d-8e4f-a2c5-7d9e1b3a5c70")]
    pub app_account_token: String,
    /// When the account was closed for deletion: no new uploads or edits are accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub closed_at: Option<String>,
    /// When its deletion finished: every image gone, every edit's personal text cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub deleted_at: Option<String>,
    /// Since when the owner lets the App Store see how much of a purchase they used when they
    /// ask Apple to refund it (`PUT /v1/account/consumption-consent`); absent: not consented.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub consumption_consent_at: Option<String>,
}

/// `PUT /v1/account/consumption-consent` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsumptionConsentRequest {
    /// `true`: consent (the app asked its user); `false`: withdraw it.
    #[schema(value_type = bool, required = true)]
    pub consented: Option<bool>,
}

impl AccountView {
    pub fn new(a: AccountItem, max_in_flight: u32) -> AccountView {
        AccountView {
            signup_grant: SignupGrantView::of(&a),
            app_account_token: atelier_shared::services::purchase_binding::app_account_token(&a),
            user_id: a.user_id.to_string(),
            balance: a.credits.get(),
            in_flight: a.in_flight,
            max_in_flight,
            created_at: a.created_at,
            on_hold: a.hold.is_some(),
            closed_at: a.closed_at,
            deleted_at: a.deleted_at,
            consumption_consent_at: a.consumption_consent_at,
        }
    }
}

/// One ledger row.
#[derive(Debug, Serialize, ToSchema)]
pub struct LedgerEntryView {
    /// Signed: grants and refunds are positive, debits negative.
    pub amount: i64,
    pub kind: LedgerKindView,
    pub reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A purchase reversal: credits it could not take back because they were spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<i64>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<LedgerItem> for LedgerEntryView {
    fn from(l: LedgerItem) -> LedgerEntryView {
        LedgerEntryView {
            amount: l.amount.get(),
            kind: l.kind.into(),
            reference: l.reference,
            job_id: l.job_id.map(|j| j.to_string()),
            reason: l.reason,
            shortfall: l.shortfall.map(|s| s.get()),
            created_at: l.created_at,
        }
    }
}

/// A page of ledger rows, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct LedgerPage {
    pub items: Vec<LedgerEntryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `DELETE /v1/account`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountDeletionView {
    /// `deleted`: done. `pending`: closed and queued edits refunded, but edits still
    /// processing; send the same request again (it is idempotent) after `Retry-After`.
    pub status: String,
    /// Queued edits this request canceled and refunded.
    pub canceled: usize,
    /// Edits still processing (pending only).
    pub processing: usize,
    /// The account as it stands (done only): its remaining balance stays on the record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<AccountView>,
}

/// One page of `GET /v1/account/export`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportPageView {
    /// The account, on the first page only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<AccountView>,
    /// Ledger rows (the ledger's pages come first, newest first).
    pub ledger: Vec<LedgerEntryView>,
    /// Edits and repairs, newest first, with short-lived links to the images that still exist.
    pub jobs: Vec<JobView>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
