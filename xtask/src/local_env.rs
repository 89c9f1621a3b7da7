//! The environment of a local run's processes: credentials, endpoint and resource names.

use std::path::Path;

use crate::workspace::root;

const API_PORT: u16 = 8787;

/// The environment every local process gets: dummy credentials (or the SDK falls through to
/// instance metadata), the endpoint, and the resource names for `prefix`.
pub(crate) fn local_env(port: u16, prefix: &str) -> Vec<(String, String)> {
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut env = vec![
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ENDPOINT_URL".into(), endpoint.clone()),
        (
            "ATELIER_ACCOUNTS_TABLE".into(),
            format!("{prefix}-accounts"),
        ),
        ("ATELIER_LEDGER_TABLE".into(), format!("{prefix}-ledger")),
        ("ATELIER_JOBS_TABLE".into(), format!("{prefix}-jobs")),
        ("ATELIER_BUDGET_TABLE".into(), format!("{prefix}-budget")),
        (
            "ATELIER_ATTEMPTS_TABLE".into(),
            format!("{prefix}-attempts"),
        ),
        ("ATELIER_QUOTAS_TABLE".into(), format!("{prefix}-quotas")),
        (
            "ATELIER_PAYMENTS_TABLE".into(),
            format!("{prefix}-payments"),
        ),
        ("ATELIER_SIGNUPS_TABLE".into(), format!("{prefix}-signups")),
        (
            "ATELIER_WEBHOOKS_TABLE".into(),
            format!("{prefix}-webhooks"),
        ),
        // The key of the signup grant's address hashes: a local value (a deployment reads
        // its own from Secrets Manager, ATELIER_ADDRESS_KEY_SECRET_ID).
        (
            "ATELIER_ADDRESS_KEY".into(),
            "atelier-local-address-key-not-a-secret".into(),
        ),
        (
            "ATELIER_QUEUE_URL".into(),
            format!("{endpoint}/000000000000/{prefix}-jobs"),
        ),
        (
            "ATELIER_WEBHOOK_QUEUE_URL".into(),
            format!("{endpoint}/000000000000/{prefix}-webhooks"),
        ),
        ("ATELIER_BUCKET".into(), format!("{prefix}-assets")),
        (
            "ATELIER_STATE_DIR".into(),
            root().join(".atelier").display().to_string(),
        ),
        ("ATELIER_LOCAL_PORT".into(), API_PORT.to_string()),
        // Local runs' webhook receivers are on this machine; a deployment refuses them.
        ("ATELIER_WEBHOOK_PRIVATE_ADDRESSES".into(), "allow".into()),
    ];
    if prefix == "atelier-test" {
        // Tests share one UTC day: the cap must not be what stops them (the budget tests
        // use stacks of their own with small caps).
        env.push(("ATELIER_DAILY_CAP_MICROS".into(), "1000000000000".into()));
    }
    if std::env::var_os("AWS_LAMBDA_LOG_FORMAT").is_none() {
        env.push(("AWS_LAMBDA_LOG_FORMAT".into(), "Text".into()));
    }
    env
}

/// [`local_env`] for a private stack of one command (fuzz, web tests): the API on `api_port`,
/// the stand-in model on `model_port` as the model, and state in `state`.
pub(crate) fn private_stack_env(
    aws_port: u16,
    prefix: &str,
    api_port: u16,
    model_port: u16,
    state: &Path,
) -> Vec<(String, String)> {
    let mut env = local_env(aws_port, prefix);
    env.retain(|(k, _)| k != "ATELIER_LOCAL_PORT" && k != "ATELIER_STATE_DIR");
    env.extend([
        ("ATELIER_LOCAL_PORT".to_owned(), api_port.to_string()),
        (
            "ATELIER_MODEL_BASE_URL".to_owned(),
            format!("http://127.0.0.1:{model_port}"),
        ),
        ("ATELIER_STATE_DIR".to_owned(), state.display().to_string()),
    ]);
    env
}
