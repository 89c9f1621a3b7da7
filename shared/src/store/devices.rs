//! Devices registered for push, in the `quotas` table beside the user's other counted things:
//! one row per device (`device#<id>`) and one count row ([`DEVICES_QUOTA`]). A device is
//! added or removed only in a transaction with its count, so the limit holds under
//! concurrent registrations, and a closed account (one being deleted) takes no new device.

use aws_sdk_dynamodb::types::{ConditionCheck, Delete, TransactWriteItem, Update};

use super::schema::{DEVICE_PREFIX, DEVICES_QUOTA, DeviceItem, attr, device_key};
use super::{Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::UserId;
use crate::domain::device::{DeviceId, PushToken, Registration};
use crate::error::{AwsError, Error};

/// How a registration ended, short of an infrastructure error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// A new device, counted.
    Added,
    /// The device was registered already: its platform and token replaced.
    Updated,
    /// The user has `max` devices already.
    LimitReached,
    /// The account is closed.
    AccountClosed,
    /// The device appeared or vanished between the two writes: the caller tries again.
    Raced,
}

fn build<T, E: std::error::Error + Send + Sync + 'static>(r: Result<T, E>) -> Result<T, Error> {
    r.map_err(|e| AwsError::new("devices.build", e).into())
}

impl Store {
    /// The account's "not closed" check, as a transaction item (an account not yet created
    /// passes: it is not closed).
    fn account_open_check(&self, user: &UserId) -> Result<TransactWriteItem, Error> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.names.accounts_table)
                .key(attr::USER_ID, s(user.as_str()))
                .condition_expression("attribute_not_exists(#closed_at)")
                .expression_attribute_names("#closed_at", attr::CLOSED_AT)
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// The user's device count moved by `delta`; an increase only below `max`.
    fn device_count(
        &self,
        user: &UserId,
        delta: i64,
        max: u32,
    ) -> Result<TransactWriteItem, Error> {
        let mut b = Update::builder()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::QUOTA, s(DEVICES_QUOTA))
            .update_expression("ADD #count :delta")
            .expression_attribute_names("#count", attr::DEVICE_COUNT)
            .expression_attribute_values(":delta", n(delta));
        if delta > 0 {
            b = b
                .condition_expression("attribute_not_exists(#count) OR #count < :max")
                .expression_attribute_values(":max", n(i64::from(max)));
        }
        Ok(TransactWriteItem::builder()
            .update(build(b.build())?)
            .build())
    }

    /// Registers `id` for `user`: replaces the platform and token of a registered device, or
    /// adds a new one while the user has fewer than `max`. One attempt; see [`Registered`].
    pub async fn register_device(
        &self,
        user: &UserId,
        id: &DeviceId,
        reg: &Registration,
        max: u32,
        now: &str,
    ) -> Result<Registered, Error> {
        let update = build(
            Update::builder()
                .table_name(&self.names.quotas_table)
                .key(attr::USER_ID, s(user.as_str()))
                .key(attr::QUOTA, s(device_key(id)))
                .update_expression("SET #platform = :p, #token = :t, #updated_at = :now")
                .condition_expression("attribute_exists(#quota)")
                .set_expression_attribute_names(Some(names(&[
                    attr::PLATFORM,
                    attr::TOKEN,
                    attr::UPDATED_AT,
                    attr::QUOTA,
                ])))
                .expression_attribute_values(":p", s(reg.platform.as_str()))
                .expression_attribute_values(":t", s(reg.token.as_str()))
                .expression_attribute_values(":now", s(now))
                .build(),
        )?;
        let items = vec![
            self.account_open_check(user)?,
            TransactWriteItem::builder().update(update).build(),
        ];
        match self.transact("devices.update", items).await? {
            TxOutcome::Committed => return Ok(Registered::Updated),
            TxOutcome::Canceled(r) if r.first().is_some_and(|r| r.condition_failed()) => {
                return Ok(Registered::AccountClosed);
            }
            TxOutcome::Canceled(_) => {}
        }
        let item = DeviceItem {
            user_id: user.clone(),
            quota: device_key(id),
            platform: reg.platform,
            token: reg.token.clone(),
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        };
        let items = vec![
            self.account_open_check(user)?,
            self.put_new(&self.names.quotas_table, to_item(&item)?, attr::QUOTA)?,
            self.device_count(user, 1, max)?,
        ];
        Ok(match self.transact("devices.add", items).await? {
            TxOutcome::Committed => Registered::Added,
            TxOutcome::Canceled(r) => {
                let failed = |i: usize| r.get(i).is_some_and(|r| r.condition_failed());
                if failed(0) {
                    Registered::AccountClosed
                } else if failed(2) {
                    Registered::LimitReached
                } else {
                    Registered::Raced
                }
            }
        })
    }

    /// Removes device `id` of `user` with its count; only while its token is `token` when
    /// one is given (an invalid token reported by a push service must not remove the token
    /// the app registered since). `false` when there was nothing to remove.
    pub async fn delete_device(
        &self,
        user: &UserId,
        id: &DeviceId,
        token: Option<&PushToken>,
    ) -> Result<bool, Error> {
        let mut b = Delete::builder()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::QUOTA, s(device_key(id)))
            .expression_attribute_names("#quota", attr::QUOTA);
        b = match token {
            Some(t) => b
                .condition_expression("attribute_exists(#quota) AND #token = :t")
                .expression_attribute_names("#token", attr::TOKEN)
                .expression_attribute_values(":t", s(t.as_str())),
            None => b.condition_expression("attribute_exists(#quota)"),
        };
        let items = vec![
            TransactWriteItem::builder()
                .delete(build(b.build())?)
                .build(),
            self.device_count(user, -1, 0)?,
        ];
        Ok(matches!(
            self.transact("devices.delete", items).await?,
            TxOutcome::Committed
        ))
    }

    /// Every device of `user` (consistent read; at most a handful).
    pub async fn devices(&self, user: &UserId) -> Result<Vec<(DeviceId, DeviceItem)>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.quotas_table)
            .key_condition_expression("#user_id = :u AND begins_with(#quota, :prefix)")
            .set_expression_attribute_names(Some(names(&[attr::USER_ID, attr::QUOTA])))
            .expression_attribute_values(":u", s(user.as_str()))
            .expression_attribute_values(":prefix", s(DEVICE_PREFIX))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("devices.list", e))?;
        let mut devices = Vec::new();
        for item in out.items.unwrap_or_default() {
            let item: DeviceItem = from_item(item)?;
            let id = item
                .quota
                .strip_prefix(DEVICE_PREFIX)
                .and_then(DeviceId::parse)
                .ok_or_else(|| Error::corrupt(format!("device row key {}", item.quota)))?;
            devices.push((id, item));
        }
        Ok(devices)
    }
}
