//! The operator's promises (issue 13, sections 2 and 6), on the real local stack:
//! - the halt and the cap are the operator's, not the day's: a standing halt holds across
//!   midnight and for day items that already existed; a standing cap is every new day's cap,
//!   and `--day` overrides one day only;
//! - a refund the sweeper cannot make is counted as such (not as a generic error), and the
//!   next sweep makes it.
//!
//! "Yesterday" is the day the operator acted; the consumer runs on the real clock, so its day
//! is the next UTC day, whose item does not exist yet (exactly the 23:50 halt, after midnight).

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::clock;
use atelier_shared::domain::{FailureCode, JobId, LedgerKind, Micros};
use atelier_shared::services::budget::{self, Scope};
use atelier_shared::services::process::{Outcome, ProcessError, Step};
use atelier_tests::{Harness, JobCalls, StandIn};
use atelier_wire_proxy::{FaultKind, FaultPlan};
use serde_json::json;

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn pet() -> serde_json::Value {
    json!({ "style": "needle_felt", "target": "pet" })
}

fn days_from_now(days: i64) -> String {
    let offset = Duration::from_secs(days.unsigned_abs() * 86_400);
    let now = clock::now();
    budget::day_of(if days < 0 { now - offset } else { now + offset })
}

fn refunds_of(rows: &[atelier_shared::store::schema::LedgerItem], id: &str) -> usize {
    rows.iter()
        .filter(|r| {
            r.kind == LedgerKind::Refund && r.job_id.as_ref().is_some_and(|j| j.as_str() == id)
        })
        .count()
}

async fn assert_paused_and_refunded(
    h: &Harness,
    model: &StandIn,
    user: &atelier_shared::domain::UserId,
    id: &str,
) {
    let outcome = h.processor(model).process(&job_id(id)).await;
    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::BudgetPaused
        })
    );
    assert_eq!(
        model.calls(id).await,
        JobCalls::default(),
        "no paid call at all"
    );
    let job = h.job(user, id).await;
    assert_eq!(
        job.body["failure"]["code"],
        FailureCode::BudgetPaused.as_str()
    );
    assert_eq!(refunds_of(&h.ledger(user).await, id), 1, "refunded once");
}

