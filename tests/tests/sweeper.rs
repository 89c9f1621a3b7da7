//! The sweeper and cancel: nothing charged is ever stranded, nothing is refunded twice, and
//! the paid model is never called again. Each test runs on a stack of its own, so a sweep
//! sees only that test's jobs; the clock is moved, never slept.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::clock;
use atelier_shared::domain::FailureCode;
use atelier_shared::domain::{Job, JobFailure};
use atelier_shared::domain::{JobId, JobState};
use atelier_shared::domain::{LedgerKind, Micros};
use atelier_shared::services::budget;
use atelier_shared::services::process::{Outcome, ProcessError, Step};
use atelier_shared::store::jobs::FinishOutcome;
use atelier_shared::store::schema::{JobItem, attr, reference};
use atelier_tests::{Harness, StandIn};
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem};
use futures::future::join_all;
use http::StatusCode;
use serde_json::json;

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn later(minutes: u64) -> clock::Instant {
    clock::now() + Duration::from_secs(minutes * 60)
}

fn pet() -> serde_json::Value {
    json!({ "style": "needle_felt", "target": "pet" })
}

fn refunds_of(rows: &[atelier_shared::store::schema::LedgerItem], id: &str) -> usize {
    rows.iter()
        .filter(|r| {
            r.kind == LedgerKind::Refund && r.job_id.as_ref().is_some_and(|j| j.as_str() == id)
        })
        .count()
}

