//! The daily cost breaker's store (rule 8): the day item, the operator's standing item and
//! attempts. A reservation is one transaction (day: `reserved += e, headroom -= e` under
//! `headroom >= e AND NOT halted`; attempt put; the standing item checked `NOT halted`; the
//! user's day item the same way under its own share, rule 12); a settlement is one transaction
//! (attempt: close under `attribute_exists(open_day)`; day and user's day: move the reservation
//! to `used`). Both are conditional, so a retry or a race between consumer and sweeper settles
//! each attempt once, on both items.

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};

use super::schema::{
    AttemptItem, BUDGET_STANDING, BudgetDayItem, BudgetStandingItem, CallRecord, attr,
};
use super::{Joined, Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::{JobId, Micros};
use crate::error::{AwsError, Error};

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

/// How a settlement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleOutcome {
    Settled,
    /// Someone (the consumer or the sweeper) settled it first.
    AlreadySettled,
}

impl Store {
    /// The day's item.
    pub async fn get_budget_day(&self, day: &str) -> Result<Option<BudgetDayItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(day))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("budget.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// The operator's standing setting, if one was ever written.
    pub async fn get_budget_standing(&self) -> Result<Option<BudgetStandingItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(BUDGET_STANDING))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("budget.standing.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Creates the day's item with `cap` and `halted` (the standing setting's, read by the
    /// caller) if it does not exist yet.
    pub async fn create_budget_day(
        &self,
        day: &str,
        cap_micros: Micros,
        halted: bool,
        now: &str,
    ) -> Result<(), Error> {
        let item = BudgetDayItem {
            day: day.to_owned(),
            cap_micros,
            used_micros: Micros::ZERO,
            reserved_micros: Micros::ZERO,
            headroom_micros: cap_micros,
            halted,
            updated_at: now.to_owned(),
        };
        let res = self
            .ddb
            .put_item()
            .table_name(&self.names.budget_table)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(#day)")
            .expression_attribute_names("#day", attr::DAY)
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(AwsError::new("budget.create", e).into()),
        }
    }

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

    /// Records a paid call's outcome and usage on its attempt as soon as the call returns, so
    /// a crash before settling leaves the real usage for the sweeper.
    pub async fn record_call(
        &self,
        job: &JobId,
        attempt: &str,
        call: &str,
        record: &CallRecord,
    ) -> Result<(), Error> {
        let value = serde_dynamo::to_attribute_value(record)
            .map_err(|e| Error::corrupt_by("serialize the call record", e))?;
        self.update_at(
            &self.names.attempts_table,
            (attr::JOB_ID, job.as_str()),
            (attr::ATTEMPT, attempt),
        )
        .update_expression("SET #calls.#call = :r")
        .condition_expression("attribute_exists(#attempt)")
        .expression_attribute_names("#calls", attr::CALLS)
        .expression_attribute_names("#call", call)
        .expression_attribute_names("#attempt", attr::ATTEMPT)
        .expression_attribute_values(":r", value)
        .send()
        .await
        .map_err(|e| AwsError::new("attempts.record_call", e))?;
        Ok(())
    }

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

    /// Sets `halted` on the day (which must exist) and, with `standing`, on the standing
    /// setting too, in one transaction: the halt holds for today and every day after.
    pub async fn set_halted(
        &self,
        day: &str,
        halted: bool,
        standing: bool,
        now: &str,
    ) -> Result<(), Error> {
        let day_update = Update::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(day))
            .update_expression("SET #halted = :h, #updated_at = :now")
            .condition_expression("attribute_exists(#day)")
            .set_expression_attribute_names(Some(names(&[
                attr::HALTED,
                attr::UPDATED_AT,
                attr::DAY,
            ])))
            .expression_attribute_values(":h", AttributeValue::Bool(halted))
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new("budget.halt.build", e))?;
        let mut items = vec![TransactWriteItem::builder().update(day_update).build()];
        if standing {
            items.push(self.standing_update(
                "#halted = :h",
                attr::HALTED,
                AttributeValue::Bool(halted),
                now,
            )?);
        }
        match self.transact("budget.halt", items).await? {
            TxOutcome::Committed => Ok(()),
            TxOutcome::Canceled(reasons) => Err(Error::corrupt(format!(
                "halt of {day} canceled (the day item must exist): {reasons:?}"
            ))),
        }
    }

    /// An update of one attribute of the standing item (created by its first update).
    fn standing_update(
        &self,
        set: &str,
        name: &str,
        value: AttributeValue,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let (placeholder, value_name) = set
            .split_once(" = ")
            .ok_or_else(|| Error::corrupt(format!("standing update {set:?}")))?;
        let update = Update::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(BUDGET_STANDING))
            .update_expression(format!("SET {set}, #updated_at = :now"))
            .expression_attribute_names(placeholder, name)
            .expression_attribute_names("#updated_at", attr::UPDATED_AT)
            .expression_attribute_values(value_name, value)
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new("budget.standing.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Changes the day's cap, keeping `headroom = cap - used - reserved`, and with `standing`
    /// the cap of every day created after, in one transaction. Conditional on the day's old
    /// cap, so a concurrent change is not lost; `false` when it lost that race.
    pub async fn set_cap(
        &self,
        day: &BudgetDayItem,
        cap: Micros,
        standing: bool,
        now: &str,
    ) -> Result<bool, Error> {
        let delta = cap
            .checked_sub(day.cap_micros)
            .ok_or_else(|| Error::corrupt(format!("cap change {} -> {cap}", day.cap_micros)))?;
        if standing {
            let update = Update::builder()
                .table_name(&self.names.budget_table)
                .key(attr::DAY, s(&day.day))
                .update_expression(
                    "SET #cap = :cap, #headroom_micros = #headroom_micros + :delta, #updated_at = :now",
                )
                .condition_expression("#cap = :old")
                .set_expression_attribute_names(Some(names(&[
                    attr::HEADROOM_MICROS,
                    attr::UPDATED_AT,
                ])))
                .expression_attribute_names("#cap", attr::CAP_MICROS)
                .expression_attribute_values(":cap", n(cap.get()))
                .expression_attribute_values(":old", n(day.cap_micros.get()))
                .expression_attribute_values(":delta", n(delta.get()))
                .expression_attribute_values(":now", s(now))
                .build()
                .map_err(|e| AwsError::new("budget.set_cap.build", e))?;
            let items = vec![
                TransactWriteItem::builder().update(update).build(),
                self.standing_update("#cap = :cap", attr::CAP_MICROS, n(cap.get()), now)?,
            ];
            return match self.transact("budget.set_cap", items).await? {
                TxOutcome::Committed => Ok(true),
                TxOutcome::Canceled(_) => Ok(false),
            };
        }
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(&day.day))
            .update_expression(
                "SET #cap = :cap, #headroom_micros = #headroom_micros + :delta, #updated_at = :now",
            )
            .condition_expression("#cap = :old")
            .set_expression_attribute_names(Some(names(&[attr::HEADROOM_MICROS, attr::UPDATED_AT])))
            .expression_attribute_names("#cap", attr::CAP_MICROS)
            .expression_attribute_values(":cap", n(cap.get()))
            .expression_attribute_values(":old", n(day.cap_micros.get()))
            .expression_attribute_values(":delta", n(delta.get()))
            .expression_attribute_values(":now", s(now))
            .send()
            .await;
        super::applied(res, "budget.set_cap")
    }

    /// The attempts of a job.
    pub async fn attempts_of(&self, job: &JobId) -> Result<Vec<AttemptItem>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.attempts_table)
            .key_condition_expression("#job_id = :j")
            .expression_attribute_names("#job_id", attr::JOB_ID)
            .expression_attribute_values(":j", s(job.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.query", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Every attempt of a day (admin checks; a scan).
    pub async fn attempts_of_day(&self, day: &str) -> Result<Vec<AttemptItem>, Error> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.names.attempts_table)
                .filter_expression("#day = :d")
                .expression_attribute_names("#day", attr::DAY)
                .expression_attribute_values(":d", s(day))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| AwsError::new("attempts.scan", e))?;
            for item in page.items.unwrap_or_default() {
                out.push(from_item(item)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }
}

impl Store {
    /// One attempt, read consistently.
    pub async fn get_attempt(
        &self,
        job: &JobId,
        attempt: &str,
    ) -> Result<Option<AttemptItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.attempts_table)
            .key(attr::JOB_ID, s(job.as_str()))
            .key(attr::ATTEMPT, s(attempt))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Open reservations of `day` made before `before`, oldest first (sparse index; candidates
    /// only). Returns them and how many items DynamoDB read.
    pub async fn open_attempts(
        &self,
        day: &str,
        before: &str,
        limit: i32,
    ) -> Result<(Vec<AttemptItem>, u64), Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.attempts_table)
            .index_name(super::schema::index::ATTEMPTS_OPEN)
            .key_condition_expression("#open_day = :d AND #reserved_at < :before")
            .set_expression_attribute_names(Some(names(&[attr::OPEN_DAY, attr::RESERVED_AT])))
            .expression_attribute_values(":d", s(day))
            .expression_attribute_values(":before", s(before))
            .limit(limit)
            .send()
            .await
            .map_err(|e| AwsError::new("attempts.open", e))?;
        let read = u64::try_from(out.scanned_count).unwrap_or(0);
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((items, read))
    }
}

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
