//! The audit behind `atelier-admin audit`: for every user, balance == Σ ledger ≥ 0, in-flight
//! count ≥ 0. Reads the account, its ledger (base table, consistent), then the account again;
//! a changed `rev` means a transaction landed in between, so that user is read again.
//!
//! The same audit runs daily in the sweeper ([`audit_pass`]): bounded by the invocation's
//! deadline, it returns the last user checked so the next invocation resumes after it.

use super::App;
use crate::domain::{Credits, UserId};
use crate::error::Error;
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

/// Accounts read per scan page: small enough that a pass stops close to its deadline.
const PAGE: i32 = 256;
/// Accounts checked at once (bounded fan-out).
const FAN_OUT: usize = 16;

/// One bounded pass of the audit: what it found, and whether it reached the end of the
/// accounts or stopped at its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassEnd {
    /// Every account after the pass's start was checked.
    Finished,
    /// Stopped at the deadline: the next pass resumes after this user.
    Stopped { resume_after: UserId },
}

/// What one pass found and where it ended.
#[derive(Debug, Clone)]
pub struct AuditPass {
    pub report: AuditReport,
    pub end: PassEnd,
}

/// Audits every account (a scan: an admin operation, never on a request path).
pub async fn audit(app: &App) -> Result<AuditReport, Error> {
    Ok(audit_pass(app, None, None).await?.report)
}

/// Audits accounts in scan order, starting after `after` (from the beginning when `None`),
/// until every account is checked or `deadline` has passed. The deadline is looked at
/// between groups of [`FAN_OUT`] accounts, after the first: a pass overruns it by one group
/// at most, and always makes progress (a chain of passes cannot loop).
pub async fn audit_pass(
    app: &App,
    after: Option<&UserId>,
    deadline: Option<std::time::Instant>,
) -> Result<AuditPass, Error> {
    let mut report = AuditReport::default();
    let mut last: Option<UserId> = None;
    let mut start = after.map(crate::store::accounts::account_key);
    loop {
        let (accounts, next) = app.store.scan_accounts(start, PAGE).await?;
        for chunk in accounts.chunks(FAN_OUT) {
            if let Some(resume_after) = last.clone()
                && deadline.is_some_and(|d| std::time::Instant::now() >= d)
            {
                let end = PassEnd::Stopped { resume_after };
                return Ok(AuditPass { report, end });
            }
            let results =
                futures::future::join_all(chunk.iter().cloned().map(|a| check(app, a))).await;
            for r in results {
                let (rows, offender) = r?;
                report.accounts += 1;
                report.ledger_rows += rows;
                report.offenders.extend(offender);
            }
            last = chunk.last().map(|a| a.user_id.clone());
        }
        match next {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => {
                let end = PassEnd::Finished;
                return Ok(AuditPass { report, end });
            }
        }
    }
}
