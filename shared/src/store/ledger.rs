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
        let from = cursor::UserIndex {
            table: &self.names.ledger_table,
            index: index::LEDGER_BY_TIME,
            cursor_keys: &[attr::USER_ID, attr::REF, attr::AT_REF],
            op: "ledger.page",
        };
        self.user_page(from, user, limit, cursor).await
    }
}
