//! The daily cost breaker (rule 8). Every paid call is covered by a reservation made before
//! it; the day refuses when halted or when the estimate does not fit under the cap. After the
//! calls, the reservation settles at the real cost; an unknown cost keeps the reservation
//! booked, so the budget errs on the side of caution. [`PaidAttempt`] is the one way to make
//! a paid call.

use super::App;
use crate::adapters::model::catalogue::Model;
use crate::adapters::model::{Billing, CallKind, EditReply, ModelError, Usage, VisionReply, cost};
use crate::clock::{self, Instant};
use crate::domain::{Credits, JobId, Micros, UserId};
use crate::error::Error;
use crate::store::Joined;
use crate::store::budget::{ReserveOutcome, SettleOutcome};
use crate::store::schema::{AttemptItem, BudgetDayItem, BudgetStandingItem, CallRecord};

pub use crate::clock::day_of;

use crate::clock::format_day;

/// A day key as an operator types it: exactly `YYYY-MM-DD` and a date that exists
/// (`2026-1-5`, `2026-02-30` and `standing` are refused).
pub fn parse_day(text: &str) -> Result<String, String> {
    let refuse = || format!("{text:?} is not a day: expected a real date as YYYY-MM-DD (UTC)");
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(refuse());
    };
    let digits = |p: &str, len: usize| p.len() == len && p.bytes().all(|b| b.is_ascii_digit());
    if !(digits(y, 4) && digits(m, 2) && digits(d, 2)) {
        return Err(refuse());
    }
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<i32>(), m.parse::<u8>(), d.parse::<u8>()) else {
        return Err(refuse());
    };
    let month = time::Month::try_from(m).map_err(|_| refuse())?;
    let date = time::Date::from_calendar_date(y, month, d).map_err(|_| refuse())?;
    Ok(format_day(date))
}

/// The operator's standing setting, as new days inherit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Standing {
    /// Halted until `resume`, whatever the day.
    pub halted: bool,
    /// The cap each new day starts with: the operator's (`set-cap`), else the configured default.
    pub cap_micros: Micros,
    /// Whether `cap_micros` is the operator's rather than the configured default.
    pub cap_set_by_operator: bool,
}

/// Reads the standing setting.
pub async fn standing(app: &App) -> Result<Standing, Error> {
    let item: Option<BudgetStandingItem> = app.store.get_budget_standing().await?;
    let cap = item.as_ref().and_then(|i| i.cap_micros);
    Ok(Standing {
        halted: item.as_ref().is_some_and(|i| i.halted),
        cap_micros: cap.unwrap_or(app.config.limits.daily_cap_micros),
        cap_set_by_operator: cap.is_some(),
    })
}

/// Creates the day's item if missing, from the standing setting (its cap and its halt).
async fn create_day(app: &App, day: &str, stamp: &str) -> Result<(), Error> {
    let s = standing(app).await?;
    app.store
        .create_budget_day(day, s.cap_micros, s.halted, stamp)
        .await
}

/// The outcome of asking for a reservation.
#[derive(Debug)]
pub enum Reservation {
    Granted(Box<PaidAttempt>),
    /// The caller does not make the call.
    Refused(Refusal),
}

/// Why a reservation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The day is halted, or the estimate does not fit under the day's cap (or the step is
    /// already reserved): everyone's edits are paused.
    Paused,
    /// The estimate does not fit in the user's own share of the day (rule 12).
    UserShare,
}

/// What to reserve.
#[derive(Debug, Clone)]
pub struct ReserveRequest<'a> {
    pub job: &'a JobId,
    /// The job's owner: the reservation also counts against their share of the day.
    pub user: &'a UserId,
    /// Unique per job, e.g. `01-check-edit`: a second reservation of the same name is refused,
    /// so a step that runs twice cannot pay twice.
    pub attempt: &'a str,
    /// Calls covered, in order, by planned-call name (`check`, or `check@gemini` for a call
    /// planned at a later provider, [`failover_key`]). Only these can be made through the
    /// attempt without extending it first.
    pub planned: &'a [String],
    pub estimate: Micros,
    /// Credits sold with this attempt (the job's price on its first attempt, else 0).
    pub sale_credits: Credits,
}

