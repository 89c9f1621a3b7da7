//! The scheduled audit on the real local stack: an account whose balance was changed behind
//! the ledger's back (written directly to the table: the tamper) is reported by the sweeper's
//! daily audit — logged, counted in `AuditOffenders` — and an audit cut into short passes
//! still checks every account. The stream half of the guard (ledger rows modified or
//! removed) is tested in the sweeper with a recorded stream batch: see docs/local-aws.md.

use std::time::Instant;

use atelier_shared::adapters::metrics::Metric;
use atelier_shared::domain::UserId;
use atelier_shared::services::audit::{PassEnd, audit_pass};
use atelier_shared::services::guard;
use atelier_shared::store::schema::attr;
use atelier_tests::{Harness, capture_logs, flushed_metrics};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;

const FUNCTION: &str = "atelier-test-sweeper";

/// Adds `credits` to the user's balance without a ledger row (what a stray `UpdateItem` by
/// hand, or a bug outside the transaction path, would do).
async fn tamper_balance(h: &Harness, user: &UserId, credits: i64) {
    h.clients
        .dynamodb
        .update_item()
        .table_name(&h.app.config.resources.accounts_table)
        .key(attr::USER_ID, AttributeValue::S(user.to_string()))
        .update_expression("SET #c = #c + :n")
        .expression_attribute_names("#c", attr::CREDITS)
        .expression_attribute_values(":n", AttributeValue::N(credits.to_string()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
}

fn metric(docs: &[Value], m: Metric) -> Option<Value> {
    docs.iter().find_map(|d| d.get(m.name()).cloned())
}

#[tokio::test]
async fn the_daily_audit_reports_a_balance_changed_behind_the_ledgers_back() {
    let h = Harness::new().await;
    let (tampered, honest) = (h.user(), h.user());
    let granted = h.balance(&tampered).await; // opens the account with its signup grant
    h.balance(&honest).await;
    tamper_balance(&h, &tampered, 7).await;
    flushed_metrics(FUNCTION); // installs the recorder

    let (logs, _guard) = capture_logs();
    let pass = guard::scheduled_audit(&h.app, None, None)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    assert_eq!(pass.end, PassEnd::Finished);
    let offender = pass
        .report
        .offenders
        .iter()
        .find(|o| o.user_id == tampered.as_str())
        .unwrap_or_else(|| panic!("{tampered} not reported: {:#?}", pass.report));
    assert_eq!(
        (offender.balance, offender.ledger_sum),
        (granted + 7, granted)
    );
    assert!(
        pass.report
            .offenders
            .iter()
            .all(|o| o.user_id != honest.as_str()),
        "an honest account reported"
    );
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("audit_offender") && l.contains(tampered.as_str()))
        .unwrap_or_else(|| panic!("no audit_offender line for {tampered}: {text}"));
    assert!(line.contains("\"level\":\"ERROR\""), "{line}");
    let docs = flushed_metrics(FUNCTION);
    let offenders = metric(&docs, Metric::AuditOffenders).and_then(|v| v.as_u64());
    assert!(offenders.is_some_and(|n| n >= 1), "{docs:#?}");
    let audited = metric(&docs, Metric::AuditedAccounts).and_then(|v| v.as_u64());
    assert!(audited.is_some_and(|n| n >= 2), "{docs:#?}");
    let metric_text = serde_json::to_string(&docs).unwrap_or_default();
    assert!(
        !metric_text.contains(tampered.as_str()),
        "a user id in a metric"
    );

    // Put the books back, so this stack's other audits stay clean.
    tamper_balance(&h, &tampered, -7).await;
}

#[tokio::test]
async fn an_audit_cut_into_short_passes_checks_every_account() {
    let h = Harness::new().await;
    // More accounts than one group of checks.
    for _ in 0..20 {
        h.balance(&h.user()).await;
    }
    let whole = audit_pass(&h.app, None, None)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let (mut after, mut checked, mut passes) = (None, 0, 0);
    loop {
        passes += 1;
        assert!(passes < 1000, "the passes never finish");
        // Already past: each pass checks one group and stops.
        let pass = audit_pass(&h.app, after.as_ref(), Some(Instant::now()))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        checked += pass.report.accounts;
        match pass.end {
            PassEnd::Finished => break,
            PassEnd::Stopped { resume_after } => after = Some(resume_after),
        }
    }

    assert!(passes > 1, "one pass checked everything");
    assert!(
        checked >= whole.report.accounts,
        "{checked} checked in {passes} passes, {} in one",
        whole.report.accounts
    );
}
