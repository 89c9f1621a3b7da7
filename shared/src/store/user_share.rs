//! Rule 12's store: each user's spend of a UTC day, kept beside the day's own item in the
//! budget table and moved by the same transactions (a reservation reserves against both, a
//! settlement settles both), the submit's check of the user's headroom, an operator's share
//! override per user, and the day's top spenders (one Query on a sparse index).

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};

use super::budget::{Counter, ReserveOutcome};
use super::schema::{
    AttemptItem, UserDayItem, UserShareItem, attr, index, user_day_key, user_share_key,
};
use super::{CancelReason, Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::{Micros, UserId};
use crate::error::{AwsError, Error};

/// An operator's change to one user's share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareChange {
    /// Set the override (and who set it).
    Set { share: Micros, operator: String },
    /// Remove the override: the configured default applies again.
    Clear { default: Micros },
}

impl ShareChange {
    /// The share in force after the change.
    pub fn share(&self) -> Micros {
        match self {
            ShareChange::Set { share, .. } => *share,
            ShareChange::Clear { default } => *default,
        }
    }
}

impl Store {
    /// The reservation's item for the user's day: `reserved += e, spent += e, headroom -= e`
    /// under `headroom >= e` (the old item comes back on refusal); a reservation that fits
    /// clears the last refusal.
    pub(crate) fn user_reserve_item(
        &self,
        attempt: &AttemptItem,
        user: &UserId,
    ) -> Result<TransactWriteItem, Error> {
        Counter::User.reserve(self, attempt, &user_day_key(&attempt.day, user))
    }

    /// Why the user's day item refused a reservation.
    pub(crate) fn user_reserve_refusal(reason: &CancelReason) -> Result<ReserveOutcome, Error> {
        match reason.item.clone() {
            None => Ok(ReserveOutcome::UserDayMissing),
            Some(old) => {
                let day: UserDayItem = from_item(old)?;
                Ok(ReserveOutcome::ShareReached {
                    headroom_micros: day.headroom_micros,
                })
            }
        }
    }

    /// The settlement's item for the user's day: the same movement as the day's item
    /// (`reserved -= r, used += c`, so `spent -= delta, headroom += delta`).
    pub(crate) fn user_settle_item(
        &self,
        attempt: &AttemptItem,
        user: &UserId,
        cost: Micros,
        delta: Micros,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        Counter::User.settle(
            self,
            &user_day_key(&attempt.day, user),
            attempt.reserved_micros,
            cost,
            delta,
            now,
        )
    }