async fn drain(h: &Harness, model: &StandIn) -> usize {
    let processor = h.processor(model);
    let mut handled = 0;
    loop {
        let n = atelier_local::poller::poll_once(
            &processor,
            &h.clients.sqs,
            &h.app.config.resources.queue_url,
            0,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        if n == 0 {
            return handled;
        }
        handled += n;
    }
}

#[tokio::test]
async fn a_charged_job_whose_send_failed_is_requeued_after_a_minute_and_completes() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let mut broken = h.app.config.clone();
    broken.resources.queue_url = format!("{}-missing", broken.resources.queue_url);
    let submitter = Harness::with_config(broken).await;
    let user = h.user();
    let id = submitter
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    assert_eq!(drain(&h, &model).await, 0, "the doorbell never rang");

    let early = atelier_sweeper::handle(&h.app, clock::now()).await;
    let swept = atelier_sweeper::handle(&h.app, clock::now() + Duration::from_secs(61)).await;

    assert_eq!(early.requeued, 0, "not before a minute");
    assert_eq!(swept.requeued, 1, "{swept:?}");
    assert_eq!(drain(&h, &model).await, 1);
    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_job_that_can_never_be_sent_waits_ever_longer_between_resends_then_fails_and_is_refunded_once_past_the_deadline()
 {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let mut broken = h.app.config.clone();
    broken.resources.queue_url = format!("{}-missing", broken.resources.queue_url);
    let broken = Harness::with_config(broken).await;
    let id = broken
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let before = h.balance(&user).await;
    let submitted = clock::now();

    // A sweep every minute for the deadline's first 59 minutes: the doorbell never rings.
    let mut attempts = Vec::new();
    for minute in 1..=59 {
        let s = atelier_sweeper::handle(
            &broken.app,
            submitted + Duration::from_secs(minute * 60 + 1),
        )
        .await;
        if s.requeued + s.send_failures > 0 {
            attempts.push(minute);
        }
        assert_eq!(s.deadline_failed, 0, "minute {minute}: {s:?}");
    }
    let waiting = h.job(&user, &id).await;
    // Past the deadline, two sweepers at once.
    let deadline = submitted + Duration::from_secs(3600 + 1);
    let (s1, s2) = tokio::join!(
        atelier_sweeper::handle(&broken.app, deadline),
        atelier_sweeper::handle(&broken.app, deadline)
    );
    let again = atelier_sweeper::handle(&broken.app, deadline + Duration::from_secs(600)).await;

    assert_eq!(waiting.str("status"), "queued", "waiting is not failure");
    assert_eq!(
        attempts,
        [1, 5, 20, 35, 50],
        "re-sent after 1 minute, then waits growing fourfold up to 15 minutes"
    );
    assert_eq!(s1.deadline_failed + s2.deadline_failed, 1, "{s1:?} {s2:?}");
    assert_eq!(again.deadline_failed, 0, "{again:?}");
    let job = h.job(&user, &id).await;
    assert_eq!(job.str("status"), "failed");
    assert_eq!(
        job.body["failure"]["code"],
        FailureCode::DispatchLimit.as_str()
    );
    assert_eq!(
        job.body["failure"]["message"],
        FailureCode::DispatchLimit.message()
    );
    assert_eq!(refunds_of(&h.ledger(&user).await, &id), 1);
    assert_eq!(
        h.balance(&user).await,
        before + 4,
        "the price came back, once"
    );
    assert_eq!(h.account(&user).await.body["in_flight"], 0);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_consumer_dying_at_any_step_is_failed_and_refunded_once_and_never_edits_twice() {
    let steps = [
        Step::AfterClaim,
        Step::AfterReserve,
        Step::AfterCheck,
        Step::AfterEdit,
        Step::AfterStore,
        Step::AfterReview,
    ];
    let h = Harness::isolated(|l| l.max_in_flight = 20).await;
    let model = StandIn::start().await;
    let user = h.funded_user(100).await;
    let mut ids = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let id = h
            .submit_photo(&user, &format!("k{i}"), samples::single_pet(), pet())
            .await;
        let mut dying = h.processor(&model);
        dying.crash_at = Some(*step);
        let crashed = dying.process(&job_id(&id)).await;
        assert!(
            matches!(crashed, Err(ProcessError::Crashed(s)) if s == *step),
            "{step:?}: {crashed:?}"
        );
        ids.push(id);
    }
    let _ = drain(&h, &model).await; // redeliveries: every claim is lost

    let too_early = atelier_sweeper::handle(&h.app, later(5)).await;
    let swept = atelier_sweeper::handle(&h.app, later(16)).await;
    let again = atelier_sweeper::handle(&h.app, later(17)).await;

    assert_eq!(too_early.stuck_failed, 0, "a live consumer is never swept");
    assert_eq!(swept.stuck_failed, steps.len() as u64, "{swept:?}");
    assert_eq!(
        (again.stuck_failed, again.reservations_settled),
        (0, 0),
        "{again:?}"
    );
    let rows = h.ledger(&user).await;
    for (id, step) in ids.iter().zip(steps) {
        assert_eq!(h.job(&user, id).await.str("status"), "failed", "{step:?}");
        assert_eq!(refunds_of(&rows, id), 1, "{step:?}");
        assert!(model.calls(id).await.edit <= 1, "{step:?}");
        let open = h
            .app
            .store
            .attempts_of(&job_id(id))
            .await
            .expect("the job's attempts");
        assert!(
            open.iter().all(|a| a.open_day.is_none()),
            "{step:?}: reservations left open {open:?}"
        );
    }
    assert_eq!(h.account(&user).await.body["in_flight"], 0);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_orphaned_reservation_is_settled_from_saved_usage_or_kept_booked_without_it() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.funded_user(50).await;
    let with_usage = h
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    let without = h
        .submit_photo(&user, "b", samples::single_pet(), pet())
        .await;
    model
        .fault(json!({ "call": "any", "fault": "missing_usage", "job": without }))
        .await;
    for id in [&with_usage, &without] {
        let mut dying = h.processor(&model);
        dying.crash_at = Some(Step::AfterEdit);
        assert!(dying.process(&job_id(id)).await.is_err());
    }

    let summary = atelier_sweeper::handle(&h.app, later(16)).await;

    assert_eq!(summary.reservations_settled, 2, "{summary:?}");
    let settled = |id: &str| {
        let h = h.clone();
        let id = job_id(id);
        async move {
            h.app
                .store
                .attempts_of(&id)
                .await
                .expect("the job's attempts")
                .remove(0)
        }
    };
    let a = settled(&with_usage).await;
    assert!(
        a.settled_cost_micros.is_some_and(|c| c < a.reserved_micros),
        "real cost from usage: {a:?}"
    );
    assert_eq!(a.settled_by.as_deref(), Some("sweeper"));
    let b = settled(&without).await;
    assert_eq!(
        b.settled_cost_micros,
        Some(b.reserved_micros),
        "no usage: the estimate stays booked"
    );
    let day = budget::day(&h.app, &a.day)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let attempts = h
        .app
        .store
        .attempts_of_day(&a.day)
        .await
        .expect("the day's attempts");
    let used: Micros = attempts.iter().filter_map(|a| a.settled_cost_micros).sum();
    let reserved: Micros = attempts
        .iter()
        .filter(|a| a.open_day.is_some())
        .map(|a| a.reserved_micros)
        .sum();
    assert_eq!(
        (used, reserved),
        (day.used_micros, day.reserved_micros),
        "the day's totals are the sum of its attempts"
    );
    let mine = h.user_day(&user).await.expect("the user's day item");
    assert_eq!(
        (mine.used_micros, mine.reserved_micros),
        (day.used_micros, day.reserved_micros),
        "the owner's share settles in step with the day (rule 12; their jobs are the day's only)"
    );
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_sweepers_and_a_consumer_racing_leave_every_job_terminal_and_refunded_at_most_once() {
    let h = Harness::isolated(|l| l.max_in_flight = 50).await;
    let model = StandIn::start().await;
    let user = h.funded_user(200).await;
    let mut ids = Vec::new();
    for i in 0..12 {
        let id = h
            .submit_photo(&user, &format!("k{i}"), samples::single_pet(), pet())
            .await;
        if i % 3 == 0 {
            // A consumer died holding this one.
            let mut dying = h.processor(&model);
            dying.crash_at = Some(if i % 2 == 0 {
                Step::AfterClaim
            } else {
                Step::AfterEdit
            });
            assert!(dying.process(&job_id(&id)).await.is_err());
        }
        ids.push(id);
    }

    let when = later(16);
    let (s1, s2, consumed) = tokio::join!(
        atelier_sweeper::handle(&h.app, when),
        atelier_sweeper::handle(&h.app, when),
        drain(&h, &model),
    );
    let _ = drain(&h, &model).await;
    let settle = atelier_sweeper::handle(&h.app, later(40)).await;

    // The sweepers run 16 minutes ahead, so a job the consumer claims during the race also
    // looks stuck to them: whichever side writes second loses cleanly.
    assert!(
        s1.stuck_failed + s2.stuck_failed >= 4,
        "every dead consumer's job was failed: {s1:?} {s2:?} {settle:?}"
    );
    assert!(consumed >= 8, "the queued jobs were processed ({consumed})");
    let rows = h.ledger(&user).await;
    for id in &ids {
        let job = h.job(&user, id).await;
        let status = job.str("status");
        assert!(
            ["succeeded", "failed"].contains(&status.as_str()),
            "{id} ended {status}"
        );
        let refunds = refunds_of(&rows, id);
        assert_eq!(
            refunds,
            usize::from(status == "failed"),
            "{id}: a refund only for a failed job, once"
        );
        assert!(model.calls(id).await.edit <= 1);
    }
    assert_eq!(h.account(&user).await.body["in_flight"], 0);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn cancel_refunds_a_queued_job_once_and_refuses_a_processing_one() {
    let h = Harness::new().await;
    let user = h.funded_user(50).await;
    let queued = h
        .submit_photo(&user, "a", samples::single_pet(), pet())
        .await;
    let busy = h
        .submit_photo(&user, "b", samples::single_pet(), pet())
        .await;
    let before = h.balance(&user).await;
    assert!(
        h.app
            .store
            .claim(&job_id(&busy), &clock::format(clock::now()))
            .await
            .ok()
            .flatten()
            .is_some()
    );

    let first = h.cancel(&user, &queued).await;
    let repeat = h.cancel(&user, &queued).await;
    let refused = h.cancel(&user, &busy).await;
    let stranger = h.cancel(&h.user(), &queued).await;

    assert_eq!(
        (first.status, first.str("status")),
        (StatusCode::OK, "canceled".to_owned()),
        "{first:?}"
    );
    assert_eq!(
        (repeat.status, repeat.str("status")),
        (StatusCode::OK, "canceled".to_owned())
    );
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::CONFLICT, "NOT_CANCELABLE")
    );
    assert_eq!(refused.body["state"], "processing");
    assert_eq!(stranger.status, StatusCode::NOT_FOUND);
    assert_eq!(refunds_of(&h.ledger(&user).await, &queued), 1);
    assert_eq!(
        h.balance(&user).await,
        before + first.body["credits"].as_i64().expect("the job's price")
    );
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_racing_a_claim_has_exactly_one_winner_and_refunds_only_when_cancel_wins() {
    let mut config = Harness::config();
    config.limits.max_in_flight = 100;
    let h = Harness::with_config(config).await;
    let user = h.funded_user(500).await;
    let mut ids = Vec::new();
    for i in 0..16 {
        ids.push(
            h.submit_photo(&user, &format!("race{i}"), samples::single_pet(), pet())
                .await,
        );
    }

    let races = join_all(ids.iter().map(|id| {
        let (h, user, id) = (h.clone(), user.clone(), id.clone());
        tokio::spawn(async move {
            let (jid, stamp) = (job_id(&id), clock::format(clock::now()));
            let claim = h.app.store.claim(&jid, &stamp);
            let (cancel, claim) = tokio::join!(h.cancel(&user, &id), claim);
            (id, cancel, claim.ok().flatten().is_some())
        })
    }))
    .await;

    let rows = h.ledger(&user).await;
    for race in races {
        let (id, cancel, claimed) = race.unwrap_or_else(|e| panic!("{e}"));
        let canceled = cancel.status == StatusCode::OK;
        assert!(
            canceled != claimed,
            "{id}: exactly one wins (cancel {:?}, claimed {claimed})",
            cancel.status
        );
        assert_eq!(refunds_of(&rows, &id), usize::from(canceled), "{id}");
        let job = h
            .app
            .store
            .get_job(&job_id(&id))
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("job"));
        assert_eq!(
            job.status(),
            if canceled {
                JobState::Canceled
            } else {
                JobState::Processing
            }
        );
    }
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_sweep_over_ten_thousand_jobs_reads_only_the_twenty_that_need_action() {
    let h = Harness::isolated(|l| l.max_in_flight = 100).await;
    let user = h.funded_user(500).await;
    let mut broken = h.app.config.clone();
    broken.resources.queue_url = format!("{}-missing", broken.resources.queue_url);
    let broken = Harness::with_config(broken).await;
    let template_id = broken
        .submit_photo(&user, "template", samples::single_pet(), pet())
        .await;
    let template = h
        .app
        .store
        .get_job(&job_id(&template_id))
        .await
        .ok()
        .flatten()
        .map(JobItem::from)
        .unwrap_or_else(|| panic!("job"));
    // 9,980 finished jobs of other users: what a busy table holds, none for the sweeper.
    let mut finished = Vec::new();
    for i in 0..9_980 {
        let mut j = template.clone();
        let key = atelier_shared::domain::IdempotencyKey::parse(&format!("bulk{i}"))
            .unwrap_or_else(|| panic!("key"));
        j.user_id = h.user();
        j.job_id = JobId::derive(&j.user_id, atelier_shared::domain::Operation::Edit, &key);
        j.status = JobState::Succeeded;
        j.sweep_state = None;
        j.sweep_at = None;
        finished.push(j);
    }
    atelier_tests::put_jobs(&h, &finished).await;
    // 20 that need action: 9 queued whose send failed, 11 stuck in processing (the template
    // among them).
    for i in 0..9 {
        broken
            .submit_photo(&user, &format!("q{i}"), samples::single_pet(), pet())
            .await;
    }
    for i in 0..10 {
        let id = broken
            .submit_photo(&user, &format!("p{i}"), samples::single_pet(), pet())
            .await;
        assert!(
            h.app
                .store
                .claim(&job_id(&id), &clock::format(clock::now()))
                .await
                .ok()
                .flatten()
                .is_some()
        );
    }
    let _ = h
        .app
        .store
        .claim(&job_id(&template_id), &clock::format(clock::now()))
        .await;

    let summary = atelier_sweeper::handle(&h.app, later(16)).await;

    assert_eq!(summary.items_read, 20, "{summary:?}");
    assert_eq!(summary.requeued + summary.stuck_failed, 20, "{summary:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_processing_job_survives_a_sweep_before_the_threshold_and_its_consumer_finishes_it() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let mut dying = h.processor(&model);
    dying.crash_at = Some(Step::AfterClaim);
    let _ = dying.process(&job_id(&id)).await;

    let summary = atelier_sweeper::handle(&h.app, later(14)).await;

    assert_eq!(summary.stuck_failed, 0);
    assert_eq!(h.job(&user, &id).await.str("status"), "processing");
    assert!(matches!(
        h.processor(&model).process(&job_id(&id)).await,
        Ok(Outcome::NotClaimed)
    ));
}

/// A backlog: `BACKLOG_JOBS` jobs (default 40; the README gives the 200-job command) queued
/// at once behind a stand-in model that takes seconds per call (check 0.7 s, edit 2 s, review
/// 0.7 s), two consumers taking the queue's messages as the event source would, and the
/// sweeper ticking all along on a compressed clock tied to progress: each job finished moves it
/// 15 min / `BACKLOG_JOBS` forward (and, while both consumers find the queue empty, 30 s per tick), so
/// the backlog's tail waits about 15 sweeper-minutes whatever the job count and the machine's
/// speed — three times as long as the old dispatch limit let a job wait. One job's send is
/// dropped on the wire (SQS answers 500 to every attempt), so only the sweeper can ring it.
/// Every `SendMessage` that reaches the queue is counted on the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_healthy_backlog_is_delivered_in_full_with_at_most_three_messages_per_job_and_a_dropped_send_recovered()
 {
    use atelier_wire_proxy::{FaultKind, FaultPlan, Service};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let n: usize = std::env::var("BACKLOG_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let clean = Harness::isolated(|l| l.max_in_flight = 100_000).await;
    let (h, proxy) = clean.through_wire(None).await;
    let model = StandIn::start().await;
    for (call, ms) in [("check", 700), ("edit", 2_000), ("review", 700)] {
        model
            .fault(json!({ "call": call, "fault": "latency_ms", "ms": ms }))
            .await;
    }
    let user = h.user();
    h.fund_to(&user, 4 * n as i64 + 10).await;
    let original = h.upload(&user, "original", samples::single_pet()).await;
    let body = json!({ "style": "needle_felt", "target": "pet", "original_asset_id": original });

    let started = std::time::Instant::now();
    let mut ids = Vec::new();
    let dropped_at = n / 2;
    for i in 0..n {
        if i == dropped_at {
            proxy.set_plan(Some(
                FaultPlan::new(13)
                    .rate(FaultKind::InternalError, 1.0)
                    .only(["sqs:SendMessage"]),
            ));
        }
        let r = h.submit(&user, Some(&format!("backlog-{i}")), &body).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{r:?}");
        ids.push(r.str("id"));
        if i == dropped_at {
            proxy.set_plan(None);
        }
    }
    let dropped = ids[dropped_at].clone();
    let refused_sends = proxy
        .faults()
        .iter()
        .filter(|f| f.operation.name == "SendMessage")
        .count();
    assert!(refused_sends > 0, "the dropped job's send was refused");
    let submitted = clock::now();

    // Two consumers, as the event source's maximum concurrency.
    let stop = Arc::new(AtomicBool::new(false));
    // Consumers whose last poll found the queue empty.
    let idle = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (processor, sqs, url, stop, idle) = (
                h.processor(&model),
                h.clients.sqs.clone(),
                h.app.config.resources.queue_url.clone(),
                stop.clone(),
                idle.clone(),
            );
            tokio::spawn(async move {
                let (mut taken, mut was_idle) = (0usize, false);
                while !stop.load(Ordering::Relaxed) {
                    let k = atelier_local::poller::poll_once(&processor, &sqs, &url, 1)
                        .await
                        .unwrap_or_else(|e| panic!("poll: {e}"));
                    taken += k;
                    if (k == 0) != was_idle {
                        was_idle = k == 0;
                        if was_idle {
                            idle.fetch_add(1, Ordering::SeqCst);
                        } else {
                            idle.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                }
                taken
            })
        })
        .collect();

    // The sweeper on the compressed clock, until nothing is in flight.
    let step = Duration::from_secs(15 * 60) / u32::try_from(n).unwrap_or(u32::MAX);
    let mut ahead = Duration::ZERO;
    let mut finished = 0usize;
    let mut swept = Vec::new();
    let give_up = Duration::from_secs(30 + 15 * n as u64);
    loop {
        let in_flight = h.account(&user).await.body["in_flight"]
            .as_u64()
            .unwrap_or_else(|| panic!("in_flight"));
        let now_finished = n.saturating_sub(in_flight as usize);
        if now_finished > finished {
            ahead += step * u32::try_from(now_finished - finished).unwrap_or(0);
            finished = now_finished;
        } else if idle.load(Ordering::SeqCst) == 2 {
            // Nothing to take: only the sweeper can help, and time passes for it.
            ahead += Duration::from_secs(30);
        }
        if in_flight == 0 {
            break;
        }
        assert!(
            started.elapsed() < give_up,
            "{in_flight} jobs still in flight after {:?}",
            started.elapsed()
        );
        swept.push(atelier_sweeper::handle(&h.app, submitted + ahead).await);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut taken = 0;
    for c in consumers {
        taken += c.await.unwrap_or_else(|e| panic!("{e}"));
    }
    let wall = started.elapsed();

    let mut states: std::collections::BTreeMap<String, usize> = Default::default();
    for id in &ids {
        let job = clean.job(&user, id).await;
        let state = match job.body["failure"]["code"].as_str() {
            Some(code) => format!("failed {code}"),
            None => job.str("status"),
        };
        *states.entry(state).or_default() += 1;
        assert!(
            model.calls(id).await.edit <= 1,
            "{id}: one paid edit per charge"
        );
    }
    let sends = proxy.counts().get(Service::Sqs, "SendMessage") as usize - refused_sends;
    let per_job = sends as f64 / n as f64;
    let requeued: u64 = swept.iter().map(|s| s.requeued).sum();
    let deadline_failed: u64 = swept.iter().map(|s| s.deadline_failed).sum();
    println!(
        "backlog: {n} jobs, {sends} messages sent ({per_job:.2} per job; {requeued} re-sends), \
         {taken} messages taken, {} sweeps, sweeper clock {:.1} min ahead, wall {:.1} s, states {states:?}",
        swept.len(),
        ahead.as_secs_f64() / 60.0,
        wall.as_secs_f64()
    );

    assert_eq!(
        states.get("succeeded"),
        Some(&n),
        "every job delivered: {states:?}"
    );
    assert_eq!(deadline_failed, 0);
    assert!(
        ahead > Duration::from_secs(10 * 60),
        "the tail waited longer than the old dispatch limit allowed ({ahead:?})"
    );
    assert!(
        per_job <= 3.0,
        "{sends} messages for {n} jobs ({per_job:.2} per job)"
    );
    let dropped_job = clean
        .app
        .store
        .get_job(&job_id(&dropped))
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("the dropped job"));
    assert_eq!(
        dropped_job.status(),
        JobState::Succeeded,
        "the dropped send was recovered"
    );
    assert!(dropped_job.dispatch.count >= 2, "{dropped_job:?}");
    assert_eq!(clean.account(&user).await.body["in_flight"], 0);
    clean.assert_audit_clean().await;
}

/// A queued job of a new user, claimed (processing) as a consumer would.
async fn claimed_job(h: &Harness, name: &str) -> (atelier_shared::domain::UserId, Job) {
    let user = h.funded_user(20).await;
    let id = h
        .submit_photo(&user, name, samples::single_pet(), pet())
        .await;
    let job = h
        .app
        .store
        .claim(&job_id(&id), &clock::format(clock::now()))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the queued job is claimed"));
    (user, job)
}

/// A write joined to a refund: a condition check on an item that does (`holds`) or does not
/// exist (the job's debit row, or a row that was never written), as a budget settlement still
/// to make or already made by another settler.
fn joined_condition(h: &Harness, job: &Job, holds: bool) -> Vec<TransactWriteItem> {
    let row = if holds {
        reference::debit(&job.job_id)
    } else {
        format!("{}-settled-elsewhere", reference::debit(&job.job_id))
    };
    let check = ConditionCheck::builder()
        .table_name(&h.app.store.names().ledger_table)
        .key(
            "user_id",
            AttributeValue::S(job.user_id.as_str().to_owned()),
        )
        .key("ref", AttributeValue::S(row))
        .condition_expression("attribute_exists(#r)")
        .expression_attribute_names("#r", "ref")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    vec![TransactWriteItem::builder().condition_check(check).build()]
}

async fn fail_with(
    h: &Harness,
    job: &Job,
    joined: Vec<TransactWriteItem>,
) -> Result<FinishOutcome, atelier_shared::error::Error> {
    let failure = JobFailure::new(FailureCode::EditFailed);
    let now = clock::format(clock::now());
    h.app
        .store
        .fail_and_refund(job, JobState::Processing, &failure, &now, joined.into())
        .await
}

/// The consumer's refund joins its budget settlement; when the sweeper settled that
/// reservation first, the joined condition fails and the refund must still stand on its own
/// (mutation pass: `!` deleted in `with_extra` made this an error and stranded the charge).
#[tokio::test]
async fn a_refund_whose_joined_settlement_lost_to_the_sweeper_still_refunds_once() {
    let h = Harness::new().await;
    let (user, job) = claimed_job(&h, "lost-settle").await;
    let before = h.balance(&user).await;

    let outcome = fail_with(&h, &job, joined_condition(&h, &job, false)).await;

    assert_eq!(outcome.ok(), Some(FinishOutcome::Done));
    assert_eq!(h.balance(&user).await, before + job.credits.get());
    assert_eq!(refunds_of(&h.ledger(&user).await, job.job_id.as_str()), 1);
    let now = h.app.store.get_job(&job.job_id).await.ok().flatten();
    assert_eq!(now.map(|j| j.status()), Some(JobState::Failed));
    h.assert_audit_clean().await;
}

/// A refund row that is already there while the job is still processing is not "someone
/// else finished it": it is surfaced as an error and the job is left for the sweeper to
/// report (mutation pass: `&&` → `||` retried without the settlement and took it as done).
#[tokio::test]
async fn a_refund_row_written_behind_the_jobs_back_is_an_error_not_a_finished_job() {
    // A stack of its own: the bare row written here is no one else's audit's business.
    let h = Harness::isolated(|_| {}).await;
    let (user, job) = claimed_job(&h, "foreign-row").await;
    let before = h.balance(&user).await;
    h.clients
        .dynamodb
        .put_item()
        .table_name(&h.app.store.names().ledger_table)
        .item(attr::USER_ID, AttributeValue::S(user.as_str().to_owned()))
        .item(attr::REF, AttributeValue::S(reference::refund(&job.job_id)))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let outcome = fail_with(&h, &job, joined_condition(&h, &job, true)).await;

    assert!(
        matches!(outcome, Err(atelier_shared::error::Error::Corrupt { .. })),
        "{outcome:?}"
    );
    let now = h.app.store.get_job(&job.job_id).await.ok().flatten();
    assert_eq!(now.map(|j| j.status()), Some(JobState::Processing));
    // Refused whole: no credit given back, the job still counted in flight.
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.account(&user).await.body["in_flight"], 1);
}

#[tokio::test]
async fn a_reservation_left_open_without_a_stuck_job_is_settled_by_the_sweeper_at_its_estimate() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let now = clock::now();
    let job = JobId::parse(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ))
    .expect("a job id");
    let planned = ["edit".to_owned()];
    let req = budget::ReserveRequest {
        job: &job,
        user: &user,
        attempt: "01-edit",
        planned: &planned,
        estimate: Micros::new(40_000),
        sale_credits: atelier_shared::domain::Credits::new(4),
    };
    // A consumer reserved, then vanished before any call; no stuck job points at it.
    let budget::Reservation::Granted(paid) = budget::PaidAttempt::reserve(&h.app, &req, now)
        .await
        .expect("reserve")
    else {
        panic!("the reservation was refused");
    };
    drop(paid);

    let summary = atelier_sweeper::handle(&h.app, later(16)).await;

    assert_eq!(summary.reservations_settled, 1, "{summary:?}");
    let day = budget::day(&h.app, &budget::day_of(now))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        day.reserved_micros,
        Micros::ZERO,
        "nothing left open: {day:?}"
    );
    let a = h
        .app
        .store
        .get_attempt(&job, "01-edit")
        .await
        .expect("read")
        .expect("the attempt");
    assert_eq!(a.settled_by.as_deref(), Some("sweeper"), "{a:?}");
    assert_eq!(
        a.settled_cost_micros,
        Some(Micros::new(40_000)),
        "no call recorded: the estimate stays booked"
    );
}
