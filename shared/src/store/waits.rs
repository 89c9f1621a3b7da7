//! A user's open long-polls, counted across every API instance: one row a user in the
//! `quotas` table ([`WAITS_QUOTA`]) with a fixed number of slots. Slot `i` is two attributes,
//! its lease end (unix seconds) and its holder's id; a wait takes a free or expired slot by
//! one conditional `UpdateItem` and gives it back by another, conditional on still holding it.
//! A wait that dies without giving its slot back loses it at the lease end, so no slot leaks.
//! Only `UpdateItem` is used (no read first): a refused take returns the row as it stood
//! (`ALL_OLD`), which says which slots are free.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::schema::{WAITS_QUOTA, attr};
use super::{Item, Store, n, s};
use crate::domain::UserId;
use crate::error::{AwsError, Error};

/// One slot held: which, and the holder's id (only its holder gives it back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitSlot {
    pub index: usize,
    pub holder: String,
}

/// How a take ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Take {
    Taken(WaitSlot),
    /// The slot was held; the slots free at `now` as the row stood.
    Held {
        free: Vec<usize>,
    },
}

fn until_attr(index: usize) -> String {
    format!("{}{index}", attr::WAIT_UNTIL_PREFIX)
}

fn holder_attr(index: usize) -> String {
    format!("{}{index}", attr::WAIT_ID_PREFIX)
}

/// The slots among `0..slots` that `row` shows free at `now` (never taken, or lease ended).
fn free_slots(row: &Item, slots: usize, now: i64) -> Vec<usize> {
    (0..slots)
        .filter(|i| {
            row.get(&until_attr(*i))
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<i64>().ok())
                .is_none_or(|until| until <= now)
        })
        .collect()
}

impl Store {
    /// An update of `user`'s row of long-poll slots.
    fn waits_row(
        &self,
        user: &UserId,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.update_at(
            &self.names.quotas_table,
            (attr::USER_ID, user.as_str()),
            (attr::QUOTA, WAITS_QUOTA),
        )
    }

    /// Takes slot `slot.index` of `user`'s row for `slot.holder` until `until` (unix seconds),
    /// if it is free at `now`; the row expires (TTL) at `expires_at`.
    pub async fn take_wait_slot(
        &self,
        user: &UserId,
        slot: &WaitSlot,
        slots: usize,
        (now, until, expires_at): (i64, i64, i64),
    ) -> Result<Take, Error> {
        let res = self
            .waits_row(user)
            .update_expression("SET #until = :until, #holder = :holder, #expires_at = :expires_at")
            .condition_expression("attribute_not_exists(#until) OR #until <= :now")
            .expression_attribute_names("#until", until_attr(slot.index))
            .expression_attribute_names("#holder", holder_attr(slot.index))
            .expression_attribute_names("#expires_at", attr::EXPIRES_AT)
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":holder", s(&slot.holder))
            .expression_attribute_values(":expires_at", n(expires_at))
            .expression_attribute_values(":now", n(now))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(Take::Taken(slot.clone())),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                    let row = c.item.clone().unwrap_or_default();
                    Ok(Take::Held {
                        free: free_slots(&row, slots, now),
                    })
                }
                _ => Err(AwsError::new("waits.take", e).into()),
            },
        }
    }

    /// Gives `slot` back, if its holder still holds it (a lease that ended may have been
    /// taken by another wait since). `false` when it was no longer held.
    pub async fn release_wait_slot(&self, user: &UserId, slot: &WaitSlot) -> Result<bool, Error> {
        let res = self
            .waits_row(user)
            .update_expression("REMOVE #until, #holder")
            .condition_expression("#holder = :holder")
            .expression_attribute_names("#until", until_attr(slot.index))
            .expression_attribute_names("#holder", holder_attr(slot.index))
            .expression_attribute_values(":holder", AttributeValue::S(slot.holder.clone()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
            {
                Ok(false)
            }
            Err(e) => Err(AwsError::new("waits.release", e).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_free_when_never_taken_or_its_lease_ended() {
        let mut row = Item::new();
        row.insert(until_attr(0), n(100)); // ended at 100
        row.insert(until_attr(1), n(101)); // still held at 100
        row.insert(until_attr(3), s("not a number")); // unreadable: free, the write decides
        assert_eq!(free_slots(&row, 4, 100), vec![0, 2, 3]);
        assert_eq!(free_slots(&Item::new(), 2, 0), vec![0, 1]);
    }
}
