//! The webhook outbox's DynamoDB side: the event row that joins a state change's transaction,
//! the due events, the delivery log and the endpoints. Policy (who is sent what, when to retry
//! or disable) is in `services::webhooks`.

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

use super::schema::{
    WEBHOOK_ENDPOINTS, WEBHOOK_EVENT, WEBHOOK_PENDING, WebhookAttemptItem, WebhookEndpointItem,
    WebhookEventItem, WebhookSecret, attr, index,
};
use super::{Store, from_item, names, s, to_item};
use crate::domain::webhooks::NewEvent;
use crate::error::{AwsError, Error};

impl Store {
    /// The outbox row of `event`, due at once, as a transaction item: it commits with the
    /// state change it reports or not at all. Conditional on a new id, so an event is written
    /// at most once.
    pub(crate) fn outbox_put(
        &self,
        event: &NewEvent,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let item = WebhookEventItem {
            hook_pk: event.id.clone(),
            hook_sk: WEBHOOK_EVENT.to_owned(),
            kind: event.kind.as_str().to_owned(),
            body: event.body.clone(),
            created_at: now.to_owned(),
            due_state: Some(WEBHOOK_PENDING.to_owned()),
            // The stream starts delivery at once; the sweeper's round looks after the grace
            // (a lost stream record, a crashed deliverer) and closes the event.
            due_at: Some(crate::clock::format(
                crate::clock::parse(now).unwrap_or_else(crate::clock::now)
                    + crate::domain::webhooks::REDRIVE_GRACE,
            )),
            rounds: 0,
            delivered_to: Vec::new(),
            trace_id: event.trace.as_ref().map(|t| t.to_string()),
            expires_at: Some(crate::domain::webhooks::expires_at(
                crate::clock::parse(now).unwrap_or_else(crate::clock::now),
            )),
        };
        self.put_new(&self.names.webhooks_table, to_item(&item)?, attr::HOOK_PK)
    }

