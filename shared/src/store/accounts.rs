//! Accounts: created once with the signup grant; the balance moves only inside transactions
//! that also write a ledger row.

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};

use std::collections::HashMap;

use super::schema::{AccountItem, LedgerItem, SignupItem, attr, reference};
use super::{
    CancelReason, Item, Store, TxOutcome, from_item, is_condition_failed, n, names, s, to_item,
};
use crate::domain::{AddressHash, Credits, LedgerKind, UserId};
use crate::error::{AwsError, Error};

/// Result of writing a grant's ledger row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantOutcome {
    Granted,
    /// A grant with this reason exists (its row, as written): nothing changed.
    Exists(Box<LedgerItem>),
    AccountMissing,
}

/// A signup grant: its credits and, when the token carried a verified address, that
/// address's hash (claimed once, for every account).
#[derive(Debug, Clone, Copy)]
pub struct SignupGrant<'a> {
    pub credits: Credits,
    pub address: Option<&'a AddressHash>,
    /// The same address's hash under the normalisation before the provider table, when it
    /// differs: checked unclaimed in the same transaction (`domain::AddressHash::legacy_of`).
    pub legacy: Option<&'a AddressHash>,
}

/// How a new account starts.
#[derive(Debug, Clone, Copy)]
pub enum Opening<'a> {
    WithGrant(SignupGrant<'a>),
    /// Owing the grant until a call with a verified address.
    Pending,
    /// Its address had the grant on another account: none, and none owed.
    AddressUsed,
}

/// How creating an account (or giving its pending grant) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// Nothing changed: a concurrent call created the account or gave the grant first.
    Exists,
    /// Nothing changed: the grant's address had its grant already.
    AddressUsed,
}

/// Whether item `i` of a canceled transaction failed its condition.
fn failed(reasons: &[CancelReason], i: usize) -> bool {
    reasons.get(i).is_some_and(CancelReason::condition_failed)
}