/// A model reply that says what the call used.
pub trait Billed {
    fn usage(&self) -> Option<&Usage>;
}

impl Billed for EditReply {
    fn usage(&self) -> Option<&Usage> {
        self.usage.as_ref()
    }
}

impl<T> Billed for VisionReply<T> {
    fn usage(&self) -> Option<&Usage> {
        self.usage.as_ref()
    }
}

/// One reservation against the day's budget and the paid calls it covers, in the only order
/// the money rules allow: reserve (before any call) → call (each call's outcome and usage saved
/// on the attempt the moment it returns, so a crash leaves the sweeper what it needs) →
/// settle, on its own or as items of the job's final transaction. Holding one is the only way
/// to make a paid call, and only a planned one.
#[derive(Debug)]
#[must_use = "an open reservation is settled, or left to the sweeper"]
pub struct PaidAttempt {
    item: AttemptItem,
}

/// Whether the stored attempt is `item`'s own reservation, still open: its transaction
/// committed, but the answer was lost (a dropped connection) and the SDK's retry was refused
/// by that very write. The attempt is then this caller's to use and settle, not a second run
/// of the step (whose reservation would carry another token).
async fn holds_stored(app: &App, item: &AttemptItem) -> Result<bool, Error> {
    let stored = app.store.get_attempt(&item.job_id, &item.attempt).await?;
    Ok(stored.is_some_and(|a| {
        a.open_day.is_some() && item.reservation.is_some() && a.reservation == item.reservation
    }))
}

impl PaidAttempt {
    /// Reserves an estimate against today's budget, creating the day (with the configured
    /// cap) on first use.
    pub async fn reserve(
        app: &App,
        req: &ReserveRequest<'_>,
        now: Instant,
    ) -> Result<Reservation, Error> {
        let stamp = clock::format(now);
        let item = AttemptItem {
            job_id: req.job.clone(),
            attempt: req.attempt.to_owned(),
            day: day_of(now),
            user_id: Some(req.user.clone()),
            reserved_micros: req.estimate,
            planned: req.planned.to_vec(),
            sale_credits: req.sale_credits,
            price_table: cost::PRICE_TABLE.to_owned(),
            calls: Default::default(),
            reserved_at: stamp.clone(),
            open_day: Some(day_of(now)),
            settled_cost_micros: None,
            settled_at: None,
            settled_by: None,
            reservation: Some(hex::encode(rand::random::<[u8; 16]>())),
        };
        // Rounds: the day's item may be missing, then the user's, then an operator's share
        // change may race the user's creation once.
        for _ in 0..4 {
            match app.store.reserve(&item).await? {
                ReserveOutcome::Reserved => {
                    tracing::info!(job_id = %req.job, attempt = req.attempt, estimate_micros = req.estimate.get(), day = %item.day, "budget_reserved");
                    return Ok(Reservation::Granted(Box::new(PaidAttempt { item })));
                }
                ReserveOutcome::Refused {
                    halted,
                    headroom_micros,
                } => {
                    tracing::warn!(job_id = %req.job, attempt = req.attempt, estimate_micros = req.estimate.get(), halted, headroom_micros = headroom_micros.map(Micros::get), "budget_refused");
                    return Ok(Reservation::Refused(Refusal::Paused));
                }
                ReserveOutcome::ShareReached { headroom_micros } => {
                    tracing::warn!(job_id = %req.job, user_id = %req.user, attempt = req.attempt, estimate_micros = req.estimate.get(), headroom_micros = headroom_micros.get(), "user_share_refused");
                    // Advisory (submits of a job that cannot fit are refused at the door);
                    // the refusal stands whether or not the note is written.
                    if let Err(e) = app
                        .store
                        .note_share_refusal(&item.day, req.user, req.estimate)
                        .await
                    {
                        tracing::warn!(user_id = %req.user, error = %crate::error::chain(&e), "user_share_note_failed");
                    }
                    return Ok(Reservation::Refused(Refusal::UserShare));
                }
                ReserveOutcome::DayMissing => create_day(app, &item.day, &stamp).await?,
                ReserveOutcome::UserDayMissing => {
                    super::user_share::create_day(app, &item.day, req.user, &stamp).await?;
                }
                ReserveOutcome::AlreadyReserved if holds_stored(app, &item).await? => {
                    tracing::info!(job_id = %req.job, attempt = req.attempt, "budget_reserved_answer_lost");
                    return Ok(Reservation::Granted(Box::new(PaidAttempt { item })));
                }
                ReserveOutcome::AlreadyReserved => {
                    // A second reservation for the same step of a job means the step is
                    // running twice; refuse rather than pay twice.
                    tracing::error!(job_id = %req.job, attempt = req.attempt, "budget_already_reserved");
                    return Ok(Reservation::Refused(Refusal::Paused));
                }
            }
        }
        Err(Error::NotFound { what: "budget day" })
    }

