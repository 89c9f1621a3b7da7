//! Settling an attempt: closing it and moving its reservation to `used`, once.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::counter::Counter;
use crate::domain::Micros;
use crate::error::{AwsError, Error};
use crate::store::schema::{AttemptItem, attr};
use crate::store::{Joined, Store, TxOutcome, n, names, s};

/// How a settlement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleOutcome {
    Settled,
    /// Someone (the consumer or the sweeper) settled it first.
    AlreadySettled,
}

impl Store {
    /// The writes that settle an attempt, to join another transaction (delivery settles the
    /// review in the same round trip; see [`Store::settle_items`]).
    pub fn settlement(
        &self,
        attempt: &AttemptItem,
        cost: Micros,
        by: &str,
        now: &str,
    ) -> Result<Joined, Error> {
        self.settle_items(attempt, cost, by, now).map(Joined::from)
    }

    /// The transaction items that settle an attempt: close it (recording `calls` and the
    /// cost) and move its reservation to `used`.
    fn settle_items(
        &self,
        attempt: &AttemptItem,
        cost: Micros,
        by: &str,
        now: &str,
    ) -> Result<Vec<TransactWriteItem>, Error> {
        // A settlement can move the day by at most what was reserved and what was spent;
        // the difference of two amounts in range is in range, unless the store is corrupt.
        let delta = attempt.reserved_micros.checked_sub(cost).ok_or_else(|| {
            Error::corrupt(format!(
                "settling {cost} against {}",
                attempt.reserved_micros
            ))
        })?;
        let calls = serde_dynamo::to_attribute_value(&attempt.calls)
            .map_err(|e| Error::corrupt_by("serialize the attempt's calls", e))?;
        let close = Update::builder()
            .table_name(&self.names.attempts_table)
            .key(attr::JOB_ID, s(attempt.job_id.as_str()))
            .key(attr::ATTEMPT, s(&attempt.attempt))
            .update_expression("SET #calls = :calls, #cost = :cost, #settled_at = :now, #by = :by REMOVE #open_day")
            .condition_expression("attribute_exists(#open_day)")
            .set_expression_attribute_names(Some(names(&[
                attr::CALLS,
                attr::SETTLED_AT,
                attr::OPEN_DAY,
            ])))
            .expression_attribute_names("#cost", attr::SETTLED_COST_MICROS)
            .expression_attribute_names("#by", attr::SETTLED_BY)
            .expression_attribute_values(":calls", calls)
            .expression_attribute_values(":cost", n(cost.get()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":by", s(by))
            .build()
            .map_err(|e| AwsError::new("budget.settle.build", e))?;
        let day = Counter::Day.settle(
            self,
            &attempt.day,
            attempt.reserved_micros,
            cost,
            delta,
            now,
        )?;
        let mut items = vec![TransactWriteItem::builder().update(close).build(), day];
        if let Some(user) = &attempt.user_id {
            items.push(self.user_settle_item(attempt, user, cost, delta, now)?);
        }
        Ok(items)
    }

    /// Settles an attempt on its own.
    pub async fn settle(
        &self,
        attempt: &AttemptItem,
        cost: Micros,
        by: &str,
        now: &str,
    ) -> Result<SettleOutcome, Error> {
        match self
            .transact("budget.settle", self.settle_items(attempt, cost, by, now)?)
            .await?
        {
            TxOutcome::Committed => Ok(SettleOutcome::Settled),
            TxOutcome::Canceled(_) => Ok(SettleOutcome::AlreadySettled),
        }
    }
}
