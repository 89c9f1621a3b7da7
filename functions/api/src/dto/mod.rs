//! JSON shapes of the API and their conversions from domain values, one file per resource.

mod account;
mod devices;
mod jobs;
mod public;
mod purchases;
mod review;
mod uploads;
mod webhooks;

pub use account::{
    AccountDeletionView, AccountView, ConsumptionConsentRequest, ExportPageView, LedgerEntryView,
    LedgerKindView, LedgerPage, SignupGrantView,
};
pub use devices::{DeviceList, DeviceRequest, DeviceView};
pub use jobs::{
    CandidateView, EditSettings, FailureView, JobPage, JobView, LineageView, RepairView,
    ResultView, VersionView,
};
pub use public::{Health, StyleList};
pub use purchases::{
    ApplePurchaseView, AppleTransactionRequest, CheckoutRequest, CheckoutView,
    GooglePurchaseRequest, GooglePurchaseView, PackList, PackView,
};
pub use review::{
    ComparisonOutcomeView, ComparisonView, LeakageView, ReviewVerdictView, ReviewView,
};
pub use uploads::{UploadRequest, UploadView};
pub use webhooks::{
    AppleNotificationRequest, GooglePushMessage, GooglePushRequest, WebhookReceipt,
};