    /// Makes one planned paid call and saves its outcome and usage on the attempt as soon as
    /// it returns. The outer error means the save failed: the call was made all the same and
    /// is counted when this attempt settles. A call the attempt does not cover is never made.
    /// `model` is the catalogue row of the model that serves the call: its prices book the
    /// cost, and the record names it.
    pub async fn call<T: Billed>(
        &mut self,
        app: &App,
        kind: CallKind,
        model: &'static Model,
        call: impl Future<Output = Result<T, ModelError>>,
    ) -> Result<Result<T, ModelError>, Error> {
        self.call_as(app, kind, kind.as_str(), model, call).await
    }

    /// The planned call named `key` (`edit`, or `edit@gemini` for a failover, [`failover_key`]).
    pub async fn call_as<T: Billed>(
        &mut self,
        app: &App,
        kind: CallKind,
        key: &str,
        model: &'static Model,
        call: impl Future<Output = Result<T, ModelError>>,
    ) -> Result<Result<T, ModelError>, Error> {
        if !self.item.planned.iter().any(|p| p == key) || self.item.calls.contains_key(key) {
            return Err(Error::corrupt(format!(
                "{kind} is not a call attempt {} may still make",
                self.item.attempt
            )));
        }
        let started = std::time::Instant::now();
        let reply = call.await;
        let latency = started.elapsed();
        let (usage, error) = match &reply {
            Ok(r) => (r.usage().copied(), None),
            Err(e) => (e.usage().copied(), Some(e)),
        };
        let record = CallRecord {
            outcome: error.map_or("ok", ModelError::code).to_owned(),
            model: Some(model.price_label()),
            provider: Some(model.provider.as_str().to_owned()),
            cost_micros: call_cost(model, usage.as_ref(), error),
            usage: usage.and_then(|u| serde_json::to_value(u).ok()),
            at: clock::format(clock::now()),
        };
        tracing::info!(job_id = %self.item.job_id, call = %key, provider = model.provider.as_str(), model = model.id, outcome = %record.outcome, cost_micros = record.cost_micros.map(Micros::get), "call_recorded");
        if error.is_some_and(ModelError::is_model_unavailable) {
            // An outage of the configured model, not a problem of this job: one alarm for
            // the operator (the job still fails and is refunded like any failed call).
            tracing::error!(job_id = %self.item.job_id, call = %kind, model = model.id, "model_unavailable");
            crate::adapters::metrics::model_unavailable();
        }
        crate::adapters::metrics::model_call(
            kind,
            error.map_or("ok", ModelError::code),
            latency,
            record.cost_micros,
        );
        let saved = app
            .store
            .record_call(&self.item.job_id, &self.item.attempt, key, &record)
            .await;
        // Kept in memory even when the write failed: the call was made, so a settlement in
        // the failing transaction must count it (never as "skipped").
        self.item.calls.insert(key.to_owned(), record);
        saved.map(|()| reply)
    }

