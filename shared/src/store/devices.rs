//! Devices registered for push, in the `quotas` table beside the user's other counted things:
//! one row per device (`device#<id>`) and one count row ([`DEVICES_QUOTA`]). A device is
//! added or removed only in a transaction with its count, so the limit holds under
//! concurrent registrations, and a closed account (one being deleted) takes no new device.
//! A push token has one owner: its owner row (`push-token#<sha256>`, [`PushTokenOwnerItem`])
//! names the device holding it, and registering the token elsewhere (the phone signed in as
//! another account) moves it, removing the previous device in the same transaction, so one
//! account's pushes never reach a phone now signed in as another.

use aws_sdk_dynamodb::types::{ConditionCheck, Delete, Put, TransactWriteItem, Update};

use super::schema::{
    DEVICE_PREFIX, DEVICES_QUOTA, DeviceItem, PUSH_TOKEN_OWNER, PushTokenOwnerItem, attr,
    device_key, push_token_key,
};
use super::{Item, Store, TxOutcome, from_item, is_condition_failed, n, names, s, to_item};
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
    /// adds a new one while the user has fewer than `max`. The token gets one owner: in the
    /// same transaction its owner row ([`PushTokenOwnerItem`]) names this device, conditional
    /// on the row as read, and the device that held it before (another account's, or another
    /// device of this one) is removed with its count while it still holds the token. One
    /// attempt; see [`Registered`].
    pub async fn register_device(
        &self,
        user: &UserId,
        id: &DeviceId,
        reg: &Registration,
        max: u32,
        now: &str,
    ) -> Result<Registered, Error> {
        let owner = self.token_owner(&reg.token).await?;
        let mine = self.device(user, id).await?;
        let previous = self
            .previous_holder(owner.as_ref(), (user, id), reg)
            .await?;
        let mut items = vec![
            self.account_open_check(user)?,
            self.device_row(user, id, reg, mine.is_some(), now)?,
        ];
        let limit_at =
            self.device_counts(&mut items, user, mine.is_none(), previous, &reg.token, max)?;
        items.push(self.claim_token(&reg.token, owner.as_ref(), (user, id), now)?);
        Ok(match self.transact("devices.register", items).await? {
            TxOutcome::Committed => {
                if let Some((from, _)) = previous {
                    tracing::info!(user_id = %user, device = %id, from_user = %from, "push_token_moved");
                }
                match mine {
                    None => Registered::Added,
                    Some(old) => {
                        if old.token != reg.token {
                            self.release_token(&old.token, user, id).await?;
                        }
                        Registered::Updated
                    }
                }
            }
            TxOutcome::Canceled(r) => {
                let failed = |i: usize| r.get(i).is_some_and(|r| r.condition_failed());
                if failed(0) {
                    Registered::AccountClosed
                } else if limit_at.is_some_and(failed) {
                    Registered::LimitReached
                } else {
                    Registered::Raced
                }
            }
        })
    }

    /// The device row, read consistently.
    async fn device(&self, user: &UserId, id: &DeviceId) -> Result<Option<DeviceItem>, Error> {
        self.get_quota_row(user.as_str(), &device_key(id), "devices.get")
            .await?
            .map(from_item)
            .transpose()
    }

    /// Who holds `token`, by its owner row (consistent read).
    async fn token_owner(&self, token: &PushToken) -> Result<Option<PushTokenOwnerItem>, Error> {
        self.get_quota_row(
            &push_token_key(token),
            PUSH_TOKEN_OWNER,
            "devices.token_owner",
        )
        .await?
        .map(from_item)
        .transpose()
    }

    async fn get_quota_row(
        &self,
        pk: &str,
        sk: &str,
        op: &'static str,
    ) -> Result<Option<Item>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(pk))
            .key(attr::QUOTA, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new(op, e))?;
        Ok(out.item)
    }

    /// The device the token's owner row names, when it is not `me` and still holds the
    /// token: the registration it moves from.
    async fn previous_holder<'a>(
        &self,
        owner: Option<&'a PushTokenOwnerItem>,
        me: (&UserId, &DeviceId),
        reg: &Registration,
    ) -> Result<Option<(&'a UserId, &'a DeviceId)>, Error> {
        let Some(o) = owner.filter(|o| (&o.owner_id, &o.device_id) != me) else {
            return Ok(None);
        };
        let held = self.device(&o.owner_id, &o.device_id).await?;
        Ok(held
            .is_some_and(|d| d.token == reg.token)
            .then_some((&o.owner_id, &o.device_id)))
    }

    /// The registering device's row: updated while it exists, else put new.
    fn device_row(
        &self,
        user: &UserId,
        id: &DeviceId,
        reg: &Registration,
        exists: bool,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        if !exists {
            let item = DeviceItem {
                user_id: user.clone(),
                quota: device_key(id),
                platform: reg.platform,
                token: reg.token.clone(),
                created_at: now.to_owned(),
                updated_at: now.to_owned(),
            };
            return self.put_new(&self.names.quotas_table, to_item(&item)?, attr::QUOTA);
        }
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
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Adds to `items` the removal of the previous holder's device (while it holds the token)
    /// and the device counts that move: the user's `+1` for a new device (only below `max`),
    /// the previous holder's `-1`, one update when both are this user's (an item appears once
    /// in a transaction). Returns the index of the count update that can refuse for `max`.
    fn device_counts(
        &self,
        items: &mut Vec<TransactWriteItem>,
        user: &UserId,
        adds: bool,
        previous: Option<(&UserId, &DeviceId)>,
        token: &PushToken,
        max: u32,
    ) -> Result<Option<usize>, Error> {
        let mut mine = i64::from(adds);
        if let Some((holder, device)) = previous {
            items.push(self.delete_device_item(holder, device, Some(token))?);
            if holder == user {
                mine -= 1;
            } else {
                items.push(self.device_count(holder, -1, 0)?);
            }
        }
        if mine == 0 {
            return Ok(None);
        }
        items.push(self.device_count(user, mine, max)?);
        Ok((mine > 0).then_some(items.len() - 1))
    }
    /// The token's owner row naming `me`, conditional on the row as it was read (absent, or
    /// naming the same owner and device): a concurrent registration of the token cancels
    /// this one, which then reads again.
    fn claim_token(
        &self,
        token: &PushToken,
        read: Option<&PushTokenOwnerItem>,
        (user, id): (&UserId, &DeviceId),
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let row = PushTokenOwnerItem {
            user_id: push_token_key(token),
            quota: PUSH_TOKEN_OWNER.to_owned(),
            owner_id: user.clone(),
            device_id: id.clone(),
            updated_at: now.to_owned(),
        };
        let put = Put::builder()
            .table_name(&self.names.quotas_table)
            .set_item(Some(to_item(&row)?));
        let put = match read {
            None => put
                .condition_expression("attribute_not_exists(#quota)")
                .expression_attribute_names("#quota", attr::QUOTA),
            Some(o) => put
                .condition_expression("#owner = :owner AND #device = :device")
                .expression_attribute_names("#owner", attr::OWNER_ID)
                .expression_attribute_names("#device", attr::DEVICE_ID)
                .expression_attribute_values(":owner", s(o.owner_id.as_str()))
                .expression_attribute_values(":device", s(o.device_id.as_str())),
        };
        Ok(TransactWriteItem::builder()
            .put(build(put.build())?)
            .build())
    }

    /// Deletes `token`'s owner row while it still names device `id` of `user` (the device
    /// no longer holds the token); a row that names another device since stays.
    async fn release_token(
        &self,
        token: &PushToken,
        user: &UserId,
        id: &DeviceId,
    ) -> Result<(), Error> {
        let out = self
            .ddb
            .delete_item()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(push_token_key(token)))
            .key(attr::QUOTA, s(PUSH_TOKEN_OWNER))
            .condition_expression("#owner_id = :owner AND #device_id = :device")
            .set_expression_attribute_names(Some(names(&[attr::OWNER_ID, attr::DEVICE_ID])))
            .expression_attribute_values(":owner", s(user.as_str()))
            .expression_attribute_values(":device", s(id.as_str()))
            .send()
            .await;
        match out {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(AwsError::new("devices.release_token", e).into()),
        }
    }

    /// The removal of device `id` of `user`; only while its token is `token` when one is
    /// given.
    fn delete_device_item(
        &self,
        user: &UserId,
        id: &DeviceId,
        token: Option<&PushToken>,
    ) -> Result<TransactWriteItem, Error> {
        let b = Delete::builder()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::QUOTA, s(device_key(id)))
            .expression_attribute_names("#quota", attr::QUOTA);
        let b = match token {
            Some(t) => b
                .condition_expression("attribute_exists(#quota) AND #token = :t")
                .expression_attribute_names("#token", attr::TOKEN)
                .expression_attribute_values(":t", s(t.as_str())),
            None => b.condition_expression("attribute_exists(#quota)"),
        };
        Ok(TransactWriteItem::builder()
            .delete(build(b.build())?)
            .build())
    }

    /// Removes device `id` of `user` with its count; only while its token is `token` when
    /// one is given (an invalid token reported by a push service must not remove the token
    /// the app registered since). `false` when there was nothing to remove. The token's
    /// owner row goes too while it names this device.
    pub async fn delete_device(
        &self,
        user: &UserId,
        id: &DeviceId,
        token: Option<&PushToken>,
    ) -> Result<bool, Error> {
        let held = match token {
            Some(t) => Some(t.clone()),
            None => self.device(user, id).await?.map(|d| d.token),
        };
        let items = vec![
            self.delete_device_item(user, id, token)?,
            self.device_count(user, -1, 0)?,
        ];
        let removed = matches!(
            self.transact("devices.delete", items).await?,
            TxOutcome::Committed
        );
        if let Some(t) = held.filter(|_| removed) {
            self.release_token(&t, user, id).await?;
        }
        Ok(removed)
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
