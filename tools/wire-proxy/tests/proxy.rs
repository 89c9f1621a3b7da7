//! The proxy between the real SDK clients and a real ministack (`cargo xtask test` starts it and
//! sets `AWS_ENDPOINT_URL`): exact counts, and every injected fault seen by the SDK as the typed
//! error real AWS would produce.

use std::time::{Duration, Instant};

use atelier_shared::adapters::aws::Clients;
use atelier_wire_proxy::{FaultKind, FaultPlan, Operation, Proxy, Service};
use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, Put,
    ScalarAttributeType, TransactWriteItem,
};

fn upstream() -> String {
    std::env::var("AWS_ENDPOINT_URL")
        .unwrap_or_else(|_| panic!("run with `cargo xtask test` (AWS_ENDPOINT_URL unset)"))
}

async fn proxy(plan: Option<FaultPlan>) -> Proxy {
    Proxy::start(&upstream(), plan)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The project's clients, pointed at the proxy.
async fn clients(proxy: &Proxy, retry: RetryConfig) -> Clients {
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(proxy.url())
        .retry_config(retry)
        .load()
        .await;
    Clients::new(&sdk)
}

fn name(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// A table keyed by `pk`, created straight on the emulator (not counted).
async fn table() -> String {
    let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let t = name("wp");
    ddb.create_table()
        .table_name(&t)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap_or_else(|e| panic!("{e}")),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    t
}

fn pk(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn tx_put(table: &str, key: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .item("pk", pk(key))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    TransactWriteItem::builder().put(put).build()
}

async fn exists(c: &Clients, table: &str, key: &str) -> bool {
    c.dynamodb
        .get_item()
        .table_name(table)
        .key("pk", pk(key))
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .item
        .is_some()
}

/// A seed whose first decisions for `op` are `want` (found by the proxy's own decision rule).
fn seed_for(plan: &FaultPlan, op: &Operation, want: &[Option<FaultKind>]) -> u64 {
    (0..100_000u64)
        .find(|&seed| {
            let p = FaultPlan {
                seed,
                ..plan.clone()
            };
            want.iter()
                .enumerate()
                .all(|(n, w)| p.decide(op, n as u64).error == *w)
        })
        .unwrap_or_else(|| panic!("no seed gives {want:?}"))
}

#[tokio::test]
async fn every_request_is_counted_by_service_and_operation_and_12_mb_streams_through() {
    let p = proxy(None).await;
    let c = clients(&p, RetryConfig::standard()).await;
    let t = table().await;
    let (queue, bucket) = (name("wpq"), name("wpb"));

    for k in ["a", "b", "c"] {
        c.dynamodb
            .put_item()
            .table_name(&t)
            .item("pk", pk(k))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    assert!(exists(&c, &t, "a").await && exists(&c, &t, "b").await);
    c.dynamodb
        .transact_write_items()
        .transact_items(tx_put(&t, "d"))
        .transact_items(tx_put(&t, "e"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let q = c
        .sqs
        .create_queue()
        .queue_name(&queue)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let url = q.queue_url().unwrap_or_default();
    for _ in 0..2 {
        c.sqs
            .send_message()
            .queue_url(url)
            .message_body("{}")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
    c.s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let big: Vec<u8> = (0..12 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    c.s3.put_object()
        .bucket(&bucket)
        .key("users/u/photo.jpg")
        .body(big.clone().into())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let head =
        c.s3.head_object()
            .bucket(&bucket)
            .key("users/u/photo.jpg")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(head.content_length(), Some(big.len() as i64));
    let got =
        c.s3.get_object()
            .bucket(&bucket)
            .key("users/u/photo.jpg")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"))
            .body
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"))
            .into_bytes();
    assert!(
        got.as_ref() == big.as_slice(),
        "12 MB round trip through the proxy"
    );
    let secret = name("wps");
    c.secrets
        .create_secret()
        .name(&secret)
        .secret_string("sk-test")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let value = c
        .secrets
        .get_secret_value()
        .secret_id(&secret)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value.secret_string(), Some("sk-test"));

    let n = p.counts();
    let expect = [
        (Service::DynamoDb, "PutItem", 3),
        (Service::DynamoDb, "GetItem", 2),
        (Service::DynamoDb, "TransactWriteItems", 1),
        (Service::Sqs, "CreateQueue", 1),
        (Service::Sqs, "SendMessage", 2),
        (Service::S3, "CreateBucket", 1),
        (Service::S3, "PutObject", 1),
        (Service::S3, "HeadObject", 1),
        (Service::S3, "GetObject", 1),
        (Service::SecretsManager, "CreateSecret", 1),
        (Service::SecretsManager, "GetSecretValue", 1),
    ];
    for (service, op, want) in expect {
        assert_eq!(n.get(service, op), want, "{service}:{op} in {n}");
    }
    assert_eq!(n.total(), 15, "{n}");
    assert_eq!(n.service(Service::DynamoDb), 6);

    // The same figures over HTTP, for a proxy run as its own process.
    let body: serde_json::Value = reqwest::get(format!("{}/_proxy/counts", p.url()))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body["dynamodb"]["TransactWriteItems"], 1, "{body}");
    assert_eq!(body["s3"]["PutObject"], 1, "{body}");

    let before = p.counts();
    assert!(exists(&c, &t, "d").await);
    assert_eq!(p.counts().since(&before).total(), 1);
    p.reset();
    assert_eq!(p.counts().total(), 0);
    assert!(p.faults().is_empty());
}

#[tokio::test]
async fn a_conflict_is_a_transaction_canceled_exception_with_a_transaction_conflict_per_item() {
    let plan = FaultPlan::new(1)
        .rate(FaultKind::TransactionConflict, 1.0)
        .only(["TransactWriteItems"]);
    let p = proxy(Some(plan)).await;
    let c = clients(&p, RetryConfig::standard()).await;
    let t = table().await;

    let err = c
        .dynamodb
        .transact_write_items()
        .transact_items(tx_put(&t, "x"))
        .transact_items(tx_put(&t, "y"))
        .send()
        .await
        .err()
        .unwrap_or_else(|| panic!("the conflict reaches the caller"));

    let canceled = err
        .as_service_error()
        .and_then(|e| match e {
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c) => Some(c),
            _ => None,
        })
        .unwrap_or_else(|| panic!("typed TransactionCanceledException: {err:?}"));
    let codes: Vec<_> = canceled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or_default())
        .collect();
    assert_eq!(codes, ["TransactionConflict", "TransactionConflict"]);
    assert_eq!(
        p.counts().get(Service::DynamoDb, "TransactWriteItems"),
        1,
        "the SDK does not retry a cancellation (the code's own policy does)"
    );
    assert!(!exists(&c, &t, "x").await, "nothing was written");
    assert_eq!(
        p.fault_counts()
            .get(&(
                FaultKind::TransactionConflict,
                Operation::new(Service::DynamoDb, "TransactWriteItems")
            ))
            .copied(),
        Some(1)
    );
}

#[tokio::test]
async fn throttling_is_retried_by_the_sdk_and_surfaces_typed_when_it_persists() {
    let t = table().await;
    let put = Operation::new(Service::DynamoDb, "PutItem");
    let base = FaultPlan::new(0)
        .rate(FaultKind::Throttling, 0.5)
        .only(["PutItem"]);
    // Throttled once, then through: the standard retry hides it.
    let seed = seed_for(&base, &put, &[Some(FaultKind::Throttling), None]);
    let p = proxy(Some(FaultPlan { seed, ..base })).await;
    let c = clients(&p, RetryConfig::standard()).await;
    c.dynamodb
        .put_item()
        .table_name(&t)
        .item("pk", pk("once"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("retried after the throttle: {e:?}"));
    assert_eq!(p.counts().get(Service::DynamoDb, "PutItem"), 2);
    assert_eq!(p.faults().len(), 1);

    // Throttled every time: three attempts, then the typed error.
    for (kind, check) in [
        (
            FaultKind::Throttling,
            (|e: &aws_sdk_dynamodb::operation::put_item::PutItemError| e.is_throttling_exception())
                as fn(&_) -> bool,
        ),
        (FaultKind::ProvisionedThroughputExceeded, |e| {
            e.is_provisioned_throughput_exceeded_exception()
        }),
        (FaultKind::InternalError, |e| e.is_internal_server_error()),
    ] {
        p.set_plan(Some(FaultPlan::new(3).rate(kind, 1.0).only(["PutItem"])));
        p.reset();
        let err = c
            .dynamodb
            .put_item()
            .table_name(&t)
            .item("pk", pk("never"))
            .send()
            .await
            .err()
            .unwrap_or_else(|| panic!("{kind} persists"));
        let service = err
            .as_service_error()
            .unwrap_or_else(|| panic!("{kind}: a service error: {err:?}"));
        assert!(check(service), "{kind}: {service:?}");
        assert_eq!(
            p.counts().get(Service::DynamoDb, "PutItem"),
            3,
            "{kind}: the standard retry makes three attempts"
        );
    }
}

#[tokio::test]
async fn sqs_and_s3_faults_look_like_theirs() {
    let p = proxy(None).await;
    let c = clients(&p, RetryConfig::disabled()).await;
    let (queue, bucket) = (name("wpq"), name("wpb"));
    let url = c
        .sqs
        .create_queue()
        .queue_name(&queue)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .queue_url
        .unwrap_or_default();
    c.s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    p.set_plan(Some(FaultPlan::new(1).rate(FaultKind::Throttling, 1.0)));
    let err = c
        .sqs
        .send_message()
        .queue_url(&url)
        .message_body("{}")
        .send()
        .await
        .err()
        .unwrap_or_else(|| panic!("throttled"));
    assert!(
        err.as_service_error()
            .is_some_and(|e| e.is_request_throttled()),
        "{err:?}"
    );
    let err =
        c.s3.put_object()
            .bucket(&bucket)
            .key("k")
            .body(b"x".to_vec().into())
            .send()
            .await
            .err()
            .unwrap_or_else(|| panic!("slowed down"));
    assert_eq!(err.code(), Some("SlowDown"), "{err:?}");
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(503));
    let err =
        c.s3.head_object()
            .bucket(&bucket)
            .key("k")
            .send()
            .await
            .err()
            .unwrap_or_else(|| panic!("slowed down"));
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(503));

    p.set_plan(Some(FaultPlan::new(1).rate(FaultKind::InternalError, 1.0)));
    let err = c
        .sqs
        .send_message()
        .queue_url(&url)
        .message_body("{}")
        .send()
        .await
        .err()
        .unwrap_or_else(|| panic!("500"));
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(500));
    assert_eq!(err.code(), Some("InternalError"), "{err:?}");
    let err =
        c.s3.get_object()
            .bucket(&bucket)
            .key("k")
            .send()
            .await
            .err()
            .unwrap_or_else(|| panic!("500"));
    assert_eq!(err.code(), Some("InternalError"), "{err:?}");

    // Nothing reached the emulator: the queue is empty.
    p.set_plan(None);
    let got = c
        .sqs
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(got.messages().is_empty());
    let kinds: Vec<_> = p.faults().iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            FaultKind::Throttling,
            FaultKind::Throttling,
            FaultKind::Throttling,
            FaultKind::InternalError,
            FaultKind::InternalError
        ]
    );
}

