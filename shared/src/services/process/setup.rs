//! What a processor is built from: how a job spends its invocation's time, and the model
//! providers per call kind, in failover order.

use std::time::Duration;

use crate::adapters::model::{CallKind, ModelClient, ModelConfig};

/// How a job spends its invocation's time (rule: no paid result is lost to the function's
/// own timeout). A paid call starts only with at least its least useful time left before the
/// deadline less `margin`, and its timeout is cut to what is left, so it returns in time for
/// the result to be stored and delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeBudget {
    /// Kept after the last paid call: storing the result and the delivering transaction.
    pub margin: Duration,
    /// Least time worth starting a vision call (check, review, comparison) with.
    pub least_vision: Duration,
    /// Least time worth starting an edit with.
    pub least_edit: Duration,
}

impl Default for TimeBudget {
    fn default() -> TimeBudget {
        TimeBudget {
            margin: Duration::from_secs(30),
            least_vision: Duration::from_secs(10),
            least_edit: Duration::from_secs(60),
        }
    }
}

/// The model's timeouts cannot fit one job into the consumer's timeout.
#[derive(Debug, thiserror::Error)]
#[error(
    "a job's calls at their timeouts (check {check:?}, edit {edit:?}, review {review:?}) plus {margin:?} to deliver exceed the consumer timeout {consumer:?}"
)]
pub struct TimeBudgetError {
    pub check: Duration,
    pub edit: Duration,
    pub review: Duration,
    pub margin: Duration,
    pub consumer: Duration,
}

impl TimeBudget {
    /// Cold start: a job's check, edit and review at their configured timeouts, plus the
    /// margin, fit in the consumer's timeout, so a healthy job is never cut short.
    pub fn check_fits(
        &self,
        model: &ModelConfig,
        consumer: Duration,
    ) -> Result<(), TimeBudgetError> {
        let needed = model.vision_timeout * 2 + model.edit_timeout + self.margin;
        if needed <= consumer {
            return Ok(());
        }
        Err(TimeBudgetError {
            check: model.vision_timeout,
            edit: model.edit_timeout,
            review: model.vision_timeout,
            margin: self.margin,
            consumer,
        })
    }

    pub(super) fn least(&self, kind: CallKind) -> Duration {
        match kind {
            CallKind::Edit => self.least_edit,
            CallKind::Check | CallKind::Review | CallKind::Compare => self.least_vision,
        }
    }
}

/// The model providers of a deployment per call kind, in order (`ATELIER_EDIT_PROVIDERS`,
/// `ATELIER_VISION_PROVIDERS`): the first serves every call; the next ones only after a
/// definite failure of the one before (docs/design.md rule 15). Never empty.
#[derive(Clone, Debug)]
pub struct Providers {
    edit: Vec<ModelClient>,
    vision: Vec<ModelClient>,
}

impl Providers {
    /// One provider for every call (today's deployment).
    pub fn single(model: ModelClient) -> Providers {
        Providers {
            edit: vec![model.clone()],
            vision: vec![model],
        }
    }

    /// Ordered lists for the edit and for the vision calls; `None` when either is empty.
    pub fn new(edit: Vec<ModelClient>, vision: Vec<ModelClient>) -> Option<Providers> {
        (!edit.is_empty() && !vision.is_empty()).then_some(Providers { edit, vision })
    }

    /// The providers of a call kind, in order.
    pub fn of(&self, kind: CallKind) -> &[ModelClient] {
        match kind {
            CallKind::Edit => &self.edit,
            CallKind::Check | CallKind::Review | CallKind::Compare => &self.vision,
        }
    }

    /// The provider that serves a call kind first.
    pub fn first(&self, kind: CallKind) -> &ModelClient {
        let list = self.of(kind);
        // Never empty by construction.
        &list[0]
    }

    /// Every client (for checks that hold for each, like the time budget).
    pub fn all(&self) -> impl Iterator<Item = &ModelClient> {
        self.edit.iter().chain(&self.vision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_model_timeouts_fit_one_job_into_the_consumers_300_s() {
        let model = ModelConfig::new("http://127.0.0.1:1");
        let fits = TimeBudget::default().check_fits(&model, Duration::from_secs(300));
        assert!(fits.is_ok(), "{fits:?}");
    }

    #[test]
    fn model_timeouts_that_cannot_fit_one_job_are_refused_at_cold_start() {
        let mut model = ModelConfig::new("http://127.0.0.1:1");
        model.vision_timeout = Duration::from_secs(60);
        let refused = TimeBudget::default().check_fits(&model, Duration::from_secs(300));
        let message = refused
            .map_err(|e| e.to_string())
            .expect_err("330 s > 300 s");
        assert!(message.contains("exceed the consumer timeout"), "{message}");
    }
}
