//! `account …`: lifting a hold.

use std::process::ExitCode;

use atelier_shared::store::payments::ReleaseOutcome;
use clap::Subcommand;

use crate::common::{operator_from, user_arg};
use crate::exit;
use crate::target::app;

#[derive(Subcommand)]
pub enum AccountAction {
    /// Lift the hold a refunded or disputed purchase put on the account (its shortfall stays
    /// on the ledger row); new edits are accepted again. Exits 0 when there was no hold.
    Release {
        user: String,
        /// Who releases (recorded on the account); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
    },
}

/// `account release`: lifts a payment dispute's hold.
pub async fn release(user: &str, operator: Option<String>) -> anyhow::Result<ExitCode> {
    let user = user_arg(user)?;
    let operator = operator_from(operator)?;
    let app = app().await?;
    match atelier_shared::services::payments::release_hold(&app, &user, &operator).await? {
        ReleaseOutcome::Released(reason) => {
            println!("released {user} (the hold was for {reason})");
        }
        ReleaseOutcome::NotOnHold => println!("{user} is not on hold; nothing changed"),
        ReleaseOutcome::AccountMissing => {
            return Err(exit::not_found(format!("{user} has no account")));
        }
    }
    Ok(ExitCode::SUCCESS)
}