    /// The submit's check of the user's day (joined to the charge transaction): no item yet,
    /// or spend still below the share (`headroom > 0`) with room for the estimate the share
    /// last refused, if any (a job that could not fit would only be charged and refunded).
    pub(crate) fn user_share_check(
        &self,
        user: &UserId,
        day: &str,
    ) -> Result<TransactWriteItem, Error> {
        let check = ConditionCheck::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(user_day_key(day, user)))
            .condition_expression(
                "attribute_not_exists(#day) OR (#headroom_micros > :zero AND \
                 (attribute_not_exists(#refused_micros) OR #headroom_micros >= #refused_micros))",
            )
            .set_expression_attribute_names(Some(names(&[
                attr::DAY,
                attr::HEADROOM_MICROS,
                attr::REFUSED_MICROS,
            ])))
            .expression_attribute_values(":zero", n(0))
            .build()
            .map_err(|e| AwsError::new("user_share.check.build", e))?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// Notes the estimate the user's share just refused (see [`attr::REFUSED_MICROS`]);
    /// advisory, no money moves, so a plain update outside any transaction.
    pub async fn note_share_refusal(
        &self,
        day: &str,
        user: &UserId,
        estimate: Micros,
    ) -> Result<(), Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(user_day_key(day, user)))
            .update_expression("SET #refused_micros = :e")
            .condition_expression("attribute_exists(#day)")
            .set_expression_attribute_names(Some(names(&[attr::REFUSED_MICROS, attr::DAY])))
            .expression_attribute_values(":e", n(estimate.get()))
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
            Err(e) => Err(AwsError::new("user_share.note_refusal", e).into()),
        }
    }

    /// A user's spend of a day.
    pub async fn get_user_day(
        &self,
        day: &str,
        user: &UserId,
    ) -> Result<Option<UserDayItem>, Error> {
        self.get_budget_item(&user_day_key(day, user), "user_share.day.get")
            .await
    }

    /// An operator's share override for a user, if one stands.
    pub async fn get_user_share(&self, user: &UserId) -> Result<Option<UserShareItem>, Error> {
        self.get_budget_item(&user_share_key(user), "user_share.override.get")
            .await
    }

    async fn get_budget_item<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        op: &'static str,
    ) -> Result<Option<T>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new(op, e))?;
        out.item.map(from_item).transpose()
    }

    /// Creates the user's day item with `share`, read by the caller from the override (`seen`,
    /// or none) or the default, unless it exists. The override is checked unchanged in the
    /// same transaction, so an operator's change racing the creation is never lost: the
    /// creation loses and the caller reads again. `false` when nothing was written.
    pub async fn create_user_day(
        &self,
        day: &str,
        user: &UserId,
        share: Micros,
        seen: Option<Micros>,
        now: &str,
    ) -> Result<bool, Error> {
        let item = UserDayItem {
            day: user_day_key(day, user),
            spend_day: day.to_owned(),
            user_id: user.clone(),
            share_micros: share,
            used_micros: Micros::ZERO,
            reserved_micros: Micros::ZERO,
            spent_micros: Micros::ZERO,
            headroom_micros: share,
            refused_micros: None,
            updated_at: now.to_owned(),
        };
        let put = Put::builder()
            .table_name(&self.names.budget_table)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(#day)")
            .expression_attribute_names("#day", attr::DAY)
            .build()
            .map_err(|e| AwsError::new("user_share.create.build", e))?;
        let unchanged = self.override_unchanged(user, seen)?;
        let items = vec![TransactWriteItem::builder().put(put).build(), unchanged];
        Ok(matches!(
            self.transact("user_share.create", items).await?,
            TxOutcome::Committed
        ))
    }

    /// A condition that the user's override is still `seen` (absent for `None`).
    fn override_unchanged(
        &self,
        user: &UserId,
        seen: Option<Micros>,
    ) -> Result<TransactWriteItem, Error> {
        let check = ConditionCheck::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(user_share_key(user)))
            .expression_attribute_names("#share", attr::SHARE_MICROS);
        let check = match seen {
            None => check.condition_expression("attribute_not_exists(#share)"),
            Some(v) => check
                .condition_expression("#share = :seen")
                .expression_attribute_values(":seen", n(v.get())),
        };
        let check = check
            .build()
            .map_err(|e| AwsError::new("user_share.unchanged.build", e))?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// Applies an operator's change in one transaction: the override item written (or
    /// deleted), and today's item of the user, when it exists, given the new share with its
    /// headroom moved by the difference, conditional on the share it had (`today`), or checked
    /// still absent. `false` when a concurrent write won (read again and retry).
    pub async fn change_user_share(
        &self,
        user: &UserId,
        day: &str,
        today: Option<&UserDayItem>,
        change: &ShareChange,
        now: &str,
    ) -> Result<bool, Error> {
        let first = match change {
            ShareChange::Set { share, operator } => {
                let item = UserShareItem {
                    day: user_share_key(user),
                    user_id: user.clone(),
                    share_micros: *share,
                    operator: operator.clone(),
                    updated_at: now.to_owned(),
                };
                let put = Put::builder()
                    .table_name(&self.names.budget_table)
                    .set_item(Some(to_item(&item)?))
                    .build()
                    .map_err(|e| AwsError::new("user_share.set.build", e))?;
                TransactWriteItem::builder().put(put).build()
            }
            ShareChange::Clear { .. } => {
                let delete = Delete::builder()
                    .table_name(&self.names.budget_table)
                    .key(attr::DAY, s(user_share_key(user)))
                    .build()
                    .map_err(|e| AwsError::new("user_share.clear.build", e))?;
                TransactWriteItem::builder().delete(delete).build()
            }
        };
        let second = match today {
            Some(item) => self.reshare_item(item, change.share(), now)?,
            None => {
                let check = ConditionCheck::builder()
                    .table_name(&self.names.budget_table)
                    .key(attr::DAY, s(user_day_key(day, user)))
                    .condition_expression("attribute_not_exists(#day)")
                    .expression_attribute_names("#day", attr::DAY)
                    .build()
                    .map_err(|e| AwsError::new("user_share.absent.build", e))?;
                TransactWriteItem::builder().condition_check(check).build()
            }
        };
        Ok(matches!(
            self.transact("user_share.change", vec![first, second])
                .await?,
            TxOutcome::Committed
        ))
    }

    /// Today's item given `share`: `headroom += share - old share`, under the old share.
    fn reshare_item(
        &self,
        item: &UserDayItem,
        share: Micros,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let delta = share.checked_sub(item.share_micros).ok_or_else(|| {
            Error::corrupt(format!("share change {} -> {share}", item.share_micros))
        })?;
        let update = Update::builder()
            .table_name(&self.names.budget_table)
            .key(attr::DAY, s(&item.day))
            .update_expression("SET #share = :share, #headroom_micros = #headroom_micros + :delta, #updated_at = :now")
            .condition_expression("#share = :old")
            .set_expression_attribute_names(Some(names(&[
                attr::HEADROOM_MICROS,
                attr::UPDATED_AT,
            ])))
            .expression_attribute_names("#share", attr::SHARE_MICROS)
            .expression_attribute_values(":share", n(share.get()))
            .expression_attribute_values(":old", n(item.share_micros.get()))
            .expression_attribute_values(":delta", n(delta.get()))
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new("user_share.reshare.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The day's biggest spenders, `spent` descending: one Query of the sparse
    /// [`index::BUDGET_TOP_SPENDERS`] reading `limit` items (eventually consistent: display
    /// only, money is never decided from it).
    pub async fn top_spenders(&self, day: &str, limit: i32) -> Result<Vec<UserDayItem>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.budget_table)
            .index_name(index::BUDGET_TOP_SPENDERS)
            .key_condition_expression("#spend_day = :d")
            .expression_attribute_names("#spend_day", attr::SPEND_DAY)
            .expression_attribute_values(":d", AttributeValue::S(day.to_owned()))
            .scan_index_forward(false)
            .limit(limit)
            .send()
            .await
            .map_err(|e| AwsError::new("user_share.top", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }
}
