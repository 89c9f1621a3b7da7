//! Guards that watch the books from outside the money path, both run by the sweeper:
//!
//! - the ledger tamper alarm: the ledger is append-only by the code alone (IAM allows
//!   `PutItem`, which can overwrite a row), so a DynamoDB stream on the ledger table hands
//!   every `MODIFY` and `REMOVE` here; each is logged (`ledger_row_changed`, the row's key
//!   only, never its image) and counted (`LedgerRowsChanged`), which the alarm watches;
//! - the scheduled audit: the audit behind `atelier-admin audit`, one bounded pass per
//!   invocation, each offender logged (`audit_offender`) and counted (`AuditOffenders`).

use std::time::Instant;

use super::App;
use super::audit::{self, AuditPass, PassEnd};
use crate::domain::UserId;
use crate::error::Error;
use crate::store::schema::LedgerKey;

/// A stream record's `eventName` on the ledger table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEventName {
    /// The normal append: nothing to report.
    Insert,
    Modify,
    Remove,
}

impl StreamEventName {
    /// The stream's own name for it; `None` for a name DynamoDB does not send.
    pub fn parse(raw: &str) -> Option<StreamEventName> {
        match raw {
            "INSERT" => Some(StreamEventName::Insert),
            "MODIFY" => Some(StreamEventName::Modify),
            "REMOVE" => Some(StreamEventName::Remove),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            StreamEventName::Insert => "INSERT",
            StreamEventName::Modify => "MODIFY",
            StreamEventName::Remove => "REMOVE",
        }
    }
}

/// A change to a ledger row that the code never makes (rows are only ever inserted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerChange {
    pub event: StreamEventName,
    /// The row's key; `None` when the record's keys were not a ledger key (still reported).
    pub key: Option<LedgerKey>,
}

impl LedgerChange {
    /// The change a stream record describes; `None` for an `INSERT` (the normal append).
    pub fn from_record(event: StreamEventName, keys: serde_dynamo::Item) -> Option<LedgerChange> {
        (event != StreamEventName::Insert).then(|| LedgerChange {
            event,
            key: serde_dynamo::from_item(keys).ok(),
        })
    }
}

/// Reports a tampered ledger row: an error log line with its key, and the metric the alarm
/// watches.
pub fn ledger_row_changed(change: &LedgerChange) {
    let (user, reference) = match &change.key {
        Some(k) => (k.user_id.as_str(), k.reference.as_str()),
        None => ("?", "?"),
    };
    tracing::error!(
        event_name = change.event.as_str(),
        user_id = user,
        r#ref = reference,
        key_readable = change.key.is_some(),
        "ledger_row_changed"
    );
    crate::adapters::metrics::ledger_row_changed(change.event.as_str());
}

/// One pass of the scheduled audit: starts after `after`, stops at `deadline`; logs each
/// offender and the pass, and records the counts.
pub async fn scheduled_audit(
    app: &App,
    after: Option<&UserId>,
    deadline: Option<Instant>,
) -> Result<AuditPass, Error> {
    let pass = audit::audit_pass(app, after, deadline).await?;
    let report = &pass.report;
    for o in &report.offenders {
        tracing::error!(
            user_id = %o.user_id,
            balance = o.balance,
            ledger_sum = o.ledger_sum,
            in_flight = o.in_flight,
            problem = %o.problem,
            "audit_offender"
        );
    }
    crate::adapters::metrics::audited(report.accounts, report.offenders.len() as u64);
    tracing::info!(
        accounts = report.accounts,
        ledger_rows = report.ledger_rows,
        offenders = report.offenders.len(),
        finished = pass.end == PassEnd::Finished,
        "audit_pass_completed"
    );
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_dynamo::AttributeValue;

    fn keys(user: &str, reference: &str) -> serde_dynamo::Item {
        let mut item = std::collections::HashMap::new();
        item.insert("user_id".to_owned(), AttributeValue::S(user.to_owned()));
        item.insert("ref".to_owned(), AttributeValue::S(reference.to_owned()));
        item.into()
    }

    #[test]
    fn an_insert_is_the_normal_append_and_reports_nothing() {
        assert_eq!(
            LedgerChange::from_record(StreamEventName::Insert, keys("u1", "grant#signup")),
            None
        );
    }

    #[test]
    fn a_modify_or_remove_reports_the_rows_key() {
        for event in [StreamEventName::Modify, StreamEventName::Remove] {
            let change = LedgerChange::from_record(event, keys("u1", "charge#j1"));
            let key = change.and_then(|c| c.key);
            assert_eq!(
                key.map(|k| (k.user_id.to_string(), k.reference)),
                Some(("u1".to_owned(), "charge#j1".to_owned())),
                "{event:?}"
            );
        }
    }

    #[test]
    fn a_change_whose_keys_are_not_a_ledger_key_is_still_reported() {
        let change = LedgerChange::from_record(StreamEventName::Remove, Default::default());
        assert_eq!(
            change,
            Some(LedgerChange {
                event: StreamEventName::Remove,
                key: None
            })
        );
    }

    #[test]
    fn stream_event_names_round_trip_and_unknown_ones_are_refused() {
        for e in [
            StreamEventName::Insert,
            StreamEventName::Modify,
            StreamEventName::Remove,
        ] {
            assert_eq!(StreamEventName::parse(e.as_str()), Some(e));
        }
        assert_eq!(StreamEventName::parse("modify"), None);
    }
}