    /// Events with a round due at or before `before`, oldest first (the sparse index), up to
    /// `limit`: page after page, since one page stops at 1 MB (a few thousand events)
    /// whatever the limit.
    pub async fn webhook_events_due(
        &self,
        before: &str,
        limit: i32,
    ) -> Result<Vec<WebhookEventItem>, Error> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.webhooks_table)
            .index_name(index::WEBHOOKS_DUE)
            .key_condition_expression("#due_state = :p AND #due_at <= :before")
            .set_expression_attribute_names(Some(names(&[attr::DUE_STATE, attr::DUE_AT])))
            .expression_attribute_values(":p", s(WEBHOOK_PENDING))
            .expression_attribute_values(":before", s(before));
        let limit = usize::try_from(limit).unwrap_or(0);
        let items = query_pages(query, Some(limit), "webhooks.due").await?;
        items.into_iter().map(from_item).collect()
    }

    /// An event and its delivery log (every row under its id), in key order.
    pub async fn webhook_event_rows(
        &self,
        event_id: &str,
    ) -> Result<(Option<WebhookEventItem>, Vec<WebhookAttemptItem>), Error> {
        let items = self.webhook_partition(event_id).await?;
        let mut event = None;
        let mut attempts = Vec::new();
        for item in items {
            let is_event = item
                .get(attr::HOOK_SK)
                .is_some_and(|v| v.as_s().is_ok_and(|k| k == WEBHOOK_EVENT));
            let is_attempt = item
                .get(attr::HOOK_SK)
                .is_some_and(|v| v.as_s().is_ok_and(|k| k.starts_with("attempt#")));
            if is_event {
                event = Some(from_item(item)?);
            } else if is_attempt {
                attempts.push(from_item(item)?);
            }
        }
        Ok((event, attempts))
    }

    async fn webhook_partition(&self, pk: &str) -> Result<Vec<super::Item>, Error> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.webhooks_table)
            .key_condition_expression("#hook_pk = :pk")
            .set_expression_attribute_names(Some(names(&[attr::HOOK_PK])))
            .expression_attribute_values(":pk", s(pk))
            .consistent_read(true);
        query_pages(query, None, "webhooks.partition").await
    }

    /// Records one attempt in the event's delivery log.
    pub async fn put_webhook_attempt(&self, attempt: &WebhookAttemptItem) -> Result<(), Error> {
        self.ddb
            .put_item()
            .table_name(&self.names.webhooks_table)
            .set_item(Some(to_item(attempt)?))
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.attempt", e))?;
        Ok(())
    }

    /// Makes an event due again now (an operator's replay): a fresh run of the schedule to
    /// every active endpoint, the delivery log kept, the event kept a full retention from now.
    pub async fn replay_webhook_event(&self, event_id: &str, now: &str) -> Result<bool, Error> {
        let expires = crate::domain::webhooks::expires_at(
            crate::clock::parse(now).unwrap_or_else(crate::clock::now),
        );
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(event_id))
            .key(attr::HOOK_SK, s(WEBHOOK_EVENT))
            .update_expression(
                "SET #due_state = :p, #due_at = :now, #delivered_to = :empty, #expires_at = :exp",
            )
            .condition_expression("attribute_exists(#hook_pk)")
            .set_expression_attribute_names(Some(names(&[
                attr::DUE_STATE,
                attr::DUE_AT,
                attr::DELIVERED_TO,
                attr::HOOK_PK,
                attr::EXPIRES_AT,
            ])))
            .expression_attribute_values(":exp", super::n(expires))
            .expression_attribute_values(":p", s(WEBHOOK_PENDING))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":empty", AttributeValue::L(Vec::new()))
            .send()
            .await;
        match res {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(AwsError::new("webhooks.replay", e).into()),
        }
        // Each endpoint's delivery starts a new run of the schedule; the sweeper's next round
        // enqueues them (the event is due now).
        for d in self.webhook_deliveries(event_id).await? {
            self.restart_webhook_delivery(event_id, &d.endpoint_id, now)
                .await?;
        }
        Ok(true)
    }

    /// Every endpoint, active or disabled.
    pub async fn webhook_endpoints(&self) -> Result<Vec<WebhookEndpointItem>, Error> {
        self.webhook_partition(WEBHOOK_ENDPOINTS)
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Writes a new endpoint (its id is new: never over another).
    pub async fn add_webhook_endpoint(&self, endpoint: &WebhookEndpointItem) -> Result<(), Error> {
        self.ddb
            .put_item()
            .table_name(&self.names.webhooks_table)
            .set_item(Some(to_item(endpoint)?))
            .condition_expression("attribute_not_exists(#hook_pk)")
            .expression_attribute_names("#hook_pk", attr::HOOK_PK)
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.endpoint_add", e))?;
        Ok(())
    }

    /// Applies `change` to endpoint `id` as read at `generation`: only the fields the change
    /// names, and only if the endpoint still exists at that generation (an operator's remove
    /// or rotation since the read wins). The endpoint afterwards, or `None` when it changed.
    pub async fn update_webhook_endpoint(
        &self,
        id: &str,
        generation: u64,
        change: &EndpointChange,
    ) -> Result<Option<WebhookEndpointItem>, Error> {
        let same = if generation == 0 {
            "(attribute_not_exists(#generation) OR #generation = :g)"
        } else {
            "#generation = :g"
        };
        let mut b = self
            .ddb
            .update_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(WEBHOOK_ENDPOINTS))
            .key(attr::HOOK_SK, s(id))
            .expression_attribute_names("#hook_pk", attr::HOOK_PK)
            .expression_attribute_names("#generation", attr::GENERATION)
            .expression_attribute_values(":g", super::n(generation_n(generation)))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew);
        let (update, extra_condition) = change.expression();
        b = change.bind(b, generation)?.update_expression(update);
        b = b.condition_expression(format!(
            "attribute_exists(#hook_pk) AND {same}{extra_condition}"
        ));
        match b.send().await {
            Ok(out) => out.attributes.map(from_item).transpose(),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(AwsError::new("webhooks.endpoint_update", e).into()),
        }
    }

    /// Removes an endpoint; `false` when there was none.
    pub async fn delete_webhook_endpoint(&self, id: &str) -> Result<bool, Error> {
        let out = self
            .ddb
            .delete_item()
            .table_name(&self.names.webhooks_table)
            .key(attr::HOOK_PK, s(WEBHOOK_ENDPOINTS))
            .key(attr::HOOK_SK, s(id))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| AwsError::new("webhooks.endpoint_delete", e))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }
}

