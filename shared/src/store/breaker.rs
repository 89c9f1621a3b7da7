//! A model provider's circuit breaker (one item of the budget table, [`BreakerItem`]): each
//! rule of [`crate::domain::breaker`] as one conditional UpdateItem, so consumers racing on the
//! same breaker agree (one opens it, one wins the probe, one closes it). Which rule to apply
//! is decided in `services::breaker`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::schema::{BreakerItem, attr, breaker_key};
use super::{Store, from_item, is_condition_failed, n, s};
use crate::domain::breaker::BreakerState;
use crate::error::{AwsError, Error};

/// One conditional update of a breaker: the expression, its condition and values.
struct Change<'a> {
    update: &'a str,
    condition: &'a str,
    values: &'a [(&'a str, AttributeValue)],
}

impl Store {
    /// The breaker of `provider` (closed when it has no item yet).
    pub async fn get_breaker(&self, provider: &str) -> Result<BreakerState, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(breaker_key(provider)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("breaker.get", e))?;
        let item: Option<BreakerItem> = out.item.map(from_item).transpose()?;
        Ok(item.map_or_else(BreakerState::default, |i| BreakerState {
            failures: i.failures,
            opened_ms: i.opened_ms,
            probe_ms: i.probe_ms,
        }))
    }

    /// Claims the half-open breaker's probe at `now_ms`: it opened at least `cooldown_ms` ago
    /// and no probe was claimed within `cooldown_ms`. `false` when another consumer won it.
    pub async fn claim_breaker_probe(
        &self,
        provider: &str,
        now_ms: i64,
        cooldown_ms: i64,
    ) -> Result<bool, Error> {
        let cooled = now_ms.saturating_sub(cooldown_ms);
        let change = Change {
            update: "SET probe_ms = :now, updated_at = :stamp",
            condition: "opened_ms <= :cooled AND (attribute_not_exists(probe_ms) OR probe_ms <= :cooled)",
            values: &[(":now", n(now_ms)), (":cooled", n(cooled))],
        };
        Ok(self.change_breaker(provider, &change).await?.is_some())
    }

    /// Counts one more definite failure of the closed breaker; the count after it, or `None`
    /// when the breaker is open (a call that started before it opened).
    pub async fn count_breaker_failure(&self, provider: &str) -> Result<Option<u32>, Error> {
        let change = Change {
            update: "ADD failures :one SET updated_at = :stamp",
            condition: "attribute_not_exists(opened_ms)",
            values: &[(":one", n(1))],
        };
        let Some(item) = self.change_breaker(provider, &change).await? else {
            return Ok(None);
        };
        let count = match item.get("failures") {
            Some(AttributeValue::N(v)) => v.parse::<u32>().ok(),
            _ => None,
        };
        Ok(Some(count.unwrap_or(u32::MAX)))
    }

    /// Opens the closed breaker at `now_ms`; `false` when another consumer opened it first.
    pub async fn open_breaker(&self, provider: &str, now_ms: i64) -> Result<bool, Error> {
        let change = Change {
            update: "SET opened_ms = :now, failures = :zero, updated_at = :stamp REMOVE probe_ms",
            condition: "attribute_not_exists(opened_ms)",
            values: &[(":now", n(now_ms)), (":zero", n(0))],
        };
        Ok(self.change_breaker(provider, &change).await?.is_some())
    }

    /// The probe claimed at `probe_ms` ended: `success` closes the breaker, else it opens
    /// again at `now_ms`. `false` when the probe is no longer the claimed one (it expired).
    pub async fn end_breaker_probe(
        &self,
        provider: &str,
        probe_ms: i64,
        success: bool,
        now_ms: i64,
    ) -> Result<bool, Error> {
        let condition = "probe_ms = :mine";
        let mine = (":mine", n(probe_ms));
        let change = match success {
            true => Change {
                update: "SET failures = :zero, updated_at = :stamp REMOVE opened_ms, probe_ms",
                condition,
                values: &[mine, (":zero", n(0))],
            },
            false => Change {
                update: "SET opened_ms = :now, updated_at = :stamp REMOVE probe_ms",
                condition,
                values: &[mine, (":now", n(now_ms))],
            },
        };
        Ok(self.change_breaker(provider, &change).await?.is_some())
    }

    /// A success of the closed breaker's provider: the count of consecutive failures starts over.
    pub async fn reset_breaker_failures(&self, provider: &str) -> Result<(), Error> {
        let change = Change {
            update: "SET failures = :zero, updated_at = :stamp",
            condition: "attribute_not_exists(opened_ms)",
            values: &[(":zero", n(0))],
        };
        self.change_breaker(provider, &change).await.map(drop)
    }

    /// Applies `change` to the breaker's item (created by its first change); the item after
    /// it, or `None` when its condition failed.
    async fn change_breaker(
        &self,
        provider: &str,
        change: &Change<'_>,
    ) -> Result<Option<HashMap<String, AttributeValue>>, Error> {
        let stamp = crate::clock::format(crate::clock::now());
        let mut values: HashMap<String, AttributeValue> = change
            .values
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        values.insert(":stamp".to_owned(), s(stamp));
        let out = self
            .ddb
            .update_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(breaker_key(provider)))
            .update_expression(change.update)
            .condition_expression(change.condition)
            .set_expression_attribute_values(Some(values))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match out {
            Ok(o) => Ok(Some(o.attributes.unwrap_or_default())),
            Err(e) if is_condition_failed(&e) => Ok(None),
            Err(e) => Err(AwsError::new("breaker.update", e).into()),
        }
    }
}