    /// Whether `key` is a planned call of this attempt.
    pub fn plans(&self, key: &str) -> bool {
        self.item.planned.iter().any(|p| p == key)
    }

    /// Plans one more call on this attempt, `key`, reserved at `estimate` before it is made
    /// (a failover to the next provider after a definite failure, docs/design.md rule 15).
    /// `Some` refusal when the day, its halt or the user's share does not allow it: the call
    /// is then not made.
    pub async fn extend(
        &mut self,
        app: &App,
        key: &str,
        estimate: Micros,
        now: Instant,
    ) -> Result<Option<Refusal>, Error> {
        let stamp = clock::format(now);
        let outcome = match app
            .store
            .extend_reservation(&self.item, key, estimate, &stamp)
            .await?
        {
            ReserveOutcome::AlreadyReserved if self.stored_plans(app, key).await? => {
                ReserveOutcome::Reserved
            }
            other => other,
        };
        let refusal = match outcome {
            ReserveOutcome::Reserved => {
                self.item.reserved_micros = self.item.reserved_micros.saturating_add(estimate);
                self.item.planned.push(key.to_owned());
                None
            }
            ReserveOutcome::ShareReached { .. } | ReserveOutcome::UserDayMissing => {
                Some(Refusal::UserShare)
            }
            ReserveOutcome::Refused { .. }
            | ReserveOutcome::DayMissing
            | ReserveOutcome::AlreadyReserved => Some(Refusal::Paused),
        };
        tracing::info!(job_id = %self.item.job_id, attempt = %self.item.attempt, call = key, estimate_micros = estimate.get(), refused = ?refusal, "budget_extended");
        Ok(refusal)
    }

    /// Whether the stored attempt is still open and already plans `key`: then an extension
    /// committed whose answer was lost (a dropped connection, and the SDK's retry refused by
    /// that very write). Only the holder of an attempt extends it (a second reservation of
    /// it is refused), so the extension is this one, and it must be settled with the rest.
    async fn stored_plans(&self, app: &App, key: &str) -> Result<bool, Error> {
        let stored = app
            .store
            .get_attempt(&self.item.job_id, &self.item.attempt)
            .await?;
        Ok(stored.is_some_and(|a| a.open_day.is_some() && a.planned.iter().any(|p| p == key)))
    }

    /// The items that settle this attempt inside another transaction (delivery, or a failure
    /// with its refund): planned calls never made are recorded as skipped (cost 0), and the
    /// reservation moves to `used` at the real cost, or stays booked where a cost is unknown.
    pub fn settlement(self, app: &App, by: &str, now: Instant) -> Result<Joined, Error> {
        let item = self.closed(now);
        app.store
            .settlement(&item, settlement_cost(&item), by, &clock::format(now))
    }

    /// Settles this attempt on its own.
    pub async fn settle(self, app: &App, by: &str) -> Result<SettleOutcome, Error> {
        settle(app, &self.closed(clock::now()), by).await
    }

    fn closed(mut self, now: Instant) -> AttemptItem {
        for call in self.item.planned.clone() {
            self.item.calls.entry(call).or_insert_with(|| skipped(now));
        }
        self.item
    }
}

/// What a call cost: from its usage when the provider reported one; nothing when it surely
/// did not bill (never sent, connection refused, a 4xx refusal before processing, the
/// provider's own definite error, [`ModelError::is_definite`]); otherwise unknown (`None`: a
/// gateway's 5xx, a 504, our timeout, a dropped connection, an answer without usage), which
/// keeps the attempt's estimate booked.
fn call_cost(model: &Model, usage: Option<&Usage>, error: Option<&ModelError>) -> Option<Micros> {
    if let Some(u) = usage {
        return cost::cost_micros(model, u);
    }
    match error.map(ModelError::billing) {
        Some(Billing::NotBilled) => Some(Micros::ZERO),
        Some(Billing::MayHaveBilled) | None => None,
    }
}

