//! The ledger: append-only rows keyed by their reference. This module only reads; rows are
//! written inside the transactions of `accounts` and `jobs`, always with
//! `attribute_not_exists`, never updated or deleted.

use super::cursor;
use super::schema::{LedgerItem, attr, index};
use super::{Item, Store, from_item, names, s};
use crate::domain::UserId;
use crate::error::{AwsError, Error};

impl Store {
    /// Every row of a user, from the base table with a consistent read (for audits).
    pub async fn ledger_rows(&self, user: &UserId) -> Result<Vec<LedgerItem>, Error> {
        self.ledger_rows_from(user, "").await
    }

    /// Every row of a user whose reference begins with `prefix`, consistently read.
    pub async fn ledger_rows_from(
        &self,
        user: &UserId,
        prefix: &str,
    ) -> Result<Vec<LedgerItem>, Error> {
        let mut rows = Vec::new();
        let mut start: Option<Item> = None;
        let (condition, attrs) = if prefix.is_empty() {
            ("#user_id = :u", names(&[attr::USER_ID]))
        } else {
            (
                "#user_id = :u AND begins_with(#ref, :p)",
                names(&[attr::USER_ID, attr::REF]),
            )
        };
        loop {
            let mut query = self
                .ddb
                .query()
                .table_name(&self.names.ledger_table)
                .key_condition_expression(condition)
                .set_expression_attribute_names(Some(attrs.clone()))
                .expression_attribute_values(":u", s(user.as_str()));
            if !prefix.is_empty() {
                query = query.expression_attribute_values(":p", s(prefix));
            }
            let out = query
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| AwsError::new("ledger.query", e))?;
            for item in out.items.unwrap_or_default() {
                rows.push(from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(rows),
            }
        }
    }

    /// One page of a user's rows, newest first (display).
    pub async fn ledger_page(
        &self,
        user: &UserId,
        limit: u16,
        cursor: Option<&str>,
    ) -> Result<(Vec<LedgerItem>, Option<String>), Error> {
        let start = cursor
            .map(|c| {
                cursor::decode(
                    c,
                    &[attr::USER_ID, attr::REF, attr::AT_REF],
                    attr::USER_ID,
                    user.as_str(),
                )
            })
            .transpose()?;
        let out = self
            .ddb
            .query()
            .table_name(&self.names.ledger_table)
            .index_name(index::LEDGER_BY_TIME)
            .key_condition_expression("#user_id = :u")
            .set_expression_attribute_names(Some(names(&[attr::USER_ID])))
            .expression_attribute_values(":u", s(user.as_str()))
            .scan_index_forward(false)
            .limit(i32::from(limit))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| AwsError::new("ledger.page", e))?;
        let rows = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        let next = out
            .last_evaluated_key
            .filter(|k| !k.is_empty())
            .and_then(|k| cursor::encode(&k));
        Ok((rows, next))
    }
}