/// A generation as a DynamoDB number (it counts rotations: never near `i64::MAX`).
fn generation_n(generation: u64) -> i64 {
    i64::try_from(generation).unwrap_or(i64::MAX)
}

/// One change of an endpoint's fields: the delivery worker's (a failed or served round, a
/// disable) or the operator's (a rotation, which moves the generation on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointChange {
    /// One more failed round; the first failure's time kept, or `now`.
    Failed { now: String },
    /// Served: the failure count and its start cleared.
    Served,
    /// Disabled at `now` (after failing for the policy's window).
    Disable { now: String },
    /// New secrets, the failure state cleared and the endpoint enabled again.
    Rotate { secrets: Vec<WebhookSecret> },
}

type UpdateBuilder = aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

impl EndpointChange {
    /// The update expression and any condition beyond existence and generation.
    fn expression(&self) -> (&'static str, &'static str) {
        match self {
            EndpointChange::Failed { .. } => (
                "ADD #failed_rounds :one SET #failing_since = if_not_exists(#failing_since, :now)",
                " AND attribute_not_exists(#disabled_at)",
            ),
            EndpointChange::Served => ("SET #failed_rounds = :zero REMOVE #failing_since", ""),
            EndpointChange::Disable { .. } => (
                "SET #disabled_at = :now",
                " AND attribute_not_exists(#disabled_at)",
            ),
            EndpointChange::Rotate { .. } => (
                "SET #secrets = :secrets, #generation = :next, #failed_rounds = :zero \
                 REMOVE #failing_since, #disabled_at",
                "",
            ),
        }
    }

    /// Binds exactly the names and values its expression uses (DynamoDB refuses unused ones).
    fn bind(&self, b: UpdateBuilder, generation: u64) -> Result<UpdateBuilder, Error> {
        let failures = |b: UpdateBuilder| {
            b.expression_attribute_names("#failed_rounds", attr::FAILED_ROUNDS)
                .expression_attribute_names("#failing_since", attr::FAILING_SINCE)
        };
        Ok(match self {
            EndpointChange::Failed { now } => failures(b)
                .expression_attribute_names("#disabled_at", attr::DISABLED_AT)
                .expression_attribute_values(":one", super::n(1))
                .expression_attribute_values(":now", s(now.as_str())),
            EndpointChange::Served => failures(b).expression_attribute_values(":zero", super::n(0)),
            EndpointChange::Disable { now } => b
                .expression_attribute_names("#disabled_at", attr::DISABLED_AT)
                .expression_attribute_values(":now", s(now.as_str())),
            EndpointChange::Rotate { secrets } => {
                let secrets = serde_dynamo::to_attribute_value(secrets)
                    .map_err(|e| Error::corrupt_by("serialize webhook secrets", e))?;
                let next = generation_n(generation.saturating_add(1));
                failures(b)
                    .expression_attribute_names("#disabled_at", attr::DISABLED_AT)
                    .expression_attribute_names("#secrets", attr::SECRETS)
                    .expression_attribute_values(":secrets", secrets)
                    .expression_attribute_values(":next", super::n(next))
                    .expression_attribute_values(":zero", super::n(0))
            }
        })
    }
}

/// Every item `query` matches, page after page (a page stops at 1 MB whatever its limit), or
/// the first `cap` of them.
async fn query_pages(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    cap: Option<usize>,
    op: &'static str,
) -> Result<Vec<super::Item>, Error> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let left = cap.map(|c| c.saturating_sub(items.len()));
        if left == Some(0) {
            return Ok(items);
        }
        let page = left.map(|l| i32::try_from(l).unwrap_or(i32::MAX));
        let out = query
            .clone()
            .set_limit(page)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| AwsError::new(op, e))?;
        items.extend(out.items.unwrap_or_default());
        start = out.last_evaluated_key.filter(|k| !k.is_empty());
        if start.is_none() {
            return Ok(items);
        }
    }
}
