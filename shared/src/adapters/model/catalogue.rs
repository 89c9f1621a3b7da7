//! The catalogue's outside faces: the daily lifecycle check that records the days to the
//! nearest shutdown as a metric, and the export the deployment reads. The rows themselves
//! are data in [`crate::domain::catalogue`], re-exported here.

use time::Date;

pub use crate::domain::catalogue::*;

/// The daily lifecycle check (the sweeper's daily task): logs each configured model's days to
/// its shutdown and records the nearest as [`crate::adapters::metrics::Metric::ModelDaysToShutdown`],
/// which alarms [`SHUTDOWN_WARNING_DAYS`] before.
pub fn check_lifecycle(ids: &[String], today: Date) -> i64 {
    for id in ids {
        let days = find(id).map(|m| m.days_to_shutdown(today));
        match days {
            Some(Some(d)) if d <= SHUTDOWN_WARNING_DAYS => {
                tracing::warn!(model = %id, days_to_shutdown = d, "model_shutdown_near");
            }
            Some(d) => tracing::info!(model = %id, days_to_shutdown = d, "model_lifecycle"),
            None => tracing::error!(model = %id, "model_not_catalogued"),
        }
    }
    let days = nearest_shutdown(ids.iter().map(String::as_str), today)
        .unwrap_or(crate::adapters::metrics::NO_SHUTDOWN_DAYS);
    crate::adapters::metrics::model_days_to_shutdown(days);
    days
}

/// What the deployment reads (`atelier-admin models`): every row with its shutdown date, so
/// CDK and Terraform refuse the same models the cold start refuses.
pub fn export() -> serde_json::Value {
    let rows: Vec<serde_json::Value> = CATALOGUE
        .iter()
        .map(|m| {
            serde_json::json!({
                "provider": m.provider.as_str(),
                "id": m.id,
                "serves": m.serves,
                "shutdown": m.shutdown.map(|d| d.to_string()),
                "prices": {
                    "version": m.prices.version,
                    "as_of": m.prices.as_of.to_string(),
                    "rates": m.prices.rates,
                },
            })
        })
        .collect();
    serde_json::json!({
        "defaults": { "image": DEFAULT_IMAGE_MODEL, "vision": DEFAULT_VISION_MODEL },
        "shutdown_warning_days": SHUTDOWN_WARNING_DAYS,
        "metrics": {
            "namespace": crate::adapters::metrics::NAMESPACE,
            "days_to_shutdown": crate::adapters::metrics::Metric::ModelDaysToShutdown.name(),
            "model_unavailable": crate::adapters::metrics::Metric::ModelUnavailable.name(),
            "provider_breaker": crate::adapters::metrics::Metric::ProviderBreaker.name(),
            "no_shutdown_days": crate::adapters::metrics::NO_SHUTDOWN_DAYS,
        },
        "providers": Provider::ALL.map(Provider::as_str),
        "models": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    const TODAY: Date = date!(2026 - 12 - 01);

    #[test]
    fn the_lifecycle_check_counts_the_days_to_the_nearest_shutdown() {
        let ids = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let cases: [(&str, Vec<String>, i64); 4] = [
            (
                "the defaults: none announced",
                ids(&[DEFAULT_IMAGE_MODEL, DEFAULT_VISION_MODEL]),
                crate::adapters::metrics::NO_SHUTDOWN_DAYS,
            ),
            (
                "gpt-4.1-mini: 44 days",
                ids(&[DEFAULT_IMAGE_MODEL, "gpt-4.1-mini"]),
                44,
            ),
            (
                "gpt-image-1: past",
                ids(&["gpt-image-1", "gpt-4.1-mini"]),
                -39,
            ),
            ("unknown: now", ids(&["gpt-image-9"]), 0),
        ];
        for (why, configured, want) in cases {
            assert_eq!(check_lifecycle(&configured, TODAY), want, "{why}");
        }
    }

    #[test]
    fn the_export_lists_every_row_with_its_shutdown() {
        let out = export();
        let rows = out["models"].as_array().expect("rows");
        assert_eq!(rows.len(), CATALOGUE.len());
        let old = rows.iter().find(|r| r["id"] == "gpt-image-1").expect("row");
        assert_eq!(old["shutdown"], "2026-10-23");
        assert_eq!(old["serves"], "edit");
        assert_eq!(out["defaults"]["image"], DEFAULT_IMAGE_MODEL);
    }
}