#[tokio::test]
async fn a_dropped_connection_after_forwarding_leaves_the_write_applied() {
    let t = table().await;
    let plan = FaultPlan::new(5)
        .rate(FaultKind::DropAfterForward, 1.0)
        .only(["PutItem"]);
    let p = proxy(Some(plan)).await;

    // Without retries the caller sees a transport error; the item is there all the same.
    let c = clients(&p, RetryConfig::disabled()).await;
    let err = c
        .dynamodb
        .put_item()
        .table_name(&t)
        .item("pk", pk("ghost"))
        .send()
        .await
        .err()
        .unwrap_or_else(|| panic!("the connection was dropped"));
    assert!(
        matches!(err, aws_sdk_dynamodb::error::SdkError::DispatchFailure(_)),
        "{err:?}"
    );
    assert!(exists(&c, &t, "ghost").await, "the write happened");
    // The fault says what the caller never heard: the emulator's 200.
    let dropped = p.faults();
    assert_eq!(
        dropped
            .iter()
            .map(|f| (f.kind, f.upstream_status))
            .collect::<Vec<_>>(),
        [(FaultKind::DropAfterForward, Some(200))]
    );

    // With the standard retry the SDK sends it again: a conditional put then fails on its
    // own first write — the case the code's conditions must absorb.
    let put = Operation::new(Service::DynamoDb, "PutItem");
    let base = FaultPlan::new(0)
        .rate(FaultKind::DropAfterForward, 0.5)
        .only(["PutItem"]);
    let seed = seed_for(&base, &put, &[Some(FaultKind::DropAfterForward), None]);
    p.set_plan(Some(FaultPlan { seed, ..base }));
    p.reset();
    let c = clients(&p, RetryConfig::standard()).await;
    let err = c
        .dynamodb
        .put_item()
        .table_name(&t)
        .item("pk", pk("once"))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await
        .err()
        .unwrap_or_else(|| panic!("the retry meets the first write"));
    assert!(
        err.as_service_error()
            .is_some_and(|e| e.is_conditional_check_failed_exception()),
        "{err:?}"
    );
    assert_eq!(p.counts().get(Service::DynamoDb, "PutItem"), 2);
    assert!(exists(&c, &t, "once").await);
}

