//! `atelier-admin`: operator commands on the same tables the functions use. The endpoint and
//! table names come from the environment, so it works against the local stack and AWS alike.

use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::{AdminSettings, Config, env};
use atelier_shared::domain::Micros;
use atelier_shared::domain::{Credits, GrantReason, JobId, Operator, UserId};
use atelier_shared::services::accounts::{GrantRequest, GrantResult};
use atelier_shared::services::privacy::{AccountDeletion, DeletedBy};
use atelier_shared::services::support::{self, RefundResult};
use atelier_shared::services::{App, accounts, audit, budget, privacy, user_share};
use atelier_shared::store::payments::ReleaseOutcome;
use atelier_shared::store::schema::TABLES;
use atelier_shared::store::user_share::ShareChange;
use clap::{Parser, Subcommand};

mod deployment;
mod exit;
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
        #[arg(long, global = true, value_parser = budget::parse_day)]
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

#[derive(Subcommand)]
enum AccountAction {
    /// Lift the hold a refunded or disputed purchase put on the account (its shortfall stays
    /// on the ledger row); new edits are accepted again. Exits 0 when there was no hold.
    Release {
        user: String,
        /// Who releases (recorded on the account); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
    },
}

#[derive(Subcommand)]
enum UserAction {
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

#[derive(Subcommand)]
enum JobAction {
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

#[derive(Subcommand)]
enum BudgetAction {
    /// Cap, used, reserved and headroom (micro-dollars), whether the day is halted, and the
    /// standing setting new days inherit.
    Show,
    /// Stop every paid call at once, until `resume` (with --day: that day only).
    Halt,
    /// Allow paid calls again (with --day: that day's own halt only; a standing halt stays).
    Resume,
    /// Change the cap, in micro-dollars (1 dollar = 1000000): today's and every later day's,
    /// or with --day that day's only.
    SetCap { micros: i64 },
    /// One user's share of each day's spend, in micro-dollars (a trusted account): today's
    /// and every later day's, until changed; `--clear` returns the user to the default.
    /// The operator is recorded on the override.
    Share {
        user: String,
        /// The new share (omit with --clear).
        micros: Option<i64>,
        #[arg(long, conflicts_with = "micros")]
        clear: bool,
        /// Who is changing it (recorded); default: $ATELIER_OPERATOR.
        #[arg(long)]
        operator: Option<String>,
    },
}

/// How many of the day's top spenders `budget show` lists.
const TOP_SPENDERS: u16 = 10;

/// `budget share`: sets or clears one user's override and prints the setting.
async fn share(
    app: &App,
    user: String,
    micros: Option<i64>,
    clear: bool,
    operator: Option<String>,
) -> anyhow::Result<ExitCode> {
    let Some(user) = UserId::parse(&user) else {
        bail!("USER is not a valid user id")
    };
    let change = match (micros, clear) {
        (_, true) => ShareChange::Clear {
            default: app.config.limits.user_daily_share_micros,
        },
        (Some(m), false) if m > 0 => {
            let Some(operator) = operator.or(AdminSettings::from_env().operator) else {
                bail!(
                    "name the operator with --operator or {}: it is recorded on the override",
                    env::OPERATOR
                )
            };
            let operator = Operator::parse(&operator).map_err(|e| anyhow!("--operator {e}"))?;
            ShareChange::Set {
                share: Micros::new(m),
                operator: operator.as_str().to_owned(),
            }
        }
        (Some(_), false) => bail!("the share must be positive (use --clear for the default)"),
        (None, false) => bail!("give the share in micro-dollars, or --clear"),
    };
    let setting = user_share::change(app, &user, &change).await?;
    println!("{}", serde_json::to_string_pretty(&setting)?);
    Ok(ExitCode::SUCCESS)
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

/// `--operator`, else `$ATELIER_OPERATOR`: who did it is always recorded.
fn operator_from(flag: Option<String>) -> anyhow::Result<Operator> {
    let Some(operator) = flag.or(AdminSettings::from_env().operator) else {
        bail!(
            "name the operator with --operator or {}: it is recorded",
            env::OPERATOR
        )
    };
    Operator::parse(&operator).map_err(|e| anyhow!("--operator {e}"))
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

/// Where the commands work: the AWS configuration and the deployment's names (set once, in
/// `main`, before any command runs).
static TARGET: std::sync::OnceLock<(aws_config::SdkConfig, deployment::Deployed)> =
    std::sync::OnceLock::new();

async fn app() -> anyhow::Result<App> {
    let Some((sdk, deployed)) = TARGET.get() else {
        bail!("the deployment was not resolved")
    };
    let config = Config::from_lookup(|k| deployed.get(k)).context("reading configuration")?;
    Ok(App::new(config, &Clients::new(sdk)))
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
        } => grant(&user, credits, &reason, operator, create).await,
        Command::Audit => run_audit().await,
        Command::Budget { action, day } => budget_command(action, day).await,
        Command::Account {
            action: AccountAction::Release { user, operator },
        } => release(&user, operator).await,
        Command::User {
            action:
                UserAction::Delete {
                    user,
                    yes,
                    operator,
                    wait,
                },
        } => {
            let user = user_arg(&user)?;
            let by = DeletedBy::Operator(operator_from(operator)?);
            confirm_deletion(&user, yes)?;
            delete_user(&app().await?, &user, &by, wait).await
        }
        Command::User {
            action: UserAction::Show { user, recent },
        } => {
            let user = user_arg(&user)?;
            let Some(view) = support::user(&app().await?, &user, recent).await? else {
                return Err(exit::not_found(format!("no account for {user}")));
            };
            print_json(&view)
        }
        Command::Job {
            action: JobAction::Show { id },
        } => {
            let id = job_id(&id)?;
            let Some(history) = support::job(&app().await?, &id).await? else {
                return Err(exit::not_found(format!("no job {id}")));
            };
            print_json(&history)
        }
        Command::Job {
            action:
                JobAction::Refund {
                    id,
                    reason,
                    operator,
                    force,
                },
        } => {
            let id = job_id(&id)?;
            let req = support::RefundRequest {
                reason: GrantReason::parse(&reason).map_err(|e| anyhow!("--reason {e}"))?,
                operator: operator_from(operator)?,
                force,
            };
            refund(&app().await?, &id, &req).await
        }
        Command::Schema => print_json(&TABLES),
        Command::Models => {
            print_json(&sorted(atelier_shared::adapters::model::catalogue::export()))
        }
        Command::Metrics => print_json(&sorted(atelier_shared::adapters::metrics::export())),
        Command::Cors => print_json(&atelier_shared::adapters::cors::export()),
        Command::EnvNames => env_names(),
    }
}

/// Prints `value` as indented JSON; exit 0.
fn print_json(value: &impl serde::Serialize) -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(ExitCode::SUCCESS)
}

/// `value` with every object's keys in sorted order, whether or not a crate of the build turned
/// on serde_json's `preserve_order` (which keeps insertion order): the infrastructure's drift
/// guard compares the text.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.into_iter().map(|(k, v)| (k, sorted(v))).collect()
        }
        serde_json::Value::Array(items) => items.into_iter().map(sorted).collect(),
        other => other,
    }
}

