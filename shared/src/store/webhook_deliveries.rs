//! Per (event, endpoint) delivery state, beside the event in its partition: the claim of each
//! attempt (one conditional `UpdateItem`, so attempt `n` is made once however many messages
//! ask for it), its end (delivered, retry due, given up), and the endpoints' concurrency
//! slots (`slots` partition, one row per slot, taken and given back conditionally).

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::schema::{
    WEBHOOK_DELIVERY_PREFIX, WEBHOOK_EVENT, WEBHOOK_PENDING, WEBHOOK_SLOTS, WebhookDeliveryItem,
    WebhookEventItem, attr, webhook_delivery_key,
};
use super::{Store, from_item, is_condition_failed, n, names, s};
use crate::error::{AwsError, Error};

/// How an attempt ended, as recorded on its delivery row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    Delivered {
        at: String,
    },
    /// The next attempt is due at `next_due`; `queued` when a delayed message carries it.
    Retry {
        next_due: String,
        queued: bool,
    },
    GaveUp {
        at: String,
    },
}

impl Store {
    /// The event row alone (consistent read); `None` once it expired.
    pub async fn webhook_event(&self, event_id: &str) -> Result<Option<WebhookEventItem>, Error> {
        self.webhooks_get(event_id, WEBHOOK_EVENT).await
    }

    /// One endpoint; `None` once removed.
    pub async fn webhook_endpoint(
        &self,
        id: &str,
    ) -> Result<Option<super::schema::WebhookEndpointItem>, Error> {
        self.webhooks_get(super::schema::WEBHOOK_ENDPOINTS, id)
            .await
    }

