//! The audit behind `atelier-admin audit`: for every user, balance == Σ ledger ≥ 0, in-flight
//! count ≥ 0. Reads the account, its ledger (base table, consistent), then the account again;
//! a changed `rev` means a transaction landed in between, so that user is read again.

use super::App;
use crate::domain::Credits;
use crate::error::Error;
use crate::store::Item;
use crate::store::schema::AccountItem;

/// One user whose books do not balance.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Offender {
    pub user_id: String,
    pub balance: i64,
    pub ledger_sum: i64,
    pub in_flight: i64,
    pub problem: String,
}

/// What the audit found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AuditReport {
    pub accounts: u64,
    pub ledger_rows: u64,
    pub offenders: Vec<Offender>,
}

impl AuditReport {
    pub fn is_clean(&self) -> bool {
        self.offenders.is_empty()
    }
}

const STABLE_READ_ATTEMPTS: u32 = 5;

async fn check(app: &App, account: AccountItem) -> Result<(u64, Option<Offender>), Error> {
    let mut account = account;
    for _ in 0..STABLE_READ_ATTEMPTS {
        let rows = app.store.ledger_rows(&account.user_id).await?;
        let Some(after) = app.store.get_account(&account.user_id).await? else {
            return Err(Error::corrupt(format!(
                "account {} vanished",
                account.user_id
            )));
        };
        if after.rev != account.rev {
            account = after;
            continue;
        }
        let sum: Credits = rows.iter().map(|r| r.amount).sum();
        let problem = if sum != account.credits {
            Some("balance differs from the ledger sum")
        } else if account.credits.is_negative() {
            Some("negative balance")
        } else if account.in_flight < 0 {
            Some("negative in-flight count")
        } else {
            None
        };
        let offender = problem.map(|p| Offender {
            user_id: account.user_id.to_string(),
            balance: account.credits.get(),
            ledger_sum: sum.get(),
            in_flight: account.in_flight,
            problem: p.to_owned(),
        });
        return Ok((rows.len() as u64, offender));
    }
    Err(Error::Contention {
        attempts: STABLE_READ_ATTEMPTS,
    })
}

/// Audits every account (a scan: an admin operation, never on a request path).
pub async fn audit(app: &App) -> Result<AuditReport, Error> {
    let mut report = AuditReport::default();
    let mut start: Option<Item> = None;
    loop {
        let (accounts, next) = app.store.scan_accounts(start).await?;
        report.accounts += accounts.len() as u64;
        // Bounded fan-out: 16 users at a time.
        for chunk in accounts.chunks(16) {
            let results =
                futures::future::join_all(chunk.iter().cloned().map(|a| check(app, a))).await;
            for r in results {
                let (rows, offender) = r?;
                report.ledger_rows += rows;
                report.offenders.extend(offender);
            }
        }
        match next {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return Ok(report),
        }
    }
}
