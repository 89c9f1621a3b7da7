//! `grant` and `audit`: an operator's credits, and every balance checked against its ledger.

use std::process::ExitCode;

use anyhow::{anyhow, bail};
use atelier_shared::domain::{Credits, GrantReason, UserId};
use atelier_shared::services::accounts::{GrantRequest, GrantResult};
use atelier_shared::services::{accounts, audit};

use crate::common::operator_from;
use crate::exit;
use crate::target::app;

/// `grant`: once per reason; a rerun with another amount is refused.
pub async fn grant(
    user: &str,
    credits: u32,
    reason: &str,
    operator: Option<String>,
    create: bool,
) -> anyhow::Result<ExitCode> {
    let Some(user) = UserId::parse(user) else {
        bail!("--user is not a valid user id")
    };
    let reason = GrantReason::parse(reason).map_err(|e| anyhow!("--reason {e}"))?;
    let operator = operator_from(operator)?;
    if credits == 0 {
        bail!("--credits must be positive");
    }
    let app = app().await?;
    let req = GrantRequest {
        credits: Credits::new(i64::from(credits)),
        reason: reason.clone(),
        operator,
        create_account: create,
    };
    let by = |o: Option<String>| o.map_or(String::new(), |o| format!(" by {o}"));
    match accounts::grant(&app, &user, &req).await? {
        GrantResult::Granted => println!("granted {credits} credits to {user} ({reason})"),
        GrantResult::AlreadyGranted { operator } => println!(
            "already granted: {credits} credits to {user} for reason {reason:?}{}; nothing changed",
            by(operator)
        ),
        GrantResult::AmountDiffers { existing, operator } => {
            return Err(exit::refused(format!(
                "{user} was already granted {existing} credits for reason {reason:?}{}, not {credits}; nothing changed (a different grant needs a new reason)",
                by(operator)
            )));
        }
        GrantResult::UnknownUser => {
            return Err(exit::not_found(format!(
                "{user} has no account; check --user, or pass --create to create it (with its signup grant)"
            )));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `audit`: the report as JSON, a summary line, exit 1 when it is not clean.
pub async fn run_audit() -> anyhow::Result<ExitCode> {
    let report = audit::audit(&app().await?).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    if report.is_clean() {
        eprintln!(
            "audit clean: {} accounts, {} ledger rows",
            report.accounts, report.ledger_rows
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("audit FAILED: {} offenders", report.offenders.len());
        Ok(ExitCode::FAILURE)
    }
}
