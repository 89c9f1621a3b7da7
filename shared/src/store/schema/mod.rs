//! THE place for DynamoDB names: tables, keys, indexes, attributes, key builders and the item
//! structs (`*Item` rows) that go in and out through `serde_dynamo`. Values nested in a row
//! (a job's failure or result) are domain types; no type here is part of the API. Provisioning (local stack) and the
//! infrastructure's drift guard both read [`TABLES`].

pub mod attr;
pub mod index;
pub mod reference;

mod accounts;
mod attempts;
mod budget;
mod jobs;
mod ledger;
mod payments;
mod quotas;
mod tables;
mod webhooks;

pub use accounts::{AccountItem, DELETION_PENDING, SignupItem};
pub use attempts::{AttemptItem, CallRecord};
pub use budget::{
    BUDGET_STANDING, BreakerItem, BudgetDayItem, BudgetStandingItem, ReadinessMemoryItem,
    RememberedReady, UserDayItem, UserShareItem, breaker_key, readiness_memory_key, user_day_key,
    user_share_key,
};
pub use jobs::{JobItem, MalformedJob};
pub use ledger::{LedgerItem, LedgerKey};
pub use payments::{PaymentItem, TombstoneItem, tombstone_id};
pub use quotas::{
    DEVICE_PREFIX, DEVICES_QUOTA, DeviceItem, PUSH_TOKEN_OWNER, PUSH_TOKEN_PREFIX,
    PushTokenOwnerItem, UploadDayItem, WAITS_QUOTA, device_key, preview_quota_key, push_token_key,
    request_window_key, upload_quota_key,
};
pub use tables::{
    ACCOUNTS, ATTEMPTS, BUDGET, IndexDef, JOBS, KeyDef, LEDGER, PAYMENTS, QUOTAS, SIGNUPS, TABLES,
    TableDef, WEBHOOKS, table_name,
};
pub use webhooks::{
    WEBHOOK_DELIVERY_PREFIX, WEBHOOK_ENDPOINTS, WEBHOOK_EVENT, WEBHOOK_PENDING, WEBHOOK_SLOTS,
    WebhookAttemptItem, WebhookDeliveryItem, WebhookEndpointItem, WebhookEventItem, WebhookSecret,
    webhook_attempt_key, webhook_delivery_key,
};
