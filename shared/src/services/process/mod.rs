//! Processing one job (docs/design.md, rules 5–9), as named steps over one claimed job ([`Run`]):
//! claim → load → check → edit → composite → review → deliver; a repair runs
//! load → edit → composite → compare → deliver ([`repair_job`]).
//!
//! - The claim is a compare-and-set; the loser does nothing. A claimed job never re-enters a
//!   paid call: every failure after the claim fails the job and refunds it in one
//!   transaction; nothing here retries a paid call.
//! - Every paid call goes through a [`PaidAttempt`] reserved first (check + edit share one,
//!   the review has its own, a repair's edit + compare share one). The run holds the
//!   reservation in force, so whichever step stops the job, its settlement joins the refund.
//! - The readiness check may stop the job with questions before the expensive edit; the
//!   same check answered "not ready" earlier in the UTC day is answered from memory without
//!   a paid call ([`memory`]); the review never passes what it did not see (`not_verified`).
//! - For a brushed area the result is composited over the original through the mask, so every
//!   pixel outside the selection is the original's; leakage is measured for every target with
//!   a known selection.

mod compose;
mod edit_job;
mod fault;
mod inputs;
mod memory;
mod repair_job;
mod setup;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant as Deadline};

pub use fault::Step;
pub use setup::{Providers, TimeBudget, TimeBudgetError};

use super::App;
use super::breaker::{self, Gate};
use super::budget::{self, Billed, PaidAttempt, Refusal, Reservation, ReserveRequest};
use crate::adapters::credentials::Signing;
use crate::adapters::model::{CallKind, ModelClient, ModelError, cost};
use crate::clock::{self, Instant};
use crate::domain::Job;
use crate::domain::breaker::CallOutcome;
use crate::domain::{
    Credits, FailureCode, JobFailure, JobId, JobResult, JobState, Micros, ReviewVerdict,
};
use crate::error::Error;
use crate::store::Joined;
use crate::store::jobs::FinishOutcome;

/// Allowance for the edit prompt's length before the observation is known.
pub(crate) const EDIT_PROMPT_ALLOWANCE_CHARS: usize = 6_000;

/// How processing a message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Unknown job, already claimed, or finished: nothing done.
    NotClaimed,
    Delivered {
        verdict: ReviewVerdict,
    },
    /// Failed and refunded with this code.
    Failed {
        code: FailureCode,
    },
    /// Someone else (the sweeper) finished the job first.
    LostRace,
}

