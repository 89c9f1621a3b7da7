//! JSON shapes of the API and their conversions from domain values.

use std::collections::BTreeMap;

use atelier_shared::domain::{
    AreaBox, AssetKind, Job, JobState, Operation, ResultFormat, Stage, Strength, StyleId, Target,
};
use atelier_shared::domain::{
    ComparisonOutcome, ComparisonRecord, JobFailure, LeakageRecord, LedgerKind, ReviewRecord,
    ReviewVerdict,
};
use atelier_shared::services::jobs::ResultLinks;
use atelier_shared::services::lineage::Lineage;
use atelier_shared::services::uploads::UploadSlot;
use atelier_shared::store::schema::{AccountItem, LedgerItem};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The settings of an edit, as validated.
#[derive(Debug, Serialize, ToSchema)]
pub struct EditSettings {
    pub style: StyleId,
    pub target: Target,
    pub strength: Strength,
    pub original_asset_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask_asset_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style_reference_asset_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_style: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_description: Option<String>,
    pub locks: Vec<String>,
}

/// A job as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    pub operation: Operation,
    pub status: JobState,
    /// While queued or processing, what it is doing: `queued`, `looking` (the readiness
    /// check), `drawing` (the edit), `checking` (the review, or a repair's comparison), as the
    /// consumer last recorded it. Absent once finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// While queued or processing (on `GET /v1/edits/{id}` only): how long, in seconds from
    /// submit to delivery, the caller's recent edits usually took (the median of their last
    /// delivered ones, at least 3); absent without enough of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_secs: Option<u32>,
    /// Credits charged for this job.
    pub credits: i64,
    pub settings: EditSettings,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureView>,
    /// Present once the job succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultView>,
    /// A repair: the edit it repairs and the instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairView>,
    /// An edit that has repairs, or a repair (on `GET /v1/edits/{id}` only): the versions
    /// and which one the user holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage: Option<LineageView>,
    /// When the job's images (inputs, result, candidates) were deleted at the owner's
    /// request: the job keeps its money fields and state, has no download links and cannot be
    /// repaired.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub images_deleted_at: Option<String>,
    /// When the retention period (`ATELIER_RESULT_RETENTION_DAYS`) removed the job's images:
    /// it has no download links any more.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub images_expired_at: Option<String>,
    /// A delivered job whose images are kept: a small JPEG of its result (at most 256 pixels
    /// a side), presigned like `result.url` and shown inline. Lists carry it instead of the
    /// result.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub thumbnail_url: Option<String>,
    /// A repair that did not improve on the version kept (the user holds the previous one):
    /// not a new delivered version.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retained_previous: bool,
}

/// What a repair job repairs.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepairView {
    /// The original edit of the lineage (the parent of every repair).
    pub parent_job_id: String,
    pub instruction: String,
}

/// An edit and its repairs.
#[derive(Debug, Serialize, ToSchema)]
pub struct LineageView {
    pub root_job_id: String,
    pub repairs_used: u32,
    pub repairs_left: u32,
    /// A repair did not improve on the version kept: no more repairs on this lineage.
    pub repairs_stopped: bool,
    /// The job whose image the user holds now.
    pub current_job_id: String,
    /// The edit, then each repair, oldest first.
    pub versions: Vec<VersionView>,
}

/// One job of a lineage.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionView {
    pub job_id: String,
    pub operation: Operation,
    pub status: JobState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonView>,
    pub retained_previous: bool,
    /// This job's image is the one the user holds.
    pub current: bool,
}

impl LineageView {
    pub fn new(l: &Lineage) -> LineageView {
        let current = l
            .root
            .current
            .as_ref()
            .map_or(&l.root.job_id, |c| &c.job_id);
        let version = |j: &Job| VersionView {
            job_id: j.job_id.to_string(),
            operation: j.operation,
            status: j.status(),
            instruction: j.repair.as_ref().map(|r| r.instruction.clone()),
            review: j.result().map(|r| ReviewView::from(&r.review)),
            comparison: j
                .result()
                .and_then(|r| r.comparison.as_ref().map(ComparisonView::from)),
            retained_previous: j.result().is_some_and(|r| r.retained_previous),
            current: &j.job_id == current,
        };
        LineageView {
            root_job_id: l.root.job_id.to_string(),
            repairs_used: l.root.repairs_used,
            repairs_left: l.root.repairs_left(),
            repairs_stopped: l.root.repairs_stopped,
            current_job_id: current.to_string(),
            versions: std::iter::once(&l.root)
                .chain(l.repairs.iter())
                .map(version)
                .collect(),
        }
    }
}

