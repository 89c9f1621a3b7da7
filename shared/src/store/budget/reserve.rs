//! Reserving against the day and the user's share, and extending a reservation by a call.

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};

use super::counter::Counter;
use crate::domain::Micros;
use crate::error::{AwsError, Error};
use crate::store::schema::{AttemptItem, BUDGET_STANDING, BudgetDayItem, attr};
use crate::store::{Store, TxOutcome, from_item, n, names, s, to_item};

/// How a reservation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReserveOutcome {
    Reserved,
    /// The day is halted or the estimate does not fit under the cap.
    Refused {
        halted: bool,
        /// The day's headroom, when the day item was the one that refused.
        headroom_micros: Option<Micros>,
    },
    DayMissing,
    /// The user's share of the day (rule 12) does not fit the estimate.
    ShareReached {
        headroom_micros: Micros,
    },
    /// The user has no day item yet: create it with the share in force, then try again.
    UserDayMissing,
    /// This attempt was already reserved (never reserve twice for one job step).
    AlreadyReserved,
}

impl Store {
    /// Reserves `attempt.reserved_micros` against `attempt.day` and records the attempt.
    pub async fn reserve(&self, attempt: &AttemptItem) -> Result<ReserveOutcome, Error> {
        let day = Counter::Day.reserve(self, attempt, &attempt.day)?;
        let put = Put::builder()
            .table_name(&self.names.attempts_table)
            .set_item(Some(to_item(attempt)?))
            .condition_expression("attribute_not_exists(#attempt)")
            .expression_attribute_names("#attempt", attr::ATTEMPT)
            .build()
            .map_err(|e| AwsError::new("budget.reserve.build", e))?;
        let mut items = vec![
            day,
            TransactWriteItem::builder().put(put).build(),
            self.standing_not_halted()?,
        ];
        if let Some(user) = &attempt.user_id {
            items.push(self.user_reserve_item(attempt, user)?);
        }
        self.reservation_outcome("budget.reserve", items).await
    }

    /// Runs a reservation's transaction (day, attempt, standing, user's day, in that order)
    /// and says how it ended.
    async fn reservation_outcome(
        &self,
        op: &'static str,
        items: Vec<TransactWriteItem>,
    ) -> Result<ReserveOutcome, Error> {
        match self.transact(op, items).await? {
            TxOutcome::Committed => Ok(ReserveOutcome::Reserved),
            TxOutcome::Canceled(reasons) => {
                if reasons.get(1).is_some_and(|r| r.condition_failed()) {
                    return Ok(ReserveOutcome::AlreadyReserved);
                }
                if reasons.get(2).is_some_and(|r| r.condition_failed()) {
                    return Ok(ReserveOutcome::Refused {
                        halted: true,
                        headroom_micros: None,
                    });
                }
                match reasons.first() {
                    Some(r) if r.condition_failed() => match r.item.clone() {
                        None => Ok(ReserveOutcome::DayMissing),
                        Some(old) => {
                            let day: BudgetDayItem = from_item(old)?;
                            Ok(ReserveOutcome::Refused {
                                halted: day.halted,
                                headroom_micros: Some(day.headroom_micros),
                            })
                        }
                    },
                    _ if reasons.get(3).is_some_and(|r| r.condition_failed()) => {
                        Self::user_reserve_refusal(&reasons[3])
                    }
                    _ => Err(Error::corrupt(format!(
                        "budget reservation canceled: {reasons:?}"
                    ))),
                }
            }
        }
    }

    /// The day's side of a reservation of `e`: `reserved += e, headroom -= e` under
    /// `headroom >= e AND NOT halted` (the old item returned when it refuses).
    fn day_reserve_item(
        &self,
        day: &str,
        e: Micros,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let update = Update::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(day))
            .update_expression("SET #reserved_micros = #reserved_micros + :e, #headroom_micros = #headroom_micros - :e, #updated_at = :now")
            .condition_expression("attribute_exists(#day) AND #halted = :false AND #headroom_micros >= :e")
            .set_expression_attribute_names(Some(names(&[
                attr::RESERVED_MICROS,
                attr::HEADROOM_MICROS,
                attr::UPDATED_AT,
                attr::DAY,
                attr::HALTED,
            ])))
            .expression_attribute_values(":e", n(e.get()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("budget.reserve.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The operator's standing halt holds whatever the day item says (a day created before
    /// the halt, or one given its own setting).
    fn standing_not_halted(&self) -> Result<TransactWriteItem, Error> {
        let standing = ConditionCheck::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(BUDGET_STANDING))
            .condition_expression("attribute_not_exists(#halted) OR #halted = :false")
            .expression_attribute_names("#halted", attr::HALTED)
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .build()
            .map_err(|e| AwsError::new("budget.reserve.build", e))?;
        Ok(TransactWriteItem::builder()
            .condition_check(standing)
            .build())
    }

    /// Extends an open attempt by one planned call `call` reserved at `extra` (a failover to
    /// the next provider, docs/design.md rule 15): the day and the user's day reserve `extra`
    /// as a reservation does, and the attempt gains `extra` and the call, under
    /// `attribute_exists(open_day) AND NOT contains(planned, call)`, in one transaction. The
    /// day items are the same ones the attempt was reserved on, so its settlement moves the
    /// whole reservation at once.
    pub async fn extend_reservation(
        &self,
        attempt: &AttemptItem,
        call: &str,
        extra: Micros,
        now: &str,
    ) -> Result<ReserveOutcome, Error> {
        let grow = Update::builder()
            .table_name(&self.names.attempts_table)
            .key(attr::JOB_ID, s(attempt.job_id.as_str()))
            .key(attr::ATTEMPT, s(&attempt.attempt))
            .update_expression("SET #reserved_micros = #reserved_micros + :e, #planned = list_append(#planned, :calls)")
            .condition_expression("attribute_exists(#open_day) AND NOT contains(#planned, :call)")
            .set_expression_attribute_names(Some(names(&[
                attr::RESERVED_MICROS,
                attr::PLANNED,
                attr::OPEN_DAY,
            ])))
            .expression_attribute_values(":e", n(extra.get()))
            .expression_attribute_values(":calls", AttributeValue::L(vec![s(call)]))
            .expression_attribute_values(":call", s(call))
            .build()
            .map_err(|e| AwsError::new("budget.extend.build", e))?;
        let mut items = vec![
            self.day_reserve_item(&attempt.day, extra, now)?,
            TransactWriteItem::builder().update(grow).build(),
            self.standing_not_halted()?,
        ];
        if let Some(user) = &attempt.user_id {
            let mut share = attempt.clone();
            share.reserved_micros = extra;
            share.reserved_at = now.to_owned();
            items.push(self.user_reserve_item(&share, user)?);
        }
        self.reservation_outcome("budget.extend", items).await
    }
}
