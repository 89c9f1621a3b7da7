//! Purchases and their reversals. Each balance change is ONE transaction: the account update
//! and the ledger row (`attribute_not_exists`, keyed by the payment's own id), plus, for a
//! purchase, the payment record. A second delivery of the same event finds the row and
//! changes nothing.
//!
//! A reversal must take back `min(balance, credits)`, which a DynamoDB expression cannot
//! compute, so it reads the account and commits only if the account's `rev` is still the one
//! read; a concurrent change makes it read again ([`MoveOutcome::Stale`]).

use aws_sdk_dynamodb::types::{
    ConditionCheck, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::schema::{AccountItem, LedgerItem, PaymentItem, TombstoneItem, attr, tombstone_id};
use super::{Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::webhooks::NewEvent;
use crate::domain::{Operator, UserId};
use crate::error::{AwsError, Error};

/// How a purchase's transaction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchaseOutcome {
    Granted,
    /// This session's row (or this payment's record) exists: nothing changed.
    AlreadyGranted,
    AccountMissing,
    /// The account is closed: nothing changed (a closed account takes no money).
    AccountClosed,
    /// A reversal of this payment arrived first ([`TombstoneItem`]): nothing granted.
    Reversed,
}

/// How writing a tombstone ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TombstoneOutcome {
    Written,
    /// Written before (a replay of the reversal): nothing changed.
    Exists,
    /// The purchase landed meanwhile: reverse it as usual.
    Purchased,
}

/// How a guarded balance move ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveOutcome {
    Moved,
    /// The row exists (as written): this move was made before, nothing changed.
    Exists(Box<LedgerItem>),
    /// The account changed since it was read: read it again.
    Stale,
}

/// What a guarded move does to the account's hold besides the balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldChange {
    Keep,
    /// Puts the account on hold with this reason (an existing hold is kept as it is).
    Set(String),
    /// The hold's reason becomes this one (the old reason was given back, this one is owed).
    Replace(String),
    Clear,
}

/// How an operator's release ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// Released; the hold's reason.
    Released(String),
    NotOnHold,
    AccountMissing,
}

impl Store {
    /// The purchase: credits added, the ledger row `purchase:<session>` and the payment
    /// record, all or nothing.
    pub async fn purchase(
        &self,
        payment: &PaymentItem,
        row: &LedgerItem,
    ) -> Result<PurchaseOutcome, Error> {
        let items = vec![
            self.credit_open_account(row)?,
            self.put_new(&self.names.ledger_table, to_item(row)?, attr::REF)?,
            self.put_new(
                &self.names.payments_table,
                to_item(payment)?,
                attr::PAYMENT_ID,
            )?,
            self.absent(&tombstone_id(&payment.payment_id))?,
            // The outbox row of `credits.purchased`, last: the reasons' indexes above hold.
            self.outbox_put(
                &NewEvent::purchase(
                    &payment.user_id,
                    &payment.payment_id,
                    &payment.pack,
                    payment.credits.get(),
                    &payment.created_at,
                ),
                &payment.created_at,
            )?,
        ];
        match self.transact("payments.purchase", items).await? {
            TxOutcome::Committed => Ok(PurchaseOutcome::Granted),
            TxOutcome::Canceled(reasons) => {
                let failed = |i: usize| reasons.get(i).is_some_and(|r| r.condition_failed());
                if failed(1) || failed(2) {
                    Ok(PurchaseOutcome::AlreadyGranted)
                } else if failed(3) {
                    Ok(PurchaseOutcome::Reversed)
                } else if failed(0) {
                    // The old account came back with the failure: absent, or closed.
                    let closed = reasons.first().and_then(|r| r.item.as_ref());
                    Ok(match closed {
                        Some(_) => PurchaseOutcome::AccountClosed,
                        None => PurchaseOutcome::AccountMissing,
                    })
                } else {
                    Err(Error::corrupt(format!(
                        "purchase canceled for no known reason: {reasons:?}"
                    )))
                }
            }
        }
    }