/// A delivered image: a short-lived download URL, the review and the measured leakage.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultView {
    /// Presigned GET, valid until `url_expires_at`, that a browser saves as a file
    /// (`Content-Disposition: attachment`, a name such as `atelier-embroidery-pet-01jf3xk2.jpg`).
    /// Ask for the job again for a fresh one.
    #[schema(format = "uri")]
    pub url: String,
    #[schema(format = DateTime)]
    pub url_expires_at: String,
    /// What `url` serves (`?format=`): `jpeg` by default; `png` when asked for, and for
    /// results delivered before JPEG renditions existed.
    pub format: ResultFormat,
    pub width: u32,
    pub height: u32,
    pub review: ReviewView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leakage: Option<LeakageView>,
    /// A pet or person edit: the box the readiness check found around the target, in
    /// thousandths of the photo's width and height — where the edit was meant to change things
    /// and outside which `leakage` is measured. Absent for a brushed area (the mask is the
    /// area), a background and a repair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub area: Option<AreaBox>,
    /// A repair: how its candidate compared with the version the user held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonView>,
    /// A repair that did not improve: `url` is the previous version, kept.
    pub retained_previous: bool,
    /// When the owner chose this repair's candidate over the version the comparison kept
    /// (`POST /v1/edits/{id}/adopt`): `url` is then the candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub adopted_at: Option<String>,
    /// The candidate such a repair made, for inspection (presigned like `url`, as a PNG).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub candidate_url: Option<String>,
    /// The photo the edit started from (the lineage's kept copy), presigned like `url` and
    /// shown inline: the "before" of a before/after compare, on any device, after a reload.
    #[schema(format = "uri")]
    pub original_url: String,
}

impl JobView {
    /// The full view: the result's download URLs and the lineage, or when the images expired.
    pub fn detailed(
        j: Job,
        links: Option<ResultLinks>,
        lineage: Option<&Lineage>,
        retention_days: u32,
    ) -> JobView {
        let expired_at = atelier_shared::services::jobs::images_expired_at(&j, retention_days)
            .filter(|_| j.images_deleted_at.is_none() && j.result().is_some());
        let result = j.result().cloned().zip(links).map(|(r, l)| ResultView {
            url: l.url,
            url_expires_at: l.expires_at,
            format: l.format,
            width: r.width,
            height: r.height,
            review: ReviewView::from(&r.review),
            leakage: r.leakage.as_ref().map(LeakageView::from),
            area: r.area,
            comparison: r.comparison.as_ref().map(ComparisonView::from),
            retained_previous: r.retained_previous,
            adopted_at: r.adopted_at.clone(),
            candidate_url: l.candidate_url,
            original_url: l.original_url,
        });
        let mut view = JobView::from(j);
        view.result = result;
        view.images_expired_at = expired_at;
        view.lineage = lineage.map(LineageView::new);
        view
    }
}

impl From<Job> for JobView {
    fn from(j: Job) -> JobView {
        let status = j.status();
        let failure = j.failure().cloned().map(FailureView::from);
        let retained_previous = j.result().is_some_and(|r| r.retained_previous);
        let stage = j.stage();
        let r = j.request;
        JobView {
            id: j.job_id.to_string(),
            operation: j.operation,
            status,
            stage,
            usual_secs: None,
            credits: j.credits.get(),
            settings: EditSettings {
                style: r.style,
                target: r.target,
                strength: r.strength,
                original_asset_id: r.original_asset_id.to_string(),
                mask_asset_id: r.mask_asset_id.map(|a| a.to_string()),
                style_reference_asset_id: r.style_reference_asset_id.map(|a| a.to_string()),
                custom_style: r.custom_style,
                target_description: r.target_description,
                locks: r.locks,
            },
            created_at: j.created_at,
            updated_at: j.updated_at,
            failure,
            result: None,
            repair: j.repair.map(|r| RepairView {
                parent_job_id: r.root_job_id.to_string(),
                instruction: r.instruction,
            }),
            lineage: None,
            images_deleted_at: j.images_deleted_at,
            images_expired_at: None,
            thumbnail_url: None,
            retained_previous,
        }
    }
}

