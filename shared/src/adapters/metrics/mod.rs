//! Every metric Atelier emits, in one place: CloudWatch Embedded Metric Format (one JSON
//! document per dimension set on its own stdout line, which CloudWatch Logs turns into
//! metrics: no API call, no IAM permission), written by `metrics_cloudwatch_embedded` behind
//! the `metrics` facade.
//!
//! Each fact has one function here, called where the fact is decided (a job finished, a model
//! call returned, a refusal answered), once. Dimensions are low-cardinality by construction:
//! they come from closed catalogues (outcome, [`FailureCode`], [`CallKind`], problem codes),
//! never a user or job id. Every document also carries `FunctionName` (the collector's default
//! dimension), so alarms name the function.
//!
//! Nothing is emitted until [`install`] has run (each function's `main.rs`, inside Lambda);
//! elsewhere the facade's calls are no-ops. [`flush`] writes what one invocation recorded.

mod names;
mod record;

pub use names::*;
pub use record::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FailureCode;
    use metrics::Unit;

    #[test]
    fn metric_names_are_unique_and_every_dimension_key_is_a_catalogued_one() {
        let names: std::collections::HashSet<_> = Metric::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Metric::ALL.len());
        let keys = [
            dim::OUTCOME,
            dim::FAILURE_CODE,
            dim::CALL_KIND,
            dim::CALL_OUTCOME,
            dim::REFUND_SOURCE,
            dim::STATUS,
            dim::CODE,
            dim::ACTION,
            dim::EVENT_NAME,
            dim::PACK,
            dim::CURRENCY,
            dim::ENDPOINT,
            dim::PLATFORM,
            dim::PROVIDER,
            dim::TRANSITION,
            dim::OPERATION,
            dim::SOURCE,
        ];
        for m in Metric::ALL {
            for d in m.dimensions() {
                assert!(
                    keys.contains(d),
                    "{} has an unknown dimension {d}",
                    m.name()
                );
                assert_ne!(
                    *d,
                    dim::FUNCTION_NAME,
                    "FunctionName is the default dimension"
                );
            }
        }
    }

    #[test]
    fn no_metric_is_dimensioned_by_a_user_or_job() {
        for m in Metric::ALL {
            for d in m.dimensions() {
                let d = d.to_ascii_lowercase();
                assert!(
                    !d.contains("user") && !d.contains("job"),
                    "{}: {d}",
                    m.name()
                );
            }
        }
    }

    #[test]
    fn a_job_end_names_its_outcome_and_code() {
        let cases = [
            (JobEnd::Delivered, ("delivered", "NONE")),
            (
                JobEnd::Failed(FailureCode::EditFailed),
                ("failed", "EDIT_FAILED"),
            ),
            (
                JobEnd::Failed(FailureCode::CheckFailed),
                ("failed", "CHECK_FAILED"),
            ),
            (
                JobEnd::Failed(FailureCode::Canceled),
                ("canceled", "CANCELED"),
            ),
        ];
        for (end, want) in cases {
            assert_eq!(end.dimensions(), want, "{end:?}");
        }
    }

    #[test]
    fn timings_are_milliseconds_budget_shares_percent_the_rest_counts() {
        assert_eq!(Metric::QueueWait.unit(), Unit::Milliseconds);
        assert_eq!(Metric::ModelCallLatency.unit(), Unit::Milliseconds);
        assert_eq!(Metric::BudgetReservedPercent.unit(), Unit::Percent);
        assert_eq!(Metric::JobsFinished.unit(), Unit::Count);
    }

    #[test]
    fn the_share_of_a_zero_cap_is_full() {
        assert_eq!(percent_of(50, 200), 25.0);
        assert_eq!(percent_of(0, 0), 100.0);
        assert_eq!(percent_of(300, 200), 150.0);
    }
}
