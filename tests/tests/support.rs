//! Support's operator commands, run as an operator runs them (the real `atelier-admin`
//! binary against the tables the functions use): `user show`, `job show` of a job from the
//! fault harness, and `job refund` — once ever per job, refused for a job already refunded or
//! in flight, a delivered one only with `--force`, the operator on the ledger row, and the
//! audit clean after.

use atelier_model_server::samples;
use atelier_shared::domain::{GrantReason, JobId, LedgerKind, Operator};
use atelier_shared::services::support::{self, RefundRequest, RefundResult};
use atelier_tests::{Harness, StandIn, admin};
use serde_json::{Value, json};

fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

/// A job of a fresh, funded user, run through the consumer against `model`.
async fn processed_job(h: &Harness, model: &StandIn) -> (atelier_shared::domain::UserId, String) {
    let user = h.funded_user(20).await;
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    h.processor(model)
        .process(&job_id(&id))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (user, id)
}

async fn refund(id: &str, extra: &[&str]) -> atelier_tests::AdminRun {
    let mut args = vec![
        "job",
        "refund",
        id,
        "--reason",
        "ticket-42",
        "--operator",
        "jane",
    ];
    args.extend_from_slice(extra);
    admin(&args, &[]).await
}

#[tokio::test]
async fn job_show_of_a_provider_failure_prints_its_state_calls_costs_and_ledger_rows() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    model
        .fault(json!({ "call": "edit", "fault": "error_500" }))
        .await;
    let (_, id) = processed_job(&h, &model).await;

    let run = admin(&["job", "show", &id], &[]).await;

    assert_eq!(run.code, Some(0), "{run:?}");
    let history = run.json();
    assert_eq!(history["job"]["status"], "failed", "{history:#}");
    assert_eq!(history["job"]["failure"]["code"], "EDIT_FAILED");
    let calls = &history["attempts"][0]["calls"];
    assert_eq!(calls["check"]["outcome"], "ok", "{calls:#}");
    assert_eq!(calls["edit"]["outcome"], "model_provider_error");
    assert!(
        calls["check"]["cost_micros"]
            .as_i64()
            .is_some_and(|c| c > 0)
    );
    let kinds: Vec<&str> = history["ledger"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["debit", "refund"], "{history:#}");
    assert!(
        history["settled_cost_micros"]
            .as_i64()
            .is_some_and(|c| c > 0)
    );
}

#[tokio::test]
async fn refunding_a_failed_job_is_refused_as_already_refunded_and_changes_nothing() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    model
        .fault(json!({ "call": "edit", "fault": "error_500" }))
        .await;
    let (user, id) = processed_job(&h, &model).await;
    let before = h.balance(&user).await;

    let run = refund(&id, &["--force"]).await;

    assert_eq!(run.code, Some(1), "refused by a rule: {run:?}");
    assert!(run.stderr.contains("refunded already"), "{run:?}");
    assert_eq!(h.balance(&user).await, before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_delivered_job_is_refunded_only_with_force_and_a_rerun_refunds_nothing_more() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id) = processed_job(&h, &model).await;
    let before = h.balance(&user).await;

    let without_force = refund(&id, &[]).await;
    assert_eq!(without_force.code, Some(1), "{without_force:?}");
    assert!(
        without_force.stderr.contains("--force"),
        "{without_force:?}"
    );
    assert_eq!(h.balance(&user).await, before);

    let first = refund(&id, &["--force"]).await;
    let again = refund(&id, &["--force"]).await;

    assert_eq!(first.code, Some(0), "{first:?}");
    assert_eq!(again.code, Some(0), "a rerun is idempotent: {again:?}");
    assert!(again.stdout.contains("nothing changed"), "{again:?}");
    assert_eq!(
        h.balance(&user).await,
        before + 4,
        "refunded once, the job's price"
    );
    let refunds: Vec<_> = h
        .ledger(&user)
        .await
        .into_iter()
        .filter(|r| r.kind == LedgerKind::Refund)
        .collect();
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!(refunds[0].operator.as_deref(), Some("jane"));
    assert_eq!(refunds[0].reason.as_deref(), Some("ticket-42"));
    let job = h.job(&user, &id).await;
    assert_eq!(
        job.str("status"),
        "succeeded",
        "the result stays the user's"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn eight_concurrent_refunds_of_one_delivered_job_refund_it_once() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id) = processed_job(&h, &model).await;
    let before = h.balance(&user).await;
    let req = RefundRequest {
        reason: GrantReason::parse("ticket-7").unwrap_or_else(|e| panic!("{e}")),
        operator: Operator::parse("jane").unwrap_or_else(|e| panic!("{e}")),
        force: true,
    };
    let id = job_id(&id);

    let results =
        futures::future::join_all((0..8).map(|_| support::refund(&h.app, &id, &req))).await;

    let refunded = results
        .iter()
        .filter(|r| matches!(r, Ok(RefundResult::Refunded { .. })))
        .count();
    let already = results
        .iter()
        .filter(|r| matches!(r, Ok(RefundResult::AlreadyRefunded(_))))
        .count();
    assert_eq!((refunded, already), (1, 7), "{results:?}");
    assert_eq!(h.balance(&user).await, before + 4);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn refunding_a_queued_job_is_refused_while_the_pipeline_owns_it() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let before = h.balance(&user).await;

    let run = refund(&id, &["--force"]).await;

    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("queued"), "{run:?}");
    assert_eq!(h.balance(&user).await, before);
}

#[tokio::test]
async fn user_show_prints_the_balance_in_flight_count_and_newest_jobs_and_rows() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;

    let run = admin(&["user", "show", user.as_str(), "--recent", "5"], &[]).await;

    assert_eq!(run.code, Some(0), "{run:?}");
    let view = run.json();
    assert_eq!(
        view["account"]["credits"].as_i64(),
        Some(h.balance(&user).await)
    );
    assert_eq!(view["account"]["in_flight"], 1);
    assert_eq!(view["recent_jobs"][0]["job_id"], id.as_str(), "{view:#}");
    assert_eq!(
        view["recent_ledger"][0]["kind"], "debit",
        "newest first: {view:#}"
    );
    let unknown = admin(&["user", "show", "nobody-here"], &[]).await;
    assert_eq!(unknown.code, Some(3), "not found: {unknown:?}");
}
