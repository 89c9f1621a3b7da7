//! The physical names of the deployed resources.

use super::env;
use super::read::{ConfigError, Get, required};

/// Physical names of the resources, as deployed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    pub accounts_table: String,
    pub ledger_table: String,
    pub jobs_table: String,
    pub budget_table: String,
    pub attempts_table: String,
    pub quotas_table: String,
    pub payments_table: String,
    pub signups_table: String,
    pub webhooks_table: String,
    pub queue_url: String,
    pub webhook_queue_url: String,
    pub bucket: String,
}

impl Resources {
    /// The names the local stack uses for a given prefix (the local runner and the tests),
    /// with the queue URL as ministack forms it.
    pub fn local(prefix: &str, endpoint: &str) -> Resources {
        Resources {
            accounts_table: format!("{prefix}-accounts"),
            ledger_table: format!("{prefix}-ledger"),
            jobs_table: format!("{prefix}-jobs"),
            budget_table: format!("{prefix}-budget"),
            attempts_table: format!("{prefix}-attempts"),
            quotas_table: format!("{prefix}-quotas"),
            payments_table: format!("{prefix}-payments"),
            signups_table: format!("{prefix}-signups"),
            webhooks_table: format!("{prefix}-webhooks"),
            queue_url: format!(
                "{}/000000000000/{prefix}-jobs",
                endpoint.trim_end_matches('/')
            ),
            webhook_queue_url: format!(
                "{}/000000000000/{prefix}-webhooks",
                endpoint.trim_end_matches('/')
            ),
            bucket: format!("{prefix}-assets"),
        }
    }

    /// The queue's name (the last segment of its URL).
    pub fn queue_name(&self) -> &str {
        self.queue_url.rsplit('/').next().unwrap_or(&self.queue_url)
    }

    /// The environment that makes [`Config::from_env`] find these names.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (env::ACCOUNTS_TABLE, self.accounts_table.clone()),
            (env::LEDGER_TABLE, self.ledger_table.clone()),
            (env::JOBS_TABLE, self.jobs_table.clone()),
            (env::BUDGET_TABLE, self.budget_table.clone()),
            (env::ATTEMPTS_TABLE, self.attempts_table.clone()),
            (env::QUOTAS_TABLE, self.quotas_table.clone()),
            (env::PAYMENTS_TABLE, self.payments_table.clone()),
            (env::SIGNUPS_TABLE, self.signups_table.clone()),
            (env::WEBHOOKS_TABLE, self.webhooks_table.clone()),
            (env::QUEUE_URL, self.queue_url.clone()),
            (env::WEBHOOK_QUEUE_URL, self.webhook_queue_url.clone()),
            (env::BUCKET, self.bucket.clone()),
        ]
    }
}

impl Resources {
    pub(super) fn from_lookup(get: &Get<'_>) -> Result<Resources, ConfigError> {
        Ok(Resources {
            accounts_table: required(get, env::ACCOUNTS_TABLE)?,
            ledger_table: required(get, env::LEDGER_TABLE)?,
            jobs_table: required(get, env::JOBS_TABLE)?,
            budget_table: required(get, env::BUDGET_TABLE)?,
            attempts_table: required(get, env::ATTEMPTS_TABLE)?,
            quotas_table: required(get, env::QUOTAS_TABLE)?,
            payments_table: required(get, env::PAYMENTS_TABLE)?,
            signups_table: required(get, env::SIGNUPS_TABLE)?,
            webhooks_table: required(get, env::WEBHOOKS_TABLE)?,
            queue_url: required(get, env::QUEUE_URL)?,
            webhook_queue_url: required(get, env::WEBHOOK_QUEUE_URL)?,
            bucket: required(get, env::BUCKET)?,
        })
    }
}