/// What an attempt costs when settled: the sum of its calls' costs when every planned call is
/// recorded with a known cost; otherwise the reservation stays booked (at least the known sum).
pub fn settlement_cost(attempt: &AttemptItem) -> Micros {
    let mut known = Micros::ZERO;
    let mut unknown = false;
    for call in &attempt.planned {
        match attempt.calls.get(call).and_then(|c| c.cost_micros) {
            Some(c) => known = known.saturating_add(c),
            None => unknown = true,
        }
    }
    if unknown {
        known.max(attempt.reserved_micros)
    } else {
        known
    }
}

/// Settles an attempt as stored (the sweeper's path for an attempt a consumer left open).
pub async fn settle(app: &App, attempt: &AttemptItem, by: &str) -> Result<SettleOutcome, Error> {
    let cost = settlement_cost(attempt);
    let out = app
        .store
        .settle(attempt, cost, by, &clock::format(clock::now()))
        .await?;
    tracing::info!(job_id = %attempt.job_id, attempt = %attempt.attempt, reserved_micros = attempt.reserved_micros.get(), cost_micros = cost.get(), outcome = ?out, "budget_settled");
    Ok(out)
}

/// The planned-call name of a failover of `kind` to `provider` (`edit@gemini`).
pub fn failover_key(
    kind: CallKind,
    provider: crate::adapters::model::catalogue::Provider,
) -> String {
    format!("{kind}@{provider}")
}

/// A record for a planned call that was never made (costs nothing).
fn skipped(now: Instant) -> CallRecord {
    CallRecord {
        outcome: "skipped".to_owned(),
        model: None,
        provider: None,
        cost_micros: Some(Micros::ZERO),
        usage: None,
        at: clock::format(now),
    }
}

/// The day's item, created from the standing setting if missing.
pub async fn day(app: &App, day: &str) -> Result<BudgetDayItem, Error> {
    if let Some(d) = app.store.get_budget_day(day).await? {
        return Ok(d);
    }
    create_day(app, day, &clock::format(clock::now())).await?;
    app.store
        .get_budget_day(day)
        .await?
        .ok_or(Error::NotFound { what: "budget day" })
}

/// What an operator's change applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The standing setting and the day `today` (the day the change is made), in one
    /// transaction: it holds from now on, across midnight, until changed again.
    Standing { today: String },
    /// One day only (`--day`): the standing setting is left alone.
    Day(String),
}

impl Scope {
    /// The day item the change writes.
    pub fn day(&self) -> &str {
        match self {
            Scope::Standing { today } | Scope::Day(today) => today,
        }
    }

    fn standing(&self) -> bool {
        matches!(self, Scope::Standing { .. })
    }
}

/// Halts or resumes paid calls at once: with [`Scope::Standing`] until changed again (every
/// new day is created halted, and every reservation checks the standing halt), else for one
/// day. A one-day resume does not lift a standing halt.
pub async fn set_halted(app: &App, scope: &Scope, halted: bool) -> Result<BudgetDayItem, Error> {
    let day_key = scope.day();
    day(app, day_key).await?;
    app.store
        .set_halted(
            day_key,
            halted,
            scope.standing(),
            &clock::format(clock::now()),
        )
        .await?;
    tracing::warn!(
        day = day_key,
        halted,
        standing = scope.standing(),
        "budget_halt_changed"
    );
    day(app, day_key).await
}