/// A failure a user can read: stable code and a sentence.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = JobFailure)]
pub struct FailureView {
    /// Stable code: `NEEDS_CLARIFICATION`, `BUDGET_PAUSED` (everyone's edits are paused),
    /// `DAILY_LIMIT_REACHED` (the owner's share of the day's model budget is spent), `EDIT_FAILED`,
    /// `CHECK_FAILED`, `TIMED_OUT`, `INVALID_IMAGE`, `INVALID_MASK`, `ASSET_MISSING`,
    /// `REPAIR_BASE_MISSING`, `DISPATCH_LIMIT`, `INTERNAL_ERROR` or `CANCELED`.
    #[schema(value_type = atelier_shared::domain::FailureCode)]
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    /// `NEEDS_CLARIFICATION`: the subjects the checker found, each with its words (send one
    /// back as `target_description`) and its box in thousandths of the photo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateView>,
    /// `NEEDS_CLARIFICATION` with candidates, in `GET /v1/edits/{id}` while the images are
    /// kept: the photo they are outlined on (presigned, inline, short-lived).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub photo_url: Option<String>,
}

/// One subject a clarification offers.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ClarificationCandidate)]
pub struct CandidateView {
    /// The checker's words for it, e.g. "the one on the left".
    pub label: String,
    pub area: AreaBox,
}

impl From<JobFailure> for FailureView {
    fn from(f: JobFailure) -> FailureView {
        FailureView {
            code: f.code.as_str().to_owned(),
            message: f.message,
            questions: f.questions,
            candidates: f
                .candidates
                .into_iter()
                .map(|c| CandidateView {
                    label: c.label,
                    area: c.area,
                })
                .collect(),
            photo_url: None,
        }
    }
}

/// The reviewer's verdict on a delivered image. `NotVerified` when the reviewer was down,
/// answered malformed JSON, or the budget refused the review: never a silent pass.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = ReviewVerdict)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdictView {
    Passed,
    Failed,
    NotVerified,
}

impl From<ReviewVerdict> for ReviewVerdictView {
    fn from(v: ReviewVerdict) -> ReviewVerdictView {
        match v {
            ReviewVerdict::Passed => ReviewVerdictView::Passed,
            ReviewVerdict::Failed => ReviewVerdictView::Failed,
            ReviewVerdict::NotVerified => ReviewVerdictView::NotVerified,
        }
    }
}

/// What the reviewer said, kept with the result.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ReviewRecord)]
pub struct ReviewView {
    pub verdict: ReviewVerdictView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_reads_as_medium: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_photographic: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style_leaked: Option<bool>,
    /// The reviewer's notes, or why there is no verdict.
    pub notes: String,
}

impl From<&ReviewRecord> for ReviewView {
    fn from(r: &ReviewRecord) -> ReviewView {
        ReviewView {
            verdict: r.verdict.into(),
            target_reads_as_medium: r.target_reads_as_medium,
            rest_photographic: r.rest_photographic,
            style_leaked: r.style_leaked,
            notes: r.notes.clone(),
        }
    }
}

/// How a repair's candidate compared with the version the user held.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = ComparisonOutcome)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonOutcomeView {
    Improved,
    Unchanged,
    Worse,
    /// The reviewer was down or its answer unusable: no evidence either way.
    NotVerified,
}

/// The comparison kept with a repair's result.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComparisonRecord)]
pub struct ComparisonView {
    pub outcome: ComparisonOutcomeView,
    pub notes: String,
    /// The job whose image the candidate was compared with.
    pub compared_with: String,
}

impl From<&ComparisonRecord> for ComparisonView {
    fn from(c: &ComparisonRecord) -> ComparisonView {
        ComparisonView {
            outcome: match c.outcome {
                ComparisonOutcome::Improved => ComparisonOutcomeView::Improved,
                ComparisonOutcome::Unchanged => ComparisonOutcomeView::Unchanged,
                ComparisonOutcome::Worse => ComparisonOutcomeView::Worse,
                ComparisonOutcome::NotVerified => ComparisonOutcomeView::NotVerified,
            },
            notes: c.notes.clone(),
            compared_with: c.compared_with.to_string(),
        }
    }
}

