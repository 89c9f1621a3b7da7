//! Per-user per-day counters (`quotas` table). An upload slot is counted by ONE conditional
//! update of the user's item for the day: `slots += 1, bytes += b` only while
//! `slots < max_slots AND bytes <= max_bytes - b` (DynamoDB conditions cannot add, so the
//! caller passes the bytes still allowed before this upload). Concurrent requests serialise
//! on the item: none can pass the limit.

use aws_sdk_dynamodb::types::ReturnValue;

use super::schema::{UploadDayItem, attr, request_window_key, upload_quota_key};
use super::{Store, from_item, n, names, s};
use crate::domain::UserId;
use crate::error::{AwsError, Error};

/// The limits one upload is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadLimits {
    pub slots: u32,
    pub bytes: u64,
}

/// How counting an upload ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadCount {
    /// Counted: the day's totals with this upload.
    Counted { slots: u32, bytes: u64 },
    /// Refused, nothing counted: the day's totals as they stand (zero when the item is new and
    /// the upload alone is over the byte limit).
    Refused { slots: u32, bytes: u64 },
}

/// How counting a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestCount {
    /// Counted: the window's requests with this one.
    Counted(u32),
    /// Refused, nothing counted: the window already holds `max`.
    Refused,
}

impl Store {
    /// Counts one request of `user` in the window starting at `start` (Unix seconds), or
    /// refuses it when the window holds `max` already: one conditional update of the
    /// window's item, so concurrent environments serialise on it and none passes `max`.
    /// `expires_at` (epoch seconds) is when TTL may delete the counter.
    pub async fn count_request(
        &self,
        user: &UserId,
        start: i64,
        max: u32,
        expires_at: i64,
    ) -> Result<RequestCount, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::QUOTA, s(request_window_key(start)))
            .update_expression(
                "SET #requests = if_not_exists(#requests, :zero) + :one, #expires_at = :expires_at",
            )
            .condition_expression("attribute_not_exists(#requests) OR #requests < :max")
            .set_expression_attribute_names(Some(names(&[attr::REQUESTS, attr::EXPIRES_AT])))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(max.into()))
            .expression_attribute_values(":expires_at", n(expires_at))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match res {
            Ok(out) => {
                let count = out
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(attr::REQUESTS))
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(max);
                Ok(RequestCount::Counted(count))
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(RequestCount::Refused)
            }
            Err(e) => Err(AwsError::new("quotas.count_request", e).into()),
        }
    }

    /// Counts one upload of `bytes` against `user`'s counter for `day`, or refuses it.
    /// `expires_at` (epoch seconds) is when TTL may delete the counter.
    pub async fn count_upload(
        &self,
        user: &UserId,
        day: &str,
        bytes: u64,
        limits: UploadLimits,
        expires_at: i64,
    ) -> Result<UploadCount, Error> {
        let Some(room) = limits.bytes.checked_sub(bytes) else {
            return Ok(UploadCount::Refused { slots: 0, bytes: 0 });
        };
        let (Ok(bytes_n), Ok(room_n)) = (i64::try_from(bytes), i64::try_from(room)) else {
            return Ok(UploadCount::Refused { slots: 0, bytes: 0 });
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::QUOTA, s(upload_quota_key(day)))
            .update_expression(
                "SET #slots = if_not_exists(#slots, :zero) + :one, \
                 #bytes = if_not_exists(#bytes, :zero) + :bytes, #expires_at = :expires_at",
            )
            .condition_expression(
                "attribute_not_exists(#slots) OR (#slots < :max_slots AND #bytes <= :room)",
            )
            .set_expression_attribute_names(Some(names(&[
                attr::SLOTS,
                attr::BYTES,
                attr::EXPIRES_AT,
            ])))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":bytes", n(bytes_n))
            .expression_attribute_values(":room", n(room_n))
            .expression_attribute_values(":max_slots", n(limits.slots.into()))
            .expression_attribute_values(":expires_at", n(expires_at))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match res {
            Ok(out) => {
                let item: UploadDayItem = from_item(out.attributes.unwrap_or_default())?;
                Ok(UploadCount::Counted {
                    slots: item.slots,
                    bytes: item.bytes,
                })
            }
            Err(e) => match e.as_service_error() {
                Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c)) => {
                    let old: Option<UploadDayItem> = c.item.clone().map(from_item).transpose()?;
                    Ok(UploadCount::Refused {
                        slots: old.as_ref().map_or(0, |o| o.slots),
                        bytes: old.as_ref().map_or(0, |o| o.bytes),
                    })
                }
                _ => Err(AwsError::new("quotas.count_upload", e).into()),
            },
        }
    }
}