/// Changes the cap: with [`Scope::Standing`] today's and every later day's, else one day's
/// (retrying if a concurrent change wins).
pub async fn set_cap(app: &App, scope: &Scope, cap: Micros) -> Result<BudgetDayItem, Error> {
    let day_key = scope.day();
    for _ in 0..5 {
        let current = day(app, day_key).await?;
        if app
            .store
            .set_cap(
                &current,
                cap,
                scope.standing(),
                &clock::format(clock::now()),
            )
            .await?
        {
            tracing::warn!(
                day = day_key,
                cap_micros = cap.get(),
                standing = scope.standing(),
                "budget_cap_changed"
            );
            return day(app, day_key).await;
        }
    }
    Err(Error::Contention { attempts: 5 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn attempt(reserved: i64, calls: &[(&str, Option<i64>)]) -> AttemptItem {
        AttemptItem {
            job_id: JobId::parse("job_00000000000000000000000000").unwrap_or_else(|| panic!("id")),
            attempt: "01".into(),
            day: "2026-11-29".into(),
            user_id: None,
            reserved_micros: Micros::new(reserved),
            planned: vec!["check".into(), "edit".into()],
            sale_credits: Credits::new(4),
            price_table: "t".into(),
            calls: calls
                .iter()
                .map(|(k, c)| {
                    (
                        (*k).to_owned(),
                        CallRecord {
                            outcome: "ok".into(),
                            model: None,
                            provider: None,
                            cost_micros: c.map(Micros::new),
                            usage: None,
                            at: String::new(),
                        },
                    )
                })
                .collect::<BTreeMap<_, _>>(),
            reserved_at: String::new(),
            open_day: Some("2026-11-29".into()),
            settled_cost_micros: None,
            settled_at: None,
            settled_by: None,
            reservation: None,
        }
    }

    #[test]
    fn settlement_uses_real_costs_only_when_all_are_known() {
        assert_eq!(
            settlement_cost(&attempt(1000, &[("check", Some(10)), ("edit", Some(300))])),
            Micros::new(310)
        );
        assert_eq!(
            settlement_cost(&attempt(1000, &[("check", Some(10)), ("edit", None)])),
            Micros::new(1000),
            "unknown keeps it booked"
        );
        assert_eq!(
            settlement_cost(&attempt(1000, &[("check", Some(10))])),
            Micros::new(1000),
            "unrecorded call keeps it booked"
        );
        assert_eq!(
            settlement_cost(&attempt(100, &[("check", Some(90)), ("edit", None)])),
            Micros::new(100)
        );
    }

    /// A real transport error from reqwest: the request built from `url` and sent with
    /// `timeout` (reqwest errors have no public constructor).
    async fn reqwest_error(url: &str, timeout: std::time::Duration) -> reqwest::Error {
        let builder = reqwest::Client::builder();
        let client = crate::adapters::tls::shared(builder, crate::adapters::tls::Alpn::Any)
            .timeout(timeout)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        match client.post(url).body("{}").send().await {
            Err(e) => e,
            Ok(r) => panic!("{url} answered {}", r.status()),
        }
    }

    /// A local port that accepts connections and then does `then` with each.
    fn listener(then: fn(std::net::TcpStream)) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = l.local_addr().map(|a| a.port()).unwrap_or_default();
        std::thread::spawn(move || {
            for stream in l.incoming().flatten() {
                then(stream);
            }
        });
        format!("http://127.0.0.1:{port}/v1/images/edits")
    }

    #[tokio::test]
    async fn a_failed_call_books_nothing_only_when_the_provider_cannot_have_billed_it() {
        use crate::adapters::model::Malformed;
        use std::time::Duration;
        let kind = CallKind::Edit;
        let http = |status: u16| ModelError::Http {
            call: kind,
            status,
            code: None,
            message: None,
        };
        let provider_error = |status: u16, code: &str| ModelError::Http {
            call: kind,
            status,
            code: Some(code.to_owned()),
            message: None,
        };
        let refused_port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
            l.local_addr().map(|a| a.port()).unwrap_or_default()
        }; // closed again: connecting is refused
        let second = Duration::from_secs(5);
        let refused = reqwest_error(&format!("http://127.0.0.1:{refused_port}/x"), second).await;
        let not_a_url = reqwest_error("http://exa mple.com/x", second).await;
        let hangs = listener(|s| {
            std::thread::sleep(Duration::from_secs(3));
            drop(s);
        });
        let timed_out = reqwest_error(&hangs, Duration::from_millis(200)).await;
        let dropped = reqwest_error(
            &listener(|mut s| {
                use std::io::Read;
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf);
                drop(s);
            }),
            second,
        )
        .await;
        assert!(refused.is_connect() && !dropped.is_connect() && timed_out.is_timeout());
        let malformed = |usage| ModelError::Malformed {
            call: kind,
            usage,
            source: Malformed::NoImage,
        };
        let usage = Usage {
            input_text_tokens: Some(100),
            input_image_tokens: Some(1000),
            output_tokens: Some(4000),
            ..Usage::default()
        };
        let model = crate::adapters::model::ModelConfig::new("http://unused").image_model;
        let paid = cost::cost_micros(model, &usage);
        assert!(paid.is_some_and(|c| c > Micros::ZERO));
        let free = Some(Micros::ZERO);
        let unknown = None;
        /// (case, the call's error, its usage, the cost booked)
        type Case = (
            &'static str,
            Option<ModelError>,
            Option<Usage>,
            Option<Micros>,
        );
        let table: Vec<Case> = vec![
            ("answered with usage", None, Some(usage), paid),
            ("answered without usage", None, None, unknown),
            ("400 bad request", Some(http(400)), None, free),
            ("401 unauthorised", Some(http(401)), None, free),
            ("413 too large", Some(http(413)), None, free),
            ("429 rate limited", Some(http(429)), None, free),
            (
                "the provider's own 503 overloaded",
                Some(provider_error(503, "UNAVAILABLE")),
                None,
                free,
            ),
            (
                "the provider's own 500 server error",
                Some(provider_error(500, "server_error")),
                None,
                unknown,
            ),
            (
                "500 without the provider's body",
                Some(http(500)),
                None,
                unknown,
            ),
            ("502 bad gateway", Some(http(502)), None, unknown),
            (
                "503 without the provider's body",
                Some(http(503)),
                None,
                unknown,
            ),
            ("504 gateway timeout", Some(http(504)), None, unknown),
            ("524 origin timeout", Some(http(524)), None, unknown),
            (
                "connection refused",
                Some(ModelError::Transport {
                    call: kind,
                    source: refused,
                }),
                None,
                free,
            ),
            (
                "request not built",
                Some(ModelError::Transport {
                    call: kind,
                    source: not_a_url,
                }),
                None,
                free,
            ),
            (
                "connection dropped after sending",
                Some(ModelError::Transport {
                    call: kind,
                    source: dropped,
                }),
                None,
                unknown,
            ),
            (
                "our timeout after sending",
                Some(ModelError::Timeout {
                    call: kind,
                    timeout_ms: 200,
                    source: timed_out,
                }),
                None,
                unknown,
            ),
            (
                "invalid input, never sent",
                Some(ModelError::InvalidInput {
                    call: kind,
                    reason: "x".into(),
                }),
                None,
                free,
            ),
            (
                "malformed without usage",
                Some(malformed(None)),
                None,
                unknown,
            ),
            (
                "malformed with usage",
                Some(malformed(Some(usage))),
                Some(usage),
                paid,
            ),
        ];
        for (case, error, usage, expected) in &table {
            assert_eq!(
                call_cost(model, usage.as_ref(), error.as_ref()),
                *expected,
                "{case}"
            );
        }
    }

    #[test]
    fn a_day_that_does_not_exist_is_refused() {
        assert_eq!(parse_day("2026-01-05"), Ok("2026-01-05".to_owned()));
        assert_eq!(parse_day("2028-02-29"), Ok("2028-02-29".to_owned()));
        for bad in [
            "2026-1-5",
            "2026-02-30",
            "2026-13-01",
            "2026-00-10",
            "standing",
            "",
            "2026-01-05x",
            "+026-01-05",
            "2026-01",
            "2027-02-29",
        ] {
            assert!(parse_day(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn days_are_utc_dates() {
        let t = time::macros::datetime!(2026-11-29 23:59:59 -02:00);
        assert_eq!(day_of(t), "2026-11-30");
    }
}