/// Errors that reach the consumer's edge.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Nothing was claimed: the message may be redelivered.
    #[error("before the claim")]
    BeforeClaim(#[source] Error),
    /// The job is claimed and could not be finished (the sweeper fails and refunds it).
    #[error("after the claim")]
    AfterClaim(#[source] Error),
    /// Fault injection: the process "died" here.
    #[cfg(feature = "fault-injection")]
    #[error("simulated crash after {0:?}")]
    Crashed(Step),
}

/// Why a run stopped short of delivery.
enum Stop {
    /// A user-facing failure: fail and refund with it.
    Fail(JobFailure),
    /// Our own error: logged once, then failed and refunded as `INTERNAL_ERROR`.
    Internal(Error),
    #[cfg(feature = "fault-injection")]
    Crash(Step),
}

impl Stop {
    fn fail(code: FailureCode) -> Stop {
        Stop::Fail(JobFailure::new(code))
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Internal(e)
    }
}

/// Processes jobs; built once per process.
#[derive(Clone, Debug)]
pub struct Processor {
    pub app: App,
    pub providers: Providers,
    /// Signs every delivered image's content credentials (C2PA).
    pub signing: Arc<Signing>,
    pub time: TimeBudget,
    /// Tests only: stop (as a crash would) right after this step.
    #[cfg(feature = "fault-injection")]
    pub crash_at: Option<Step>,
}

impl Processor {
    /// A processor with one provider for every call.
    pub fn new(app: App, model: ModelClient, signing: Arc<Signing>) -> Processor {
        Processor::with_providers(app, Providers::single(model), signing)
    }

    pub fn with_providers(app: App, providers: Providers, signing: Arc<Signing>) -> Processor {
        Processor {
            app,
            providers,
            signing,
            time: TimeBudget::default(),
            #[cfg(feature = "fault-injection")]
            crash_at: None,
        }
    }

    /// Cold start: every provider's timeouts fit one job into the consumer's timeout.
    pub fn check_fits(&self, consumer: Duration) -> Result<(), TimeBudgetError> {
        self.providers
            .all()
            .try_for_each(|m| self.time.check_fits(m.config(), consumer))
    }

    /// Processes the job named by a queue message, within the consumer's configured timeout
    /// from now.
    pub async fn process(&self, id: &JobId) -> Result<Outcome, ProcessError> {
        let timeout = Duration::from_secs(self.app.config.limits.consumer_timeout_secs);
        self.process_until(id, Deadline::now() + timeout).await
    }

    /// Processes the job named by a queue message, finishing before `deadline` (the Lambda
    /// invocation's): no paid call starts that could not return in time to deliver.
    pub async fn process_until(
        &self,
        id: &JobId,
        deadline: Deadline,
    ) -> Result<Outcome, ProcessError> {
        let job = match self.app.store.claim(id, &clock::format(clock::now())).await {
            Ok(Some(job)) => job,
            Ok(None) => {
                tracing::info!(job_id = %id, "job_not_claimed");
                return Ok(Outcome::NotClaimed);
            }
            Err(e) => return Err(ProcessError::BeforeClaim(e)),
        };
        tracing::info!(job_id = %id, user_id = %job.user_id, "job_claimed");
        crate::adapters::metrics::claimed(&job.created_at, clock::now());
        let mut run = Run {
            p: self,
            job: &job,
            paid: None,
            deadline,
        };
        let result = match run.steps().await {
            Ok(outcome) => Ok(outcome),
            Err(Stop::Fail(failure)) => run.fail(failure).await,
            Err(Stop::Internal(e)) => {
                tracing::error!(job_id = %id, error = %crate::error::chain(&e), "job_step_failed");
                run.fail(JobFailure::new(FailureCode::InternalError)).await
            }
            #[cfg(feature = "fault-injection")]
            Err(Stop::Crash(step)) => Err(ProcessError::Crashed(step)),
        };
        self.emit_budget_metric().await;
        result
    }

    /// With metrics on: the day's spend and reservations as shares of its cap, for the
    /// 50/80/95 % alarms (one read per job; skipped otherwise).
    async fn emit_budget_metric(&self) {
        if !crate::adapters::metrics::enabled() {
            return;
        }
        let day = budget::day_of(clock::now());
        if let Ok(Some(d)) = self.app.store.get_budget_day(&day).await {
            crate::adapters::metrics::budget(d.used_micros, d.reserved_micros, d.cap_micros);
        }
    }
}

/// A call's cost estimate on `model` (its catalogue row and quality). A Gemini edit sends the
/// mask as one more image, which the estimate does not count: each image's allowance (high
/// fidelity, over 7,000 tokens) is several times the 1,120 tokens Gemini bills for one.
fn estimate_on(
    model: &ModelClient,
    kind: CallKind,
    images: &[(u32, u32)],
    prompt_chars: usize,
) -> Micros {
    cost::estimate_micros(
        model.model(kind),
        images,
        prompt_chars,
        model.config().quality,
    )
}

/// The planned-call name of a call of `kind` on the `i`-th provider of its list, `client`:
/// the kind itself on the first (`edit`), a failover key on a later one (`edit@gemini`).
fn call_key(i: usize, kind: CallKind, client: &ModelClient) -> String {
    match i {
        0 => kind.as_str().to_owned(),
        _ => budget::failover_key(kind, client.model(kind).provider),
    }
}

/// What a call's outcome means to its provider's circuit breaker: only a definite failure
/// counts against it, only an answer for it.
fn breaker_outcome<T>(reply: &Result<T, ModelError>) -> CallOutcome {
    match reply {
        Ok(_) => CallOutcome::Success,
        Err(e) if e.is_definite() => CallOutcome::Definite,
        Err(_) => CallOutcome::Other,
    }
}

/// What a call's estimate is computed from: the sizes of the images it sends and the length
/// of its prompt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sized<'a> {
    pub images: &'a [(u32, u32)],
    pub prompt_chars: usize,
}

impl Processor {}

/// One claimed job on its way to delivery or refund. It holds the reservation in force, so
/// whichever step stops the job, that reservation settles in the refund's transaction.
struct Run<'a> {
    p: &'a Processor,
    job: &'a Job,
    paid: Option<PaidAttempt>,
    deadline: Deadline,
}

/// Crash points ([`fault::Step`]): with fault injection the process "dies" right after one.
impl Run<'_> {
    #[cfg(feature = "fault-injection")]
    pub(super) fn crash(&self, step: Step) -> Result<(), Stop> {
        if self.p.crash_at == Some(step) {
            tracing::warn!(step = ?step, "simulated_crash");
            return Err(Stop::Crash(step));
        }
        Ok(())
    }

    #[cfg(not(feature = "fault-injection"))]
    #[inline(always)]
    pub(super) fn crash(&self, _step: Step) -> Result<(), Stop> {
        Ok(())
    }
}

