//! `job …`: a job's whole history, and an operator's refund of it.

use std::process::ExitCode;

use anyhow::anyhow;
use atelier_shared::domain::{GrantReason, JobId};
use atelier_shared::services::App;
use atelier_shared::services::support::{self, RefundResult};
use clap::Subcommand;

use crate::common::{operator_from, print_json};
use crate::exit;
use crate::target::app;

#[derive(Subcommand)]
pub enum JobAction {
    /// The job as stored, every attempt with its calls (outcome, usage, cost), its ledger
    /// rows, and the settled model cost (JSON).
    Show { id: String },
    /// Give a job's credits back, once ever per job: a job that failed or was canceled was
    /// refunded already (exit 2, nothing changed); a queued or processing one is refused (the
    /// pipeline delivers or refunds it); a delivered one needs --force. A rerun of the same
    /// refund changes nothing and exits 0. The operator and reason are on the ledger row.
    Refund {
        id: String,
        /// Why: 1-64 of a-z, 0-9 and - _ . : (e.g. a ticket id).
        #[arg(long)]
        reason: String,
        /// Who refunds (recorded on the ledger row); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
        /// Refund a delivered job.
        #[arg(long)]
        force: bool,
    },
}

/// `job …`: shows or refunds.
pub async fn run(action: JobAction) -> anyhow::Result<ExitCode> {
    match action {
        JobAction::Show { id } => {
            let id = job_id(&id)?;
            let Some(history) = support::job(&app().await?, &id).await? else {
                return Err(exit::not_found(format!("no job {id}")));
            };
            print_json(&history)
        }
        JobAction::Refund {
            id,
            reason,
            operator,
            force,
        } => {
            let id = job_id(&id)?;
            let req = support::RefundRequest {
                reason: GrantReason::parse(&reason).map_err(|e| anyhow!("--reason {e}"))?,
                operator: operator_from(operator)?,
                force,
            };
            refund(&app().await?, &id, &req).await
        }
    }
}

fn job_id(raw: &str) -> anyhow::Result<JobId> {
    JobId::parse(raw).ok_or_else(|| anyhow!("ID is not a valid job id"))
}

/// `job refund`: translates the outcome into a line and an exit code.
async fn refund(app: &App, id: &JobId, req: &support::RefundRequest) -> anyhow::Result<ExitCode> {
    match support::refund(app, id, req).await? {
        RefundResult::Refunded { user, credits } => {
            println!(
                "refunded {credits} credits to {user} for job {id} ({})",
                req.reason
            );
        }
        RefundResult::AlreadyRefunded(row) => {
            let same = row.operator.as_deref() == Some(req.operator.as_str())
                && row.reason.as_deref() == Some(req.reason.as_str());
            let by = row.operator.as_deref().map_or("the pipeline", |o| o);
            let what = format!(
                "job {id} was refunded already: {} credits at {} by {by} ({}); nothing changed",
                row.amount,
                row.created_at,
                row.reason.as_deref().unwrap_or("-")
            );
            if !same {
                return Err(exit::refused(what));
            }
            println!("{what}");
        }
        RefundResult::InFlight(state) => {
            return Err(exit::refused(format!(
                "job {id} is {}; the pipeline delivers or refunds it (see `job show`); nothing changed",
                state.as_str()
            )));
        }
        RefundResult::Delivered => {
            return Err(exit::refused(format!(
                "job {id} was delivered; pass --force (with --reason) to refund it anyway; nothing changed"
            )));
        }
        RefundResult::JobMissing => return Err(exit::not_found(format!("no job {id}"))),
        RefundResult::AccountMissing => {
            return Err(exit::not_found(format!(
                "the owner of job {id} has no account"
            )));
        }
    }
    Ok(ExitCode::SUCCESS)
}