    /// A payments-table item `payment_id` is absent, as a transaction item.
    fn absent(&self, payment_id: &str) -> Result<TransactWriteItem, Error> {
        let check = ConditionCheck::builder()
            .table_name(&self.names.payments_table)
            .key(attr::PAYMENT_ID, s(payment_id))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", attr::PAYMENT_ID)
            .build()
            .map_err(|e| AwsError::new("payments.absent.build", e))?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// Writes the tombstone of a payment not recorded yet, once, unless its purchase is
    /// recorded by now: the one transaction decides which came first.
    pub async fn put_tombstone(
        &self,
        tombstone: &TombstoneItem,
    ) -> Result<TombstoneOutcome, Error> {
        let items = vec![
            self.put_new(
                &self.names.payments_table,
                to_item(tombstone)?,
                attr::PAYMENT_ID,
            )?,
            self.absent(&tombstone.reverses)?,
        ];
        match self.transact("payments.tombstone", items).await? {
            TxOutcome::Committed => Ok(TombstoneOutcome::Written),
            TxOutcome::Canceled(reasons) => {
                let failed = |i: usize| reasons.get(i).is_some_and(|r| r.condition_failed());
                if failed(1) {
                    Ok(TombstoneOutcome::Purchased)
                } else if failed(0) {
                    Ok(TombstoneOutcome::Exists)
                } else {
                    Err(Error::corrupt(format!(
                        "tombstone canceled for no known reason: {reasons:?}"
                    )))
                }
            }
        }
    }

    /// The tombstone of `payment_id`, read consistently.
    pub async fn get_tombstone(&self, payment_id: &str) -> Result<Option<TombstoneItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.payments_table)
            .key(attr::PAYMENT_ID, s(tombstone_id(payment_id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("payments.get_tombstone", e))?;
        out.item.map(from_item).transpose()
    }

    /// Adds `row.amount` to an account that exists and is not closed (the account as it was
    /// comes back when the condition fails: present means closed), so a close that commits
    /// an instant before the grant refuses it.
    fn credit_open_account(&self, row: &LedgerItem) -> Result<TransactWriteItem, Error> {
        let update = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(row.user_id.as_str()))
            .update_expression("SET #credits = #credits + :amount, #rev = #rev + :one")
            .condition_expression("attribute_exists(#user_id) AND attribute_not_exists(#closed_at)")
            .set_expression_attribute_names(Some(names(&[
                attr::CREDITS,
                attr::REV,
                attr::USER_ID,
                attr::CLOSED_AT,
            ])))
            .expression_attribute_values(":amount", n(row.amount.get()))
            .expression_attribute_values(":one", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("payments.credit.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The payment record, read consistently.
    pub async fn get_payment(&self, payment_id: &str) -> Result<Option<PaymentItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.payments_table)
            .key(attr::PAYMENT_ID, s(payment_id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("payments.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// One ledger row by its reference, read consistently.
    pub async fn get_ledger_row(
        &self,
        user: &UserId,
        reference: &str,
    ) -> Result<Option<LedgerItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.ledger_table)
            .key(attr::USER_ID, s(user.as_str()))
            .key(attr::REF, s(reference))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("ledger.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// Adds `row.amount` (negative: takes) to the account as it was read (`read.rev`), with
    /// the row, and changes the hold as asked; all or nothing.
    pub async fn guarded_move(
        &self,
        read: &AccountItem,
        row: &LedgerItem,
        hold: &HoldChange,
    ) -> Result<MoveOutcome, Error> {
        let mut set = "SET #credits = #credits + :amount, #rev = #rev + :one".to_owned();
        let mut attrs = vec![attr::CREDITS, attr::REV];
        match hold {
            HoldChange::Keep => {}
            HoldChange::Set(_) => set.push_str(", #hold = if_not_exists(#hold, :hold)"),
            HoldChange::Replace(_) => set.push_str(", #hold = :hold"),
            HoldChange::Clear => set.push_str(" REMOVE #hold"),
        }
        if !matches!(hold, HoldChange::Keep) {
            attrs.push(attr::HOLD);
        }
        let mut update = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(row.user_id.as_str()))
            .update_expression(set)
            .condition_expression("#rev = :rev")
            .set_expression_attribute_names(Some(names(&attrs)))
            .expression_attribute_values(":amount", n(row.amount.get()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":rev", n(read.rev));
        if let HoldChange::Set(reason) | HoldChange::Replace(reason) = hold {
            update = update.expression_attribute_values(":hold", s(reason.as_str()));
        }
        let update = update
            .build()
            .map_err(|e| AwsError::new("payments.move.build", e))?;
        let items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.put_new(&self.names.ledger_table, to_item(row)?, attr::REF)?,
        ];
        match self.transact("payments.move", items).await? {
            TxOutcome::Committed => Ok(MoveOutcome::Moved),
            TxOutcome::Canceled(reasons) => {
                if let Some(r) = reasons.get(1).filter(|r| r.condition_failed()) {
                    let old = r.item.clone().ok_or_else(|| {
                        Error::corrupt("ledger condition failed without the old row")
                    })?;
                    return Ok(MoveOutcome::Exists(Box::new(from_item(old)?)));
                }
                if reasons.first().is_some_and(|r| r.condition_failed()) {
                    return Ok(MoveOutcome::Stale);
                }
                Err(Error::corrupt(format!(
                    "balance move canceled for no known reason: {reasons:?}"
                )))
            }
        }
    }

    /// An operator lifts an account's hold (recording who and when); the balance is not
    /// touched.
    pub async fn release_hold(
        &self,
        user: &UserId,
        operator: &Operator,
        now: &str,
    ) -> Result<ReleaseOutcome, Error> {
        let Some(account) = self.get_account(user).await? else {
            return Ok(ReleaseOutcome::AccountMissing);
        };
        let Some(reason) = account.hold else {
            return Ok(ReleaseOutcome::NotOnHold);
        };
        let out = self
            .ddb
            .update_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .update_expression("REMOVE #hold SET #hold_released_by = :op, #hold_released_at = :now")
            .condition_expression("#hold = :reason")
            .set_expression_attribute_names(Some(names(&[
                attr::HOLD,
                attr::HOLD_RELEASED_BY,
                attr::HOLD_RELEASED_AT,
            ])))
            .expression_attribute_values(":op", s(operator.as_str()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":reason", s(reason.as_str()))
            .send()
            .await;
        match out {
            Ok(_) => Ok(ReleaseOutcome::Released(reason)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                // Released (or replaced) concurrently: what is there now decides.
                Ok(ReleaseOutcome::NotOnHold)
            }
            Err(e) => Err(AwsError::new("accounts.release", e).into()),
        }
    }
}
