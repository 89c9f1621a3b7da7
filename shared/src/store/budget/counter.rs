//! The movement of a reservation and a settlement on a spend counter, written once for the
//! day's item and a user's.

use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use crate::domain::Micros;
use crate::error::{AwsError, Error};
use crate::store::schema::{AttemptItem, attr};
use crate::store::{Store, n, names, s};

/// A spend counter in the budget table: the day's own item (rule 8) or a user's day item
/// (rule 12). A reservation and a settlement move both the same way, so the movement is
/// written once, here; a user's day also keeps `spent` (reserved + used) and its last refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    Day,
    User,
}

impl Counter {
    /// `reserved += e, headroom -= e` under `headroom >= e` on the item at `key` (the day's:
    /// also not halted; a user's: `spent += e`, and a reservation that fits clears the last
    /// refusal). The old item comes back on refusal.
    pub(crate) fn reserve(
        self,
        store: &Store,
        attempt: &AttemptItem,
        key: &str,
    ) -> Result<TransactWriteItem, Error> {
        let (spent, refused, halted, op) = match self {
            Counter::Day => ("", "", " AND #halted = :false", "budget.reserve.build"),
            Counter::User => (
                ", #spent_micros = #spent_micros + :e",
                " REMOVE #refused_micros",
                "",
                "user_share.reserve.build",
            ),
        };
        let mut update = Update::builder()
            .table_name(&store.names.budget_table)
            .key(attr::DAY, s(key))
            .update_expression(format!("SET #reserved_micros = #reserved_micros + :e{spent}, #headroom_micros = #headroom_micros - :e, #updated_at = :now{refused}"))
            .condition_expression(format!("attribute_exists(#day){halted} AND #headroom_micros >= :e"))
            .set_expression_attribute_names(Some(names(&self.with(&[
                attr::RESERVED_MICROS,
                attr::HEADROOM_MICROS,
                attr::UPDATED_AT,
                attr::DAY,
            ], match self {
                Counter::Day => &[attr::HALTED],
                Counter::User => &[attr::SPENT_MICROS, attr::REFUSED_MICROS],
            }))))
            .expression_attribute_values(":e", n(attempt.reserved_micros.get()))
            .expression_attribute_values(":now", s(&attempt.reserved_at))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if self == Counter::Day {
            update = update.expression_attribute_values(":false", AttributeValue::Bool(false));
        }
        let update = update.build().map_err(|e| AwsError::new(op, e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The settlement's movement on the item at `key`: `reserved -= r, used += c,
    /// headroom += delta` (a user's: also `spent -= delta`), `delta = r - c`.
    pub(crate) fn settle(
        self,
        store: &Store,
        key: &str,
        reserved: Micros,
        cost: Micros,
        delta: Micros,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let (spent, op) = match self {
            Counter::Day => ("", "budget.settle.build"),
            Counter::User => (
                ", #spent_micros = #spent_micros - :delta",
                "user_share.settle.build",
            ),
        };
        let update = Update::builder()
            .table_name(&store.names.budget_table)
            .key(attr::DAY, s(key))
            .update_expression(format!(
                "SET #reserved_micros = #reserved_micros - :r, #used_micros = #used_micros + :c{spent}, #headroom_micros = #headroom_micros + :delta, #updated_at = :now",
            ))
            .set_expression_attribute_names(Some(names(&self.with(&[
                attr::RESERVED_MICROS,
                attr::USED_MICROS,
                attr::HEADROOM_MICROS,
                attr::UPDATED_AT,
            ], match self {
                Counter::Day => &[],
                Counter::User => &[attr::SPENT_MICROS],
            }))))
            .expression_attribute_values(":r", n(reserved.get()))
            .expression_attribute_values(":c", n(cost.get()))
            .expression_attribute_values(":delta", n(delta.get()))
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new(op, e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// `common` and this counter's own attribute names.
    fn with<'a>(self, common: &[&'a str], own: &[&'a str]) -> Vec<&'a str> {
        common.iter().chain(own).copied().collect()
    }
}