/// Measured change outside the selection: parts per million of outside pixels that changed.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = LeakageRecord)]
pub struct LeakageView {
    pub changed_outside: u64,
    pub outside: u64,
    pub ratio_ppm: u32,
    /// `mask` (a brushed area: exact) or `region` (the checker's box around the target).
    pub basis: String,
}

impl From<&LeakageRecord> for LeakageView {
    fn from(l: &LeakageRecord) -> LeakageView {
        LeakageView {
            changed_outside: l.changed_outside,
            outside: l.outside,
            ratio_ppm: l.ratio_ppm,
            basis: l.basis.clone(),
        }
    }
}

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

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    pub items: Vec<JobView>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
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

/// The style catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct StyleList {
    pub items: Vec<atelier_shared::domain::Style>,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

/// A credit pack for sale.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackView {
    pub id: String,
    pub credits: i64,
    /// The price in the currency's minor unit (e.g. cents).
    pub amount: i64,
    /// ISO 4217, lower case.
    pub currency: String,
    /// The App Store consumable that sells this pack in the iOS app, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_store_product_id: Option<String>,
    /// The Google Play one-time product that sells this pack in the Android app, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub google_play_product_id: Option<String>,
}

impl From<&atelier_shared::domain::Pack> for PackView {
    fn from(p: &atelier_shared::domain::Pack) -> PackView {
        PackView {
            id: p.id.to_string(),
            credits: p.credits.get(),
            amount: p.amount,
            currency: p.currency.clone(),
            app_store_product_id: p.app_store_product_id.clone(),
            google_play_product_id: p.google_play_product_id.clone(),
        }
    }
}

/// `POST /v1/purchases/apple` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppleTransactionRequest {
    /// StoreKit 2's `Transaction.jwsRepresentation` (the `signedTransactionInfo` JWS), as is.
    #[schema(value_type = String, required = true, max_length = 12288)]
    pub signed_transaction: Option<String>,
}

/// A granted (or already granted) App Store transaction.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplePurchaseView {
    /// The App Store's `transactionId`.
    pub transaction_id: String,
    /// The pack it bought.
    pub pack: String,
    /// The credits it granted.
    pub credits: i64,
    /// `granted`, or `already_granted` (submitted before by this user; nothing changed).
    pub outcome: &'static str,
}

impl From<atelier_shared::services::app_store::AppStorePurchase> for ApplePurchaseView {
    fn from(p: atelier_shared::services::app_store::AppStorePurchase) -> ApplePurchaseView {
        ApplePurchaseView {
            transaction_id: p.transaction_id,
            pack: p.pack,
            credits: p.credits.get(),
            outcome: grant_outcome(p.granted),
        }
    }
}

/// A store purchase's `outcome`.
fn grant_outcome(granted: bool) -> &'static str {
    if granted {
        "granted"
    } else {
        "already_granted"
    }
}

/// `POST /v1/webhooks/apple` body: an App Store Server Notification v2.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppleNotificationRequest {
    /// The notification's JWS, as Apple sent it.
    #[schema(value_type = String, required = true, max_length = 32768)]
    pub signed_payload: Option<String>,
}

/// `POST /v1/purchases/google` body: what Google Play Billing's `Purchase` says.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GooglePurchaseRequest {
    /// The product bought (`Purchase.getProducts()`, one item): a pack's
    /// `google_play_product_id`.
    #[schema(value_type = String, required = true, max_length = 139, example = "starter_pack")]
    pub product_id: Option<String>,
    /// `Purchase.getPurchaseToken()`, as is.
    #[schema(value_type = String, required = true, max_length = 1024)]
    pub purchase_token: Option<String>,
}

/// A granted (or already granted) Google Play purchase.
#[derive(Debug, Serialize, ToSchema)]
pub struct GooglePurchaseView {
    /// Google Play's `orderId` (`GPA.…`).
    pub order_id: String,
    /// The pack it bought.
    pub pack: String,
    /// The credits it granted.
    pub credits: i64,
    /// `granted`, or `already_granted` (submitted before by this user; nothing changed).
    pub outcome: &'static str,
}

impl From<atelier_shared::services::google_play::GooglePlayPurchase> for GooglePurchaseView {
    fn from(p: atelier_shared::services::google_play::GooglePlayPurchase) -> GooglePurchaseView {
        GooglePurchaseView {
            order_id: p.order_id,
            pack: p.pack,
            credits: p.credits.get(),
            outcome: grant_outcome(p.granted),
        }
    }
}