#[tokio::test]
async fn a_halt_before_midnight_still_refuses_the_next_day_and_the_job_is_refunded_budget_paused() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.funded_user(50).await;
    let (yesterday, today) = (days_from_now(-1), days_from_now(0));
    budget::set_halted(&h.app, &Scope::Standing { today: yesterday }, true)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        h.app
            .store
            .get_budget_day(&today)
            .await
            .expect("read")
            .is_none(),
        "the new day's item is made by the first reservation"
    );

    let id = h
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    assert_paused_and_refunded(&h, &model, &user, &id).await;
    let d = budget::day(&h.app, &today).await.expect("today");
    assert!(d.halted, "the new day inherited the halt: {d:?}");

    // `resume` (standing, made today) lifts it.
    budget::set_halted(&h.app, &Scope::Standing { today }, false)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let id = h
        .submit_photo(&user, "b", samples::single_pet(), pet())
        .await;
    assert!(matches!(
        h.processor(&model).process(&job_id(&id)).await,
        Ok(Outcome::Delivered { .. })
    ));
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_standing_halt_holds_for_a_day_item_that_already_existed_unhalted() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.funded_user(50).await;
    let today = days_from_now(0);
    // Today's item exists before the halt (a `budget show`, a reservation, a one-day cap).
    let before = budget::day(&h.app, &today).await.expect("today");
    assert!(!before.halted);
    budget::set_halted(
        &h.app,
        &Scope::Standing {
            today: days_from_now(-1),
        },
        true,
    )
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        !budget::day(&h.app, &today).await.expect("today").halted,
        "not rewritten"
    );

    let id = h
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    assert_paused_and_refunded(&h, &model, &user, &id).await;

    // A one-day resume does not lift the standing halt.
    budget::set_halted(&h.app, &Scope::Day(today.clone()), false)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let id = h
        .submit_photo(&user, "b", samples::single_pet(), pet())
        .await;
    assert_paused_and_refunded(&h, &model, &user, &id).await;
    assert!(budget::standing(&h.app).await.expect("standing").halted);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn set_cap_applies_to_every_new_day_and_a_day_override_to_that_day_only() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.funded_user(50).await;
    let configured = h.app.config.limits.daily_cap_micros;
    let standing_cap = Micros::new(7_000_000);
    let (yesterday, today, tomorrow) = (days_from_now(-1), days_from_now(0), days_from_now(1));

    let y = budget::set_cap(&h.app, &Scope::Standing { today: yesterday }, standing_cap)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(y.cap_micros, standing_cap, "the day it was made");
    let t = budget::day(&h.app, &today).await.expect("today");
    assert_eq!(
        (t.cap_micros, t.headroom_micros),
        (standing_cap, standing_cap),
        "the next day starts with the operator's cap, not the configured {configured}"
    );
    let one_day = Micros::new(3_000_000);
    let o = budget::set_cap(&h.app, &Scope::Day(tomorrow.clone()), one_day)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!((o.day.as_str(), o.cap_micros), (tomorrow.as_str(), one_day));
    let s = budget::standing(&h.app).await.expect("standing");
    assert_eq!((s.cap_micros, s.cap_set_by_operator), (standing_cap, true));
    let after = budget::day(&h.app, &days_from_now(2))
        .await
        .expect("day after");
    assert_eq!(after.cap_micros, standing_cap, "the override was one day's");

    // The consumer's day obeys the standing cap: a cap of 0 set yesterday pauses today's job
    // (today's item not made yet, so it is created from the standing setting).
    let h2 = Harness::isolated(|_| {}).await;
    h2.fund_to(&user, 50).await;
    budget::set_cap(
        &h2.app,
        &Scope::Standing {
            today: days_from_now(-1),
        },
        Micros::ZERO,
    )
    .await
    .unwrap_or_else(|e| panic!("{e:?}"));
    let id = h2
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    assert_paused_and_refunded(&h2, &model, &user, &id).await;
    let d = budget::day(&h2.app, &today).await.expect("today");
    assert_eq!((d.cap_micros, d.halted), (Micros::ZERO, false), "{d:?}");
    h.assert_audit_clean().await;
    h2.assert_audit_clean().await;
}

#[tokio::test]
async fn a_refund_the_sweeper_cannot_make_is_counted_as_a_refund_failure_and_the_next_sweep_makes_it()
 {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.funded_user(50).await;
    let id = h
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    let mut dying = h.processor(&model);
    dying.crash_at = Some(Step::AfterClaim);
    assert!(matches!(
        dying.process(&job_id(&id)).await,
        Err(ProcessError::Crashed(Step::AfterClaim))
    ));

    // The same stack through the wire proxy, every transaction answered with a 500.
    let plan = FaultPlan::new(13)
        .rate(FaultKind::InternalError, 1.0)
        .only(["TransactWriteItems"]);
    let (faulty, proxy) = h.through_wire(Some(plan)).await;
    let faulty = faulty.app;
    let stuck_at = clock::now() + Duration::from_secs(16 * 60);

    let failed = atelier_sweeper::handle(&faulty, stuck_at).await;
    assert_eq!(failed.refund_failures, 1, "{failed:?}");
    assert_eq!(failed.stuck_failed, 0, "{failed:?}");
    assert!(!proxy.faults().is_empty(), "the fault was injected");
    assert!(
        atelier_sweeper::verdict(&failed).is_err(),
        "the invocation reports the failure (Lambda Errors)"
    );
    assert_eq!(refunds_of(&h.ledger(&user).await, &id), 0);
    assert_eq!(h.job(&user, &id).await.str("status"), "processing");

    let healed = atelier_sweeper::handle(&h.app, stuck_at).await;
    assert_eq!(
        (healed.stuck_failed, healed.refund_failures),
        (1, 0),
        "{healed:?}"
    );
    assert!(atelier_sweeper::verdict(&healed).is_ok());
    let job = h.job(&user, &id).await;
    assert_eq!(job.body["failure"]["code"], FailureCode::TimedOut.as_str());
    assert_eq!(refunds_of(&h.ledger(&user).await, &id), 1);
    h.assert_audit_clean().await;
}
