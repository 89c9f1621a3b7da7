//! A payment that landed on a closed account and was refunded at once: recorded once, in one
//! transaction, with the balance unmoved (rule 14 of docs/design.md).

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::schema::{LedgerItem, PaymentItem, attr};
use super::{Store, TxOutcome, n, names, s, to_item};
use crate::error::{AwsError, Error};

/// How recording a refunded payment ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundRecord {
    Recorded,
    /// The payment (or one of its rows) was recorded before: nothing changed.
    AlreadyRecorded,
}

impl Store {
    /// Records `payment` as bought and given back: the payment record, `bought` and
    /// `given_back` (rows whose amounts cancel out), and the account's `rev` bumped (an
    /// audit that read the ledger meanwhile reads it again); the balance does not move. The
    /// account must be closed. All or nothing, once.
    pub async fn record_refunded_payment(
        &self,
        payment: &PaymentItem,
        bought: &LedgerItem,
        given_back: &LedgerItem,
    ) -> Result<RefundRecord, Error> {
        let touch = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(payment.user_id.as_str()))
            .update_expression("SET #rev = #rev + :one")
            .condition_expression("attribute_exists(#closed_at)")
            .set_expression_attribute_names(Some(names(&[attr::REV, attr::CLOSED_AT])))
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(|e| AwsError::new("payments.refunded.build", e))?;
        let items = vec![
            TransactWriteItem::builder().update(touch).build(),
            self.put_new(
                &self.names.payments_table,
                to_item(payment)?,
                attr::PAYMENT_ID,
            )?,
            self.put_new(&self.names.ledger_table, to_item(bought)?, attr::REF)?,
            self.put_new(&self.names.ledger_table, to_item(given_back)?, attr::REF)?,
        ];
        match self.transact("payments.refunded", items).await? {
            TxOutcome::Committed => Ok(RefundRecord::Recorded),
            TxOutcome::Canceled(reasons) => {
                let failed = |i: usize| reasons.get(i).is_some_and(|r| r.condition_failed());
                if (1..=3).any(failed) {
                    Ok(RefundRecord::AlreadyRecorded)
                } else {
                    // A close is never undone: an open account here is a bug, not a state.
                    Err(Error::corrupt(format!(
                        "refunded payment {} of an account that is not closed: {reasons:?}",
                        payment.payment_id
                    )))
                }
            }
        }
    }
}
