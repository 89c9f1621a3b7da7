//! Accounts: created once with the signup grant; the balance moves only inside transactions
//! that also write a ledger row.

use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::schema::{AccountItem, LedgerItem, attr, reference};
use super::{Item, Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::{Credits, LedgerKind, UserId};
use crate::error::{AwsError, Error};

/// Result of writing a grant's ledger row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantOutcome {
    Granted,
    /// A grant with this reason exists (its row, as written): nothing changed.
    Exists(Box<LedgerItem>),
    AccountMissing,
}

/// An account's key: where a scan resumes after that account.
pub fn account_key(user: &UserId) -> Item {
    Item::from([(attr::USER_ID.to_owned(), s(user.as_str()))])
}

impl Store {
    /// The account, read consistently.
    pub async fn get_account(&self, user: &UserId) -> Result<Option<AccountItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("accounts.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Creates the account with its signup grant, both or neither; without a grant (`None`)
    /// at a balance of 0 with no ledger row, marked `signup_pending`. `false` when it already
    /// existed (a concurrent first call won), which is fine.
    pub async fn create_account(
        &self,
        user: &UserId,
        grant: Option<Credits>,
        now: &str,
    ) -> Result<bool, Error> {
        let account = AccountItem {
            user_id: user.clone(),
            credits: grant.unwrap_or(Credits::new(0)),
            in_flight: 0,
            rev: 1,
            created_at: now.to_owned(),
            signup_pending: grant.is_none(),
            hold: None,
            closed_at: None,
            closed_by: None,
            deleted_at: None,
        };
        let mut items = vec![self.put_new(
            &self.names.accounts_table,
            to_item(&account)?,
            attr::USER_ID,
        )?];
        if let Some(grant) = grant {
            items.push(self.put_signup_row(user, grant, now)?);
        }
        match self.transact("accounts.create", items).await? {
            TxOutcome::Committed => Ok(true),
            TxOutcome::Canceled(_) => Ok(false),
        }
    }

    /// Gives the signup grant an account created without it still owes: the account loses
    /// `signup_pending` and gains `grant` in the transaction that writes `grant:signup`
    /// (`attribute_not_exists`). `false` when a concurrent call gave it first: nothing changed.
    pub async fn grant_pending_signup(
        &self,
        user: &UserId,
        grant: Credits,
        now: &str,
    ) -> Result<bool, Error> {
        let update = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .update_expression(
                "SET #credits = #credits + :amount, #rev = #rev + :one REMOVE #signup_pending",
            )
            .condition_expression("#signup_pending = :yes AND attribute_not_exists(#closed_at)")
            .set_expression_attribute_names(Some(names(&[
                attr::CREDITS,
                attr::REV,
                attr::SIGNUP_PENDING,
                attr::CLOSED_AT,
            ])))
            .expression_attribute_values(":amount", n(grant.get()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .build()
            .map_err(|e| AwsError::new("accounts.grant_signup.build", e))?;
        let items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.put_signup_row(user, grant, now)?,
        ];
        match self.transact("accounts.grant_signup", items).await? {
            TxOutcome::Committed => Ok(true),
            TxOutcome::Canceled(_) => Ok(false),
        }
    }

    /// The `grant:signup` ledger row's conditional put: written once per user, ever.
    fn put_signup_row(
        &self,
        user: &UserId,
        grant: Credits,
        now: &str,
    ) -> Result<TransactWriteItem, Error> {
        let row = LedgerItem::new(
            user,
            reference::SIGNUP.to_owned(),
            grant,
            LedgerKind::Grant,
            now,
        );
        self.put_new(&self.names.ledger_table, to_item(&row)?, attr::REF)
    }

    /// Adds `row.amount` credits to `row.user_id` with the grant's ledger row, at most once
    /// per reference (the row is written once, `attribute_not_exists`; an existing row is
    /// returned as it is and nothing changes).
    pub async fn grant(&self, row: &LedgerItem) -> Result<GrantOutcome, Error> {
        let items = self.credit_with_row(row)?.to_vec();
        match self.transact("accounts.grant", items).await? {
            TxOutcome::Committed => Ok(GrantOutcome::Granted),
            TxOutcome::Canceled(reasons) => match reasons.get(1).filter(|r| r.condition_failed()) {
                Some(r) => {
                    let old = r.item.clone().ok_or_else(|| {
                        Error::corrupt("grant condition failed without the old row")
                    })?;
                    Ok(GrantOutcome::Exists(Box::new(from_item(old)?)))
                }
                None => Ok(GrantOutcome::AccountMissing),
            },
        }
    }

    /// The two items that add `row.amount` to its user's balance with the row itself: the
    /// account update (the account must exist) and the row's conditional put, in that order.
    pub(crate) fn credit_with_row(
        &self,
        row: &LedgerItem,
    ) -> Result<[TransactWriteItem; 2], Error> {
        let update = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(row.user_id.as_str()))
            .update_expression("SET #credits = #credits + :amount, #rev = #rev + :one")
            .condition_expression("attribute_exists(#user_id)")
            .set_expression_attribute_names(Some(names(&[attr::CREDITS, attr::REV, attr::USER_ID])))
            .expression_attribute_values(":amount", n(row.amount.get()))
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(|e| AwsError::new("accounts.credit.build", e))?;
        Ok([
            TransactWriteItem::builder().update(update).build(),
            self.put_new(&self.names.ledger_table, to_item(row)?, attr::REF)?,
        ])
    }

    /// Every account, a page at a time (admin audit only; never on a request path).
    pub async fn scan_accounts(
        &self,
        start: Option<Item>,
        limit: i32,
    ) -> Result<(Vec<AccountItem>, Option<Item>), Error> {
        let out = self
            .ddb
            .scan()
            .table_name(&self.names.accounts_table)
            .consistent_read(true)
            .limit(limit)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| AwsError::new("accounts.scan", e))?;
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((items, out.last_evaluated_key))
    }

    /// A conditional put of a new item (`attribute_not_exists` on its key attribute), old
    /// item returned on failure.
    pub(crate) fn put_new(
        &self,
        table: &str,
        item: Item,
        key_attr: &str,
    ) -> Result<TransactWriteItem, Error> {
        let put = Put::builder()
            .table_name(table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", key_attr)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("put.build", e))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }
}