/// Whether the address claim (after the account and the ledger row: the third of a signup's
/// items, and the fourth, its legacy form's check, when there is one) failed.
fn address_claimed(reasons: &[CancelReason]) -> bool {
    (3..=4).contains(&reasons.len()) && (failed(reasons, 2) || failed(reasons, 3))
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

    /// Creates the account as `opening` says: with its signup grant (both or neither, and
    /// the grant's address claimed in the same transaction), owing it (`signup_pending`, at
    /// 0 with no ledger row), or refused it because its address had it already.
    pub async fn create_account(
        &self,
        user: &UserId,
        opening: Opening<'_>,
        now: &str,
    ) -> Result<Created, Error> {
        let account = AccountItem {
            user_id: user.clone(),
            credits: match opening {
                Opening::WithGrant(g) => g.credits,
                _ => Credits::new(0),
            },
            in_flight: 0,
            rev: 1,
            created_at: now.to_owned(),
            signup_pending: matches!(opening, Opening::Pending),
            signup_address_used: matches!(opening, Opening::AddressUsed),
            hold: None,
            closed_at: None,
            closed_by: None,
            deleted_at: None,
            consumption_consent_at: None,
            // Random (the OS's generator): nothing about the user tells it.
            app_account_token: Some(uuid::Uuid::new_v4().to_string()),
        };
        let mut items = vec![self.put_new(
            &self.names.accounts_table,
            to_item(&account)?,
            attr::USER_ID,
        )?];
        if let Opening::WithGrant(grant) = opening {
            items.extend(self.signup_items(user, grant, now)?);
        }
        match self.transact("accounts.create", items).await? {
            TxOutcome::Committed => Ok(Created::Created),
            TxOutcome::Canceled(r) if address_claimed(&r) && !failed(&r, 0) => {
                Ok(Created::AddressUsed)
            }
            TxOutcome::Canceled(_) => Ok(Created::Exists),
        }
    }

    /// Gives the signup grant an account created without it still owes: the account loses
    /// `signup_pending` and gains the grant in the transaction that writes `grant:signup`
    /// (`attribute_not_exists`) and claims the grant's address.
    pub async fn grant_pending_signup(
        &self,
        user: &UserId,
        grant: SignupGrant<'_>,
        now: &str,
    ) -> Result<Created, Error> {
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
            .expression_attribute_values(":amount", n(grant.credits.get()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .build()
            .map_err(|e| AwsError::new("accounts.grant_signup.build", e))?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        items.extend(self.signup_items(user, grant, now)?);
        match self.transact("accounts.grant_signup", items).await? {
            TxOutcome::Committed => Ok(Created::Created),
            TxOutcome::Canceled(r) if address_claimed(&r) && !failed(&r, 0) => {
                Ok(Created::AddressUsed)
            }
            TxOutcome::Canceled(_) => Ok(Created::Exists),
        }
    }

    /// Records (`Some(since)`) or withdraws (`None`) the owner's consent to share consumption
    /// with the App Store; `false` when the account is closed (nothing written). A consent
    /// already given keeps its first date.
    pub async fn set_consumption_consent(
        &self,
        user: &UserId,
        since: Option<&str>,
    ) -> Result<bool, Error> {
        let update = self
            .ddb
            .update_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .condition_expression("attribute_exists(#user) AND attribute_not_exists(#closed_at)")
            .set_expression_attribute_names(Some(HashMap::from([
                ("#user".to_owned(), attr::USER_ID.to_owned()),
                ("#closed_at".to_owned(), attr::CLOSED_AT.to_owned()),
                (
                    "#consent".to_owned(),
                    attr::CONSUMPTION_CONSENT_AT.to_owned(),
                ),
            ])));
        let update = match since {
            Some(now) => update
                .update_expression("SET #consent = if_not_exists(#consent, :now)")
                .expression_attribute_values(":now", s(now)),
            None => update.update_expression("REMOVE #consent"),
        };
        match update.send().await {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("accounts.consumption_consent", e).into()),
        }
    }

    /// Records on a pending account that its address had the grant elsewhere: it owes
    /// nothing more, so later calls try no grant. `false` when it was no longer pending.
    pub async fn refuse_pending_signup(&self, user: &UserId) -> Result<bool, Error> {
        let out = self
            .ddb
            .update_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .update_expression("SET #used = :yes REMOVE #signup_pending")
            .condition_expression("#signup_pending = :yes")
            .set_expression_attribute_names(Some(HashMap::from([
                ("#used".to_owned(), attr::SIGNUP_ADDRESS_USED.to_owned()),
                (
                    "#signup_pending".to_owned(),
                    attr::SIGNUP_PENDING.to_owned(),
                ),
            ])))
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("accounts.refuse_signup", e).into()),
        }
    }

    /// The grant's ledger row and, when it has one, its address's claim: each written once.
    fn signup_items(
        &self,
        user: &UserId,
        grant: SignupGrant<'_>,
        now: &str,
    ) -> Result<Vec<TransactWriteItem>, Error> {
        let mut items = vec![self.put_signup_row(user, grant.credits, now)?];
        if let Some(address) = grant.address {
            let claim = SignupItem {
                address_hash: address.clone(),
                user_id: user.clone(),
                granted_at: now.to_owned(),
            };
            items.push(self.put_new(
                &self.names.signups_table,
                to_item(&claim)?,
                attr::ADDRESS_HASH,
            )?);
            if let Some(legacy) = grant.legacy {
                items.push(self.unclaimed(legacy)?);
            }
        }
        Ok(items)
    }

    /// A check that no grant was recorded under `address` (a hash written before the
    /// provider table: the same inbox, claimed under its older form).
    fn unclaimed(&self, address: &AddressHash) -> Result<TransactWriteItem, Error> {
        let check = ConditionCheck::builder()
            .table_name(&self.names.signups_table)
            .key(attr::ADDRESS_HASH, s(address.as_str()))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", attr::ADDRESS_HASH)
            .build()
            .map_err(|e| AwsError::new("signups.unclaimed.build", e))?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// Which account had the signup grant of `address`, if any.
    pub async fn signup_of(&self, address: &AddressHash) -> Result<Option<SignupItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.signups_table)
            .key(attr::ADDRESS_HASH, s(address.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("signups.get", e))?;
        out.item.map(from_item).transpose()
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
