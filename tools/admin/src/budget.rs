//! `budget …`: the daily cost breaker and the users' shares of a day's spend.

use std::process::ExitCode;

use anyhow::{anyhow, bail};
use atelier_shared::config::{AdminSettings, env};
use atelier_shared::domain::{Micros, Operator, UserId};
use atelier_shared::services::{App, budget, user_share};
use atelier_shared::store::user_share::ShareChange;
use clap::Subcommand;

use crate::target::app;

#[derive(Subcommand)]
pub enum BudgetAction {
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

/// `budget …`: changes the day (or the standing setting), then shows it.
pub async fn budget_command(action: BudgetAction, day: Option<String>) -> anyhow::Result<ExitCode> {
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
