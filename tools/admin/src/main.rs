//! `atelier-admin`: operator commands on the same tables the functions use. The endpoint and
//! table names come from the environment, so it works against the local stack and AWS alike.
//! This file parses the command line, resolves the deployment and hands each command to its
//! group's module.

use std::process::ExitCode;

use atelier_shared::store::schema::TABLES;
use clap::{Parser, Subcommand};

use account::AccountAction;
use budget::BudgetAction;
use catalogue::{env_names, sorted};
use common::print_json;
use job::JobAction;
use target::{TARGET, app};
use user::UserAction;

mod account;
mod budget;
mod catalogue;
mod common;
mod credits;
mod deployment;
mod exit;
mod job;
mod target;
mod user;
mod webhook;

#[derive(Parser)]
#[command(
    name = "atelier-admin",
    about = "Operate Atelier: grants, refunds, support look-ups, audits, schema",
    after_help = "Exit status: 0 done; 1 refused by a rule (nothing changed) or the audit found offenders; 2 bad usage or configuration; 3 not found; 4 AWS failed (safe to retry); 5 not finished yet (run it again)."
)]
struct Cli {
    /// Work on this deployed CloudFormation stack (the CDK app's, e.g. Atelier-dev): its
    /// outputs name the tables, queue and bucket, so no ATELIER_* variable is needed.
    #[arg(long, global = true, conflicts_with = "tf_output")]
    stack: Option<String>,
    /// Work on the deployment `terraform output -json > FILE` describes.
    #[arg(long, global = true, value_name = "FILE")]
    tf_output: Option<std::path::PathBuf>,
    /// The AWS region [default: the AWS configuration's].
    #[arg(long, global = true)]
    region: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Add credits to a user, once per reason: a rerun with the same amount does nothing and
    /// exits 0; a rerun with another amount is refused (exit 2). The reason is trimmed and
    /// lowercased (`Promo-1` is `promo-1`); the operator is recorded on the ledger row.
    Grant {
        #[arg(long)]
        user: String,
        #[arg(long)]
        credits: u32,
        /// Names the grant: 1-64 of a-z, 0-9 and - _ . : (case and surrounding spaces ignored).
        #[arg(long)]
        reason: String,
        /// Who is granting (recorded on the ledger row); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
        /// Create the account (with its signup grant) if the user has none; without it an
        /// unknown user is refused, so a mistyped --user creates nothing.
        #[arg(long)]
        create: bool,
    },
    /// Check every account: balance == sum of its ledger, and not negative. Exits 1 and lists
    /// the offenders otherwise.
    Audit,
    /// The daily cost breaker: show, halt, resume, set-cap. Without --day a change is
    /// standing (today and every day after, until changed again); with --day it is that
    /// day's only.
    Budget {
        #[command(subcommand)]
        action: BudgetAction,
        /// `YYYY-MM-DD` (UTC, a real date): show or change that day only. Default: today, and
        /// changes are standing.
        #[arg(long, global = true, value_parser = atelier_shared::services::budget::parse_day)]
        day: Option<String>,
    },
    /// Accounts: lift a hold.
    Account {
        #[command(subcommand)]
        action: AccountAction,
    },
    /// Users: support's look-up (balance, in flight, recent jobs and ledger), or deletion
    /// (the same deletion as the user's own `DELETE /v1/account`).
    User {
        #[command(subcommand)]
        action: UserAction,
    },
    /// A job's whole history, or an operator's refund of it.
    Job {
        #[command(subcommand)]
        action: JobAction,
    },
    /// Webhook endpoints (add, rotate, remove, list) and events (deliveries, replay).
    Webhook {
        #[command(subcommand)]
        action: webhook::WebhookAction,
    },
    /// Print the DynamoDB table definitions (JSON) that the infrastructure must match.
    Schema,
    /// Print the environment variables the functions read (JSON).
    EnvNames,
    /// Print the model catalogue (JSON): ids, calls, prices, shutdown dates, the metric names
    /// of the lifecycle and outage alarms; the deployment refuses what it refuses.
    Models,
    /// Print the metric catalogue (JSON): the namespace and every metric name the code emits,
    /// which the infrastructure's alarms and dashboard use.
    Metrics,
    /// Print the CORS rules of the API and the bucket (JSON) that the infrastructure deploys
    /// and the local runner answers with; the allowed origins are a deployment parameter.
    Cors,
}

/// Resolves `--region`, and `--stack` or `--tf-output`, into [`TARGET`].
async fn resolve_target(cli: &Cli) -> anyhow::Result<()> {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(region) = &cli.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    let sdk = loader.load().await;
    let deployed = match (&cli.stack, &cli.tf_output) {
        (Some(stack), _) => deployment::Deployed::from_stack_outputs(
            &deployment::stack_outputs(&sdk, stack).await?,
        )?,
        (None, Some(file)) => deployment::Deployed::from_terraform_file(file)?,
        (None, None) => deployment::Deployed::default(),
    };
    let _ = TARGET.set((sdk, deployed));
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let resolved = match resolve_target(&cli).await {
        Ok(()) => run(cli).await,
        Err(e) => Err(e),
    };
    match resolved {
        Ok(code) => code,
        Err(e) => {
            eprintln!("atelier-admin: {e:#}");
            exit::code_of(&e)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Webhook { action } => webhook::run(&app().await?, action).await,
        Command::Grant {
            user,
            credits,
            reason,
            operator,
            create,
        } => credits::grant(&user, credits, &reason, operator, create).await,
        Command::Audit => credits::run_audit().await,
        Command::Budget { action, day } => budget::budget_command(action, day).await,
        Command::Account {
            action: AccountAction::Release { user, operator },
        } => account::release(&user, operator).await,
        Command::User { action } => user::run(action).await,
        Command::Job { action } => job::run(action).await,
        Command::Schema => print_json(&TABLES),
        Command::Models => {
            print_json(&sorted(atelier_shared::adapters::model::catalogue::export()))
        }
        Command::Metrics => print_json(&sorted(atelier_shared::adapters::metrics::export())),
        Command::Cors => print_json(&atelier_shared::adapters::cors::export()),
        Command::EnvNames => env_names(),
    }
}
