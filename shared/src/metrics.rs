//! CloudWatch metrics as Embedded Metric Format: one JSON object on its own stdout line,
//! which CloudWatch Logs turns into a metric (no API call, no IAM permission). Emitted only
//! inside Lambda (where the function name is known); elsewhere it is a no-op.

use serde_json::json;

/// Namespace of every Atelier metric (the infrastructure's alarms watch these names).
pub const NAMESPACE: &str = "Atelier";
/// Sweeper: jobs found stuck in `processing` (and failed and refunded) by one sweep.
pub const JOBS_STUCK: &str = "JobsStuck";
/// Sweeper: refunds one sweep owed (dispatch limit, stuck job) and could not make.
pub const REFUNDS_FAILED: &str = "RefundsFailed";
/// Consumer: the UTC day's `used + reserved` as an integer percent of the cap.
pub const BUDGET_USED_PERCENT: &str = "BudgetUsedPercent";

/// Emits one metric value, dimensioned by the function's name.
pub fn emit(name: &str, unit: &str, value: i64) {
    let Some(function) = crate::config::lambda_function_name() else {
        return;
    };
    let line = json!({
        "_aws": {
            "Timestamp": crate::clock::now().unix_timestamp() * 1000,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["FunctionName"]],
                "Metrics": [{ "Name": name, "Unit": unit }],
            }],
        },
        "FunctionName": function,
        name: value,
    });
    println!("{line}");
}

/// Whether metrics are emitted here (inside Lambda).
pub fn enabled() -> bool {
    crate::config::lambda_function_name().is_some()
}

/// `used + reserved` as a percent of `cap` (100 when the cap is zero).
pub fn used_percent(used: i64, reserved: i64, cap: i64) -> i64 {
    if cap <= 0 {
        100
    } else {
        (used.saturating_add(reserved)).saturating_mul(100) / cap
    }
}