/// A positional USER argument.
fn user_arg(user: &str) -> anyhow::Result<UserId> {
    UserId::parse(user).ok_or_else(|| anyhow!("USER is not a valid user id"))
}

/// `grant`: once per reason; a rerun with another amount is refused.
async fn grant(
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
async fn run_audit() -> anyhow::Result<ExitCode> {
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

/// `budget …`: changes the day (or the standing setting), then shows it.
async fn budget_command(action: BudgetAction, day: Option<String>) -> anyhow::Result<ExitCode> {
    if let BudgetAction::SetCap { micros } = action
        && micros < 0
    {
        bail!("the cap cannot be negative");
    }
    let app = app().await?;
    let scope = match day {
        Some(day) => budget::Scope::Day(day),
        None => budget::Scope::Standing {
            today: budget::day_of(atelier_shared::clock::now()),
        },
    };
    let item = match action {
        BudgetAction::Show => budget::day(&app, scope.day()).await?,
        BudgetAction::Halt => budget::set_halted(&app, &scope, true).await?,
        BudgetAction::Resume => budget::set_halted(&app, &scope, false).await?,
        BudgetAction::SetCap { micros } => {
            budget::set_cap(&app, &scope, atelier_shared::domain::Micros::new(micros)).await?
        }
        BudgetAction::Share {
            user,
            micros,
            clear,
            operator,
        } => {
            if matches!(scope, budget::Scope::Day(_)) {
                bail!("a user's share is standing (today and after); --day does not apply");
            }
            return share(&app, user, micros, clear, operator).await;
        }
    };
    let standing = budget::standing(&app).await?;
    let top = user_share::top_spenders(&app, &item.day, TOP_SPENDERS).await?;
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "day": item.day, "halted": item.halted, "cap_micros": item.cap_micros,
            "used_micros": item.used_micros, "reserved_micros": item.reserved_micros,
            "headroom_micros": item.headroom_micros,
            "usd": {
                "cap": item.cap_micros.dollars(),
                "used": item.used_micros.dollars(),
                "reserved": item.reserved_micros.dollars(),
                "headroom": item.headroom_micros.dollars(),
            },
            "standing": standing,
            "user_share_default_micros": app.config.limits.user_daily_share_micros,
            "top_spenders": top,
        }))?
    );
    if standing.halted && !item.halted {
        eprintln!(
            "note: the standing halt is on, so paid calls stay refused on {}; `budget resume` without --day lifts it",
            item.day
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `account release`: lifts a payment dispute's hold.
async fn release(user: &str, operator: Option<String>) -> anyhow::Result<ExitCode> {
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

/// `env-names`: every environment variable the code reads.
fn env_names() -> anyhow::Result<ExitCode> {
    // A struct, not a JSON map: its field order does not depend on serde_json's
    // `preserve_order` (the infrastructure's drift guard compares the text).
    #[derive(serde::Serialize)]
    struct EnvName {
        description: &'static str,
        name: &'static str,
        required: bool,
    }
    let names: Vec<EnvName> = env::ALL
        .iter()
        .map(|v| EnvName {
            description: v.description,
            name: v.name,
            required: v.required,
        })
        .collect();
    print_json(&names)
}
