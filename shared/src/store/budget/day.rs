//! The day's item and the operator's standing item: read, create, halt and cap.

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};

use crate::domain::Micros;
use crate::error::{AwsError, Error};
use crate::store::schema::{BUDGET_STANDING, BudgetDayItem, BudgetStandingItem, attr};
use crate::store::{Store, TxOutcome, from_item, n, names, s, to_item};

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
        crate::store::applied(res, "budget.set_cap")
    }
}
