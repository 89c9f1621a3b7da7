//! What the command groups share: the USER and `--operator` arguments, and JSON output.

use std::process::ExitCode;

use anyhow::{anyhow, bail};
use atelier_shared::config::{AdminSettings, env};
use atelier_shared::domain::{Operator, UserId};

/// `--operator`, else `$ATELIER_OPERATOR`: who did it is always recorded.
pub fn operator_from(flag: Option<String>) -> anyhow::Result<Operator> {
    let Some(operator) = flag.or(AdminSettings::from_env().operator) else {
        bail!(
            "name the operator with --operator or {}: it is recorded",
            env::OPERATOR
        )
    };
    Operator::parse(&operator).map_err(|e| anyhow!("--operator {e}"))
}

/// Prints `value` as indented JSON; exit 0.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(ExitCode::SUCCESS)
}

/// A positional USER argument.
pub fn user_arg(user: &str) -> anyhow::Result<UserId> {
    UserId::parse(user).ok_or_else(|| anyhow!("USER is not a valid user id"))
}