#[tokio::test]
async fn the_request_that_trips_the_wire_never_reaches_the_emulator_and_says_so() {
    let t = table().await;
    let p = proxy(None).await;
    let c = clients(&p, RetryConfig::disabled()).await;
    let put = |key: &'static str| {
        c.dynamodb
            .put_item()
            .table_name(&t)
            .item("pk", pk(key))
            .send()
    };
    let mut tripped = p.trip_after(3);
    put("first").await.unwrap_or_else(|e| panic!("{e:?}"));
    put("second").await.unwrap_or_else(|e| panic!("{e:?}"));
    assert!(tripped.try_recv().is_err(), "not yet");

    // The third is held: the caller gives up on it (dies) once the wire says it tripped.
    tokio::select! {
        r = put("third") => panic!("the third put returned: {r:?}"),
        fired = &mut tripped => assert!(fired.is_ok()),
    }
    assert!(exists(&c, &t, "second").await);
    assert!(!exists(&c, &t, "third").await, "never forwarded");
    // The wire is spent: what follows is forwarded.
    put("fourth").await.unwrap_or_else(|e| panic!("{e:?}"));
    assert!(exists(&c, &t, "fourth").await);
    // Disarmed before it trips: nothing is held.
    let _unfired = p.trip_after(1);
    p.disarm();
    put("fifth").await.unwrap_or_else(|e| panic!("{e:?}"));
}