/// `POST /v1/webhooks/google` body: a Pub/Sub push (`PushRequest`) of a Real-time Developer
/// Notification.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GooglePushRequest {
    pub message: GooglePushMessage,
    /// The push subscription's name.
    pub subscription: Option<String>,
}

/// The Pub/Sub message of a push.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GooglePushMessage {
    /// The `DeveloperNotification` JSON, base64.
    pub data: String,
    pub message_id: String,
    #[schema(format = DateTime)]
    pub publish_time: Option<String>,
}

/// The catalogue.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackList {
    pub items: Vec<PackView>,
}

/// `POST /v1/checkout` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRequest {
    /// A pack id from `GET /v1/packs`.
    #[schema(value_type = String, required = true, example = "starter")]
    pub pack: Option<String>,
    /// Where Stripe sends the payer after paying; must start with a configured return URL
    /// (default: the first one, with `?checkout=success`).
    #[schema(format = "uri")]
    pub success_url: Option<String>,
    /// Where Stripe sends the payer who cancels (default: `?checkout=cancel`).
    #[schema(format = "uri")]
    pub cancel_url: Option<String>,
}

/// A Checkout Session: send the payer to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutView {
    pub id: String,
    #[schema(format = "uri")]
    pub url: String,
}

impl From<atelier_shared::services::payments::Checkout> for CheckoutView {
    fn from(c: atelier_shared::services::payments::Checkout) -> CheckoutView {
        CheckoutView {
            id: c.id,
            url: c.url,
        }
    }
}

/// What the webhook did with an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookReceipt {
    /// `granted`, `already_granted`, `reversed`, `already_reversed`, `restored`,
    /// `already_restored`, `ignored`, `consumption_sent` (an App Store `CONSUMPTION_REQUEST`
    /// answered), `reversed_first` (a reversal of a purchase not granted yet, recorded: that
    /// purchase never grants), `purchase_reversed_first` (a Stripe purchase whose reversal
    /// came first: nothing granted) or `refunded` (a payment for a closed account, given back
    /// at once: nothing granted).
    pub outcome: &'static str,
    /// Credits added (negative: taken back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits: Option<i64>,
    /// A reversal: credits it could not take back (the account is then on hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<i64>,
}

impl From<atelier_shared::services::payments::WebhookOutcome> for WebhookReceipt {
    fn from(o: atelier_shared::services::payments::WebhookOutcome) -> WebhookReceipt {
        use atelier_shared::services::payments::WebhookOutcome as W;
        let (outcome, credits, shortfall) = match o {
            W::Granted { credits } => ("granted", Some(credits.get()), None),
            W::AlreadyGranted => ("already_granted", None, None),
            W::Reversed { taken, shortfall } => {
                ("reversed", Some(-taken.get()), Some(shortfall.get()))
            }
            W::AlreadyReversed => ("already_reversed", None, None),
            W::ReversedFirst => ("reversed_first", None, None),
            W::PurchaseReversedFirst => ("purchase_reversed_first", None, None),
            W::Restored { credits } => ("restored", Some(credits.get()), None),
            W::AlreadyRestored => ("already_restored", None, None),
            W::Ignored { .. } => ("ignored", None, None),
            W::ConsumptionSent { .. } => ("consumption_sent", None, None),
            W::Refunded { .. } => ("refunded", None, None),
        };
        WebhookReceipt {
            outcome,
            credits,
            shortfall,
        }
    }
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

/// `PUT /v1/devices/{id}` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceRequest {
    /// `ios` (APNs) or `android` (FCM).
    #[schema(value_type = String, required = true, example = "ios")]
    pub platform: Option<String>,
    /// The push service's token for this install: APNs, 64-4096 hex characters; FCM, 1-4096
    /// of `A-Z a-z 0-9 - _ : .`.
    #[schema(value_type = String, required = true)]
    pub token: Option<String>,
}

/// A registered device (its token is never shown back).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceView {
    pub id: String,
    /// `ios` or `android`.
    pub platform: String,
}

/// `GET /v1/devices`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    pub items: Vec<DeviceView>,
    /// How many devices a user may register.
    pub limit: u32,
}
