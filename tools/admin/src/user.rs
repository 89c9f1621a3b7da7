//! `user …`: support's look-up of a user, and an operator's deletion of an account.

use std::process::ExitCode;

use anyhow::bail;
use atelier_shared::domain::UserId;
use atelier_shared::services::privacy::{AccountDeletion, DeletedBy};
use atelier_shared::services::{App, privacy, support};
use clap::Subcommand;

use crate::common::{operator_from, print_json, user_arg};
use crate::exit;
use crate::target::app;

#[derive(Subcommand)]
pub enum UserAction {
    /// Delete a user's account: closed at once (recorded as closed by this operator), queued
    /// edits canceled and refunded, then, once no edit is processing, every image deleted and
    /// every edit's personal text cleared. The ledger stays. Idempotent: rerun it to finish a
    /// deletion that was interrupted. Exits 0 when done, 5 when edits were still processing
    /// after --wait seconds (run it again later). Asks to type the user id unless --yes.
    Delete {
        user: String,
        /// Delete without asking (scripts; without a terminal it is required).
        #[arg(long)]
        yes: bool,
        /// Who deletes (recorded on the account); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
        /// Seconds to wait for edits still processing (checked every 10 s).
        #[arg(long, default_value_t = 0)]
        wait: u64,
    },
    /// Balance, in flight, hold, and the newest jobs and ledger rows (JSON).
    Show {
        user: String,
        /// How many of the newest jobs and ledger rows (1-100).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
        recent: u16,
    },
}

/// `user …`: deletes (once confirmed) or shows.
pub async fn run(action: UserAction) -> anyhow::Result<ExitCode> {
    match action {
        UserAction::Delete {
            user,
            yes,
            operator,
            wait,
        } => {
            let user = user_arg(&user)?;
            let by = DeletedBy::Operator(operator_from(operator)?);
            confirm_deletion(&user, yes)?;
            delete_user(&app().await?, &user, &by, wait).await
        }
        UserAction::Show { user, recent } => {
            let user = user_arg(&user)?;
            let Some(view) = support::user(&app().await?, &user, recent).await? else {
                return Err(exit::not_found(format!("no account for {user}")));
            };
            print_json(&view)
        }
    }
}

/// `user delete`: deletes, waiting up to `wait` seconds for edits still processing.
async fn delete_user(
    app: &App,
    user: &UserId,
    by: &DeletedBy,
    wait: u64,
) -> anyhow::Result<ExitCode> {
    const POLL: std::time::Duration = std::time::Duration::from_secs(10);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait);
    loop {
        match privacy::delete_account(app, user, by).await? {
            AccountDeletion::Finished {
                account,
                canceled,
                redacted,
                objects,
            } => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "status": "deleted", "account": account, "canceled": canceled,
                        "redacted_jobs": redacted, "objects_deleted": objects,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            AccountDeletion::Pending {
                processing,
                canceled,
            } if std::time::Instant::now() + POLL > deadline => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "status": "pending", "processing": processing, "canceled": canceled,
                    }))?
                );
                eprintln!(
                    "{user} is closed, but {processing} edits are still processing; run this again to finish"
                );
                return Ok(ExitCode::from(exit::UNFINISHED));
            }
            AccountDeletion::Pending { .. } => tokio::time::sleep(POLL).await,
        }
    }
}

/// An account deletion cannot be undone: `--yes`, or the user id typed back at a terminal.
fn confirm_deletion(user: &UserId, yes: bool) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        bail!("deleting {user} cannot be undone: pass --yes to confirm (no terminal to ask on)");
    }
    eprint!("Deleting {user} cannot be undone. Type the user id to confirm: ");
    std::io::stderr().flush()?;
    let mut typed = String::new();
    std::io::stdin().lock().read_line(&mut typed)?;
    if typed.trim() != user.as_str() {
        return Err(exit::refused(format!(
            "{user} not deleted: the id typed did not match"
        )));
    }
    Ok(())
}