    async fn webhooks_get<T: serde::de::DeserializeOwned>(
        &self,
        pk: &str,
        sk: &str,
    ) -> Result<Option<T>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(pk))
            .key(attr::HOOK_SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// One event's delivery row to one endpoint (a consistent read); `None` before its first
    /// attempt is claimed.
    pub async fn webhook_delivery(
        &self,
        event_id: &str,
        endpoint_id: &str,
    ) -> Result<Option<WebhookDeliveryItem>, Error> {
        self.webhooks_get(event_id, &webhook_delivery_key(endpoint_id))
            .await
    }

    /// Every delivery row of an event.
    pub async fn webhook_deliveries(
        &self,
        event_id: &str,
    ) -> Result<Vec<WebhookDeliveryItem>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.webhooks_table)
            .key_condition_expression("#hook_pk = :pk AND begins_with(#hook_sk, :prefix)")
            .set_expression_attribute_names(Some(names(&[attr::HOOK_PK, attr::HOOK_SK])))
            .expression_attribute_values(":pk", s(event_id))
            .expression_attribute_values(":prefix", s(WEBHOOK_DELIVERY_PREFIX))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.deliveries", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Claims attempt `attempt` of `event_id` to `endpoint_id` until `lease_until`: only if
    /// the row has made exactly `attempt - 1` attempts, has not ended, and no live lease
    /// holds it. The row afterwards, or `None` when the attempt is not this caller's to make.
    pub async fn claim_webhook_attempt(
        &self,
        event_id: &str,
        endpoint_id: &str,
        attempt: u32,
        now: &str,
        lease_until: &str,
        expires_at: i64,
    ) -> Result<Option<WebhookDeliveryItem>, Error> {
        let fresh = "attribute_not_exists(#attempts)";
        let next = "#attempts = :prev AND attribute_not_exists(#delivered_at) \
             AND attribute_not_exists(#gave_up_at) \
             AND (attribute_not_exists(#lease_until) OR #lease_until < :now)";
        let mut b = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(webhook_delivery_key(endpoint_id)))
            .update_expression(
                "SET #attempts = :n, #lease_until = :lease, #next_due = :lease, #queued = :f, \
                 #endpoint_id = :ep, #expires_at = :exp",
            )
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#lease_until", attr::LEASE_UNTIL)
            .expression_attribute_names("#next_due", attr::NEXT_DUE)
            .expression_attribute_names("#queued", attr::QUEUED)
            .expression_attribute_names("#endpoint_id", attr::ENDPOINT_ID)
            .expression_attribute_names("#expires_at", attr::EXPIRES_AT)
            .expression_attribute_values(":n", n(i64::from(attempt)))
            .expression_attribute_values(":lease", s(lease_until))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .expression_attribute_values(":ep", s(endpoint_id))
            .expression_attribute_values(":exp", n(expires_at))
            .return_values(ReturnValue::AllNew);
        b = if attempt <= 1 {
            b.condition_expression(fresh)
        } else {
            b.condition_expression(next)
                .expression_attribute_names("#delivered_at", attr::DELIVERED_AT)
                .expression_attribute_names("#gave_up_at", attr::GAVE_UP_AT)
                .expression_attribute_values(":prev", n(i64::from(attempt - 1)))
                .expression_attribute_values(":now", s(now))
        };
        match b.send().await {
            Ok(out) => out.attributes.map(from_item).transpose(),
            Err(e) if is_condition_failed(&e) => Ok(None),
            Err(e) => Err(AwsError::new("webhooks.claim", e).into()),
        }
    }

    /// Records how attempt `attempt` ended and gives its lease back (only while the row is
    /// still at that attempt). `false` when it moved on (a replay restarted it).
    pub async fn end_webhook_attempt(
        &self,
        event_id: &str,
        endpoint_id: &str,
        attempt: u32,
        end: &AttemptEnd,
    ) -> Result<bool, Error> {
        let b = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(webhook_delivery_key(endpoint_id)))
            .condition_expression("#attempts = :n")
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#lease_until", attr::LEASE_UNTIL)
            .expression_attribute_values(":n", n(i64::from(attempt)));
        let b = match end {
            AttemptEnd::Delivered { at } => b
                .update_expression("SET #delivered_at = :at REMOVE #lease_until, #next_due")
                .expression_attribute_names("#delivered_at", attr::DELIVERED_AT)
                .expression_attribute_names("#next_due", attr::NEXT_DUE)
                .expression_attribute_values(":at", s(at.as_str())),
            AttemptEnd::GaveUp { at } => b
                .update_expression("SET #gave_up_at = :at REMOVE #lease_until, #next_due")
                .expression_attribute_names("#gave_up_at", attr::GAVE_UP_AT)
                .expression_attribute_names("#next_due", attr::NEXT_DUE)
                .expression_attribute_values(":at", s(at.as_str())),
            AttemptEnd::Retry { next_due, queued } => b
                .update_expression("SET #next_due = :due, #queued = :q REMOVE #lease_until")
                .expression_attribute_names("#next_due", attr::NEXT_DUE)
                .expression_attribute_names("#queued", attr::QUEUED)
                .expression_attribute_values(":due", s(next_due.as_str()))
                .expression_attribute_values(":q", AttributeValue::Bool(*queued)),
        };
        match b.send().await {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("webhooks.end_attempt", e).into()),
        }
    }

    /// The sweeper's re-drive of a row read at `attempts`: marks its next attempt queued now
    /// (so the next round leaves it alone for the grace), unless a live lease holds it or it
    /// moved on. `false` when it was not this caller's to re-drive.
    pub async fn requeue_webhook_delivery(
        &self,
        event_id: &str,
        endpoint_id: &str,
        attempts: u32,
        now: &str,
    ) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(webhook_delivery_key(endpoint_id)))
            .update_expression("SET #next_due = :now, #queued = :t")
            .condition_expression(
                "#attempts = :n AND (attribute_not_exists(#lease_until) OR #lease_until < :now)",
            )
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#lease_until", attr::LEASE_UNTIL)
            .expression_attribute_names("#next_due", attr::NEXT_DUE)
            .expression_attribute_names("#queued", attr::QUEUED)
            .expression_attribute_values(":n", n(i64::from(attempts)))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("webhooks.requeue", e).into()),
        }
    }

    /// A replay: a new run of the schedule for this row (its attempts so far are its start),
    /// due now.
    pub async fn restart_webhook_delivery(
        &self,
        event_id: &str,
        endpoint_id: &str,
        now: &str,
    ) -> Result<(), Error> {
        self.ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(webhook_delivery_key(endpoint_id)))
            .update_expression(
                "SET #run_start = #attempts, #next_due = :now, #queued = :f \
                 REMOVE #delivered_at, #gave_up_at",
            )
            .condition_expression("attribute_exists(#attempts)")
            .set_expression_attribute_names(Some(names(&[
                attr::RUN_START,
                attr::ATTEMPTS,
                attr::NEXT_DUE,
                attr::QUEUED,
                attr::DELIVERED_AT,
                attr::GAVE_UP_AT,
            ])))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.restart", e))?;
        Ok(())
    }

    /// When the sweeper's round next looks at an event (`None`: every endpoint's delivery
    /// ended, the event leaves the due index). `earlier_only` moves it only earlier.
    pub async fn set_webhook_event_due(
        &self,
        event_id: &str,
        due: Option<&str>,
        earlier_only: bool,
    ) -> Result<(), Error> {
        let mut b = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(WEBHOOK_EVENT))
            .expression_attribute_names("#due_at", attr::DUE_AT)
            .expression_attribute_names("#due_state", attr::DUE_STATE)
            .expression_attribute_names("#hook_pk", attr::HOOK_PK);
        b = match due {
            Some(at) => b
                .update_expression("SET #due_state = :p, #due_at = :at")
                .expression_attribute_values(":p", s(WEBHOOK_PENDING))
                .expression_attribute_values(":at", s(at)),
            None => b.update_expression("REMOVE #due_state, #due_at"),
        };
        b = if earlier_only {
            b.condition_expression(
                "attribute_exists(#hook_pk) AND (attribute_not_exists(#due_at) OR #due_at > :at)",
            )
        } else {
            b.condition_expression("attribute_exists(#hook_pk)")
        };
        match b.send().await {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(AwsError::new("webhooks.event_due", e).into()),
        }
    }

    /// Takes one of `slots` concurrency slots of an endpoint for `holder` until
    /// `lease_until`: the first free or expired one. `None` when all are held.
    pub async fn take_webhook_slot(
        &self,
        endpoint_id: &str,
        slots: u32,
        holder: &str,
        now: &str,
        lease_until: &str,
    ) -> Result<Option<String>, Error> {
        for i in 0..slots {
            let key = format!("{endpoint_id}#{i}");
            let res = self
                .ddb
                .update_item()
                .table_name(&self.names.webhooks_table)
                .key(attr::HOOK_PK, s(WEBHOOK_SLOTS))
                .key(attr::HOOK_SK, s(key.as_str()))
                .update_expression("SET #lease_until = :lease, #holder = :h")
                .condition_expression("attribute_not_exists(#lease_until) OR #lease_until < :now")
                .expression_attribute_names("#lease_until", attr::LEASE_UNTIL)
                .expression_attribute_names("#holder", attr::HOLDER)
                .expression_attribute_values(":lease", s(lease_until))
                .expression_attribute_values(":h", s(holder))
                .expression_attribute_values(":now", s(now))
                .send()
                .await;
            match res {
                Ok(_) => return Ok(Some(key)),
                Err(e) if is_condition_failed(&e) => continue,
                Err(e) => return Err(AwsError::new("webhooks.slot_take", e).into()),
            }
        }
        Ok(None)
    }

    /// Gives a slot back (only while `holder` still holds it).
    pub async fn give_webhook_slot(&self, key: &str, holder: &str) -> Result<(), Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(WEBHOOK_SLOTS))
            .key(attr::HOOK_SK, s(key))
            .update_expression("REMOVE #lease_until, #holder")
            .condition_expression("#holder = :h")
            .expression_attribute_names("#lease_until", attr::LEASE_UNTIL)
            .expression_attribute_names("#holder", attr::HOLDER)
            .expression_attribute_values(":h", s(holder))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(AwsError::new("webhooks.slot_give", e).into()),
        }
    }
}