#[tokio::test]
async fn latency_is_added_before_forwarding() {
    let t = table().await;
    let plan = FaultPlan::new(9)
        .rate(FaultKind::Latency, 1.0)
        .latency(Duration::from_millis(300))
        .only(["GetItem"]);
    let p = proxy(Some(plan)).await;
    let c = clients(&p, RetryConfig::standard()).await;
    let started = Instant::now();
    assert!(!exists(&c, &t, "nothing").await);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(p.faults().first().map(|f| f.kind), Some(FaultKind::Latency));
}

#[tokio::test]
async fn the_same_seed_replays_the_same_fault_sequence() {
    let t = table().await;
    let plan = |seed| {
        FaultPlan::new(seed)
            .rate(FaultKind::TransactionConflict, 0.3)
            .rate(FaultKind::Throttling, 0.1)
            .rate(FaultKind::InternalError, 0.1)
            .rate(FaultKind::Latency, 0.2)
            .latency(Duration::from_millis(2))
    };
    let p = proxy(Some(plan(77))).await;
    let c = clients(&p, RetryConfig::disabled()).await;
    let run = |round: u32| {
        let (c, t) = (c.clone(), t.clone());
        async move {
            let mut outcomes = Vec::new();
            for i in 0..30 {
                let tx = c
                    .dynamodb
                    .transact_write_items()
                    .transact_items(tx_put(&t, &format!("r{round}-{i}")))
                    .send()
                    .await;
                let get = c
                    .dynamodb
                    .get_item()
                    .table_name(&t)
                    .key("pk", pk("r"))
                    .send()
                    .await;
                outcomes.push((
                    tx.err().and_then(|e| e.code().map(str::to_owned)),
                    get.err().and_then(|e| e.code().map(str::to_owned)),
                ));
            }
            outcomes
        }
    };
    let first = run(1).await;
    let faults_first: Vec<_> = p
        .faults()
        .into_iter()
        .map(|f| (f.request, f.operation, f.kind))
        .collect();
    assert!(faults_first.len() > 10, "{faults_first:?}");

    p.reset();
    let second = run(2).await;
    let faults_second: Vec<_> = p
        .faults()
        .into_iter()
        .map(|f| (f.request, f.operation, f.kind))
        .collect();
    assert_eq!(first, second, "the callers saw the same errors");
    assert_eq!(faults_first, faults_second);

    p.set_plan(Some(plan(78)));
    p.reset();
    let third = run(3).await;
    assert_ne!(first, third, "another seed, another schedule");

    // A plan set over HTTP behaves the same.
    let res = reqwest::Client::new()
        .put(format!("{}/_proxy/plan", p.url()))
        .json(&plan(77))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status(), 204);
    let res = reqwest::Client::new()
        .post(format!("{}/_proxy/reset", p.url()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status(), 204);
    assert_eq!(run(4).await, first);
    let faults: serde_json::Value = reqwest::get(format!("{}/_proxy/faults", p.url()))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        faults["injected"].as_array().map(Vec::len),
        Some(faults_first.len())
    );
}