impl Run<'_> {
    async fn steps(&mut self) -> Result<Outcome, Stop> {
        self.crash(Step::AfterClaim)?;
        match &self.job.repair {
            Some(repair) => self.repair_job(repair).await,
            None => self.edit_job().await,
        }
    }

    /// Reserves the `calls` (each planned at the provider expected to serve it, at its price:
    /// [`Run::planned_at`]); the failure it means when the day's budget (`BUDGET_PAUSED`) or
    /// the owner's share of it (`DAILY_LIMIT_REACHED`) refuses.
    async fn reserve(
        &mut self,
        attempt: &str,
        calls: &[(CallKind, Sized<'_>)],
        sale_credits: Credits,
    ) -> Result<Result<(), FailureCode>, Stop> {
        let mut planned = Vec::new();
        let mut estimate = Micros::ZERO;
        for (kind, sized) in calls {
            let (key, cost) = self.planned_at(*kind, *sized).await;
            planned.push(key);
            estimate = estimate.saturating_add(cost);
        }
        let request = ReserveRequest {
            job: &self.job.job_id,
            user: &self.job.user_id,
            attempt,
            planned: &planned,
            estimate,
            sale_credits,
        };
        match PaidAttempt::reserve(&self.p.app, &request, clock::now()).await? {
            Reservation::Granted(paid) => {
                self.paid = Some(*paid);
                Ok(Ok(()))
            }
            Reservation::Refused(Refusal::Paused) => Ok(Err(FailureCode::BudgetPaused)),
            Reservation::Refused(Refusal::UserShare) => Ok(Err(FailureCode::DailyLimitReached)),
        }
    }

    /// Where a call of `kind` is planned: the first provider of its list whose circuit breaker
    /// would not pass it over now (read, not claimed), so nothing is reserved at an open
    /// provider; the first when every one would. Its planned-call name and estimate there.
    async fn planned_at(&self, kind: CallKind, sized: Sized<'_>) -> (String, Micros) {
        let providers = self.p.providers.of(kind);
        let now = clock::now();
        let mut at = 0;
        for (i, client) in providers.iter().enumerate() {
            // With one provider there is nowhere else to plan: no read.
            if providers.len() == 1
                || !breaker::passes_over(&self.p.app, client.model(kind).provider, now).await
            {
                at = i;
                break;
            }
        }
        let client = providers.get(at).unwrap_or(self.p.providers.first(kind));
        let key = call_key(at, kind, client);
        (
            key,
            estimate_on(client, kind, sized.images, sized.prompt_chars),
        )
    }

    /// The first provider's client for a call of `kind` starting now ([`Run::bounded`]).
    fn model_for(&self, kind: CallKind, then: Duration) -> Option<ModelClient> {
        self.bounded(self.p.providers.first(kind), kind, then)
    }

    /// `model` for a call of `kind` starting now, its timeout cut so that it returns with
    /// `then` (time a later call needs) and the margin still left before the deadline; `None`
    /// when less than the call's least useful time is left.
    fn bounded(&self, model: &ModelClient, kind: CallKind, then: Duration) -> Option<ModelClient> {
        let left = self
            .deadline
            .saturating_duration_since(Deadline::now())
            .saturating_sub(self.p.time.margin)
            .saturating_sub(then);
        if left < self.p.time.least(kind) {
            tracing::warn!(job_id = %self.job.job_id, call = %kind, left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX), "call_out_of_time");
            return None;
        }
        Some(model.within(left))
    }

    /// Makes the paid call of `kind` under the reservation in force (never without one), on
    /// the providers of its kind in order (docs/design.md rule 15): the first as planned; after
    /// a definite failure ([`ModelError::is_definite`]) the next one as a new planned call of
    /// the same attempt, reserved at that provider's price before it is made. A provider whose
    /// circuit breaker is open is passed over without a call or a reservation
    /// ([`breaker::admit`]); when every one is, the call ends as [`ModelError::ProvidersOpen`].
    /// An ambiguous failure, a refused extension or too little time left ends it with the last
    /// error. `first` is the first provider's client as the caller bounded it in time
    /// ([`Run::model_for`]); `ask` makes the call on a client.
    async fn paid_call<T: Billed, F: Future<Output = Result<T, ModelError>>>(
        &mut self,
        kind: CallKind,
        (first, then): (ModelClient, Duration),
        sized: Sized<'_>,
        ask: impl Fn(ModelClient) -> F,
    ) -> Result<Result<T, ModelError>, Stop> {
        let providers = self.p.providers.of(kind);
        let mut last: Option<ModelError> = None;
        for (i, provider) in providers.iter().enumerate() {
            let client = match i {
                0 => first.clone(),
                _ => match self.bounded(provider, kind, then) {
                    Some(client) => client,
                    None => break,
                },
            };
            let model = client.model(kind);
            let gate = breaker::admit(&self.p.app, model.provider, clock::now()).await;
            if gate == Gate::Skip {
                tracing::info!(job_id = %self.job.job_id, call = %kind, provider = %model.provider, "provider_breaker_skipped");
                continue;
            }
            // A call the reservation did not plan at this provider (a failover, or a breaker
            // that changed since) is planned and reserved now, before it is made.
            let key = call_key(i, kind, &client);
            let planned = self.paid.as_ref().is_some_and(|p| p.plans(&key));
            if !planned && !self.extend_for(kind, &key, &client, sized).await? {
                break;
            }
            let Some(paid) = self.paid.as_mut() else {
                return Err(Error::corrupt(format!("{kind} call without a reservation")).into());
            };
            let reply = paid
                .call_as(&self.p.app, kind, &key, model, ask(client.clone()))
                .await?;
            let outcome = breaker_outcome(&reply);
            breaker::record(&self.p.app, model.provider, gate, outcome, clock::now()).await;
            match reply {
                Err(e) if e.is_definite() && i + 1 < providers.len() => last = Some(e),
                done => return Ok(done),
            }
        }
        Ok(Err(last.unwrap_or(ModelError::ProvidersOpen { call: kind })))
    }

    /// Plans the failover call `key` on the attempt in force, reserved at `client`'s price;
    /// `false` when the day or the user's share refuses it (the call is then not made).
    async fn extend_for(
        &mut self,
        kind: CallKind,
        key: &str,
        client: &ModelClient,
        sized: Sized<'_>,
    ) -> Result<bool, Stop> {
        let Some(paid) = self.paid.as_mut() else {
            return Err(Error::corrupt(format!("{kind} call without a reservation")).into());
        };
        let provider = client.model(kind).provider;
        let estimate = estimate_on(client, kind, sized.images, sized.prompt_chars);
        if let Some(refusal) = paid
            .extend(&self.p.app, key, estimate, clock::now())
            .await?
        {
            tracing::warn!(job_id = %self.job.job_id, call = %kind, provider = %provider, refusal = ?refusal, "failover_refused");
            return Ok(false);
        }
        tracing::warn!(job_id = %self.job.job_id, call = %kind, provider = %provider, "failover");
        Ok(true)
    }

    /// Settles the reservation in force on its own (before a later step reserves again).
    async fn settle_now(&mut self) -> Result<(), Stop> {
        if let Some(paid) = self.paid.take() {
            paid.settle(&self.p.app, "consumer").await?;
        }
        Ok(())
    }

    /// The items that settle the reservation in force inside the job's final transaction.
    fn settlement(&mut self, now: Instant) -> Result<Joined, Error> {
        match self.paid.take() {
            Some(paid) => paid.settlement(&self.p.app, "consumer", now),
            None => Ok(Joined::none()),
        }
    }

    /// Delivers `result` (`processing -> succeeded`), settling the reservation in force and
    /// applying `lineage` (a repair's update of its root) in the same transaction.
    async fn deliver(
        &mut self,
        result: JobResult,
        lineage: Option<Joined>,
    ) -> Result<Outcome, Stop> {
        let now = clock::now();
        let items = self.settlement(now)?.and(lineage.unwrap_or_default());
        let verdict = result.review.verdict;
        let store = &self.p.app.store;
        match store
            .deliver(self.job, &result, &clock::format(now), items)
            .await?
        {
            FinishOutcome::Done => {
                let comparison = result.comparison.as_ref().map(|c| c.outcome);
                tracing::info!(job_id = %self.job.job_id, verdict = ?verdict, comparison = ?comparison, retained_previous = result.retained_previous, "job_delivered");
                crate::adapters::metrics::delivered(&self.job.created_at, now);
                Ok(Outcome::Delivered { verdict })
            }
            FinishOutcome::NotInState => {
                tracing::warn!(job_id = %self.job.job_id, "job_finished_elsewhere");
                Ok(Outcome::LostRace)
            }
        }
    }

    /// Fails and refunds, settling the reservation in force in the same transaction.
    async fn fail(&mut self, failure: JobFailure) -> Result<Outcome, ProcessError> {
        let now = clock::now();
        let items = self.settlement(now).map_err(ProcessError::AfterClaim)?;
        let store = &self.p.app.store;
        let finished = store
            .fail_and_refund(
                self.job,
                JobState::Processing,
                &failure,
                &clock::format(now),
                items,
            )
            .await
            .map_err(ProcessError::AfterClaim)?;
        match finished {
            FinishOutcome::Done => {
                tracing::info!(job_id = %self.job.job_id, code = %failure.code, credits = self.job.credits.get(), "job_failed_refunded");
                crate::adapters::metrics::failed_and_refunded(
                    failure.code,
                    crate::adapters::metrics::RefundSource::Consumer,
                    self.job.credits,
                );
                Ok(Outcome::Failed { code: failure.code })
            }
            FinishOutcome::NotInState => {
                tracing::warn!(job_id = %self.job.job_id, "job_finished_elsewhere");
                Ok(Outcome::LostRace)
            }
        }
    }
}
