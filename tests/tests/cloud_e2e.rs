//! End to end against the local cloud: the release zips deployed by the CDK app to ministack
//! (`cargo xtask cloud-test` deploys, then runs this with `--ignored`). Everything a user does
//! goes through the deployed HTTP API with a token from the dev issuer; the operator steps use
//! what an operator has in AWS (the Lambda and SQS APIs, `atelier-admin` on the deployed
//! tables). Ignored by default: it needs the deployment, which `cloud-test` describes in
//! `CLOUD_E2E_*` variables.

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant};

use atelier_shared::store::schema::attr;
use serde_json::{Value, json};

type Res<T> = Result<T, Box<dyn Error>>;

/// Longest wait for a job to finish (a job takes well under a second here; cold starts and a
/// busy machine are the margin).
const JOB_LIMIT: Duration = Duration::from_secs(120);

fn var(name: &str) -> Res<String> {
    std::env::var(name)
        .map_err(|_| format!("{name} is not set: run `cargo xtask cloud-test`").into())
}

struct Cloud {
    http: reqwest::Client,
    api: String,
    stand_in: String,
    token: String,
    outputs: BTreeMap<String, String>,
}

/// A reply: status, headers we look at, JSON body (`Null` when there is none).
#[derive(Debug)]
struct Reply {
    status: u16,
    location: Option<String>,
    replayed: Option<String>,
    body: Value,
}

impl Reply {
    /// A string field of the body; panics when it is absent, so two missing values never
    /// compare equal.
    fn str(&self, field: &str) -> String {
        self.body[field]
            .as_str()
            .unwrap_or_else(|| panic!("no string {field:?} in the reply: {self:?}"))
            .to_owned()
    }
}

impl Cloud {
    async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Res<Reply> {
        let url = format!("{}{path}", self.api);
        let mut req = match method {
            "GET" => self.http.get(&url),
            "POST" => self.http.post(&url),
            "DELETE" => self.http.delete(&url),
            other => return Err(format!("method {other}").into()),
        }
        .bearer_auth(&self.token);
        if let Some(k) = key {
            req = req.header("idempotency-key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req.send().await?;
        let status = res.status().as_u16();
        let header = |n: &str| {
            res.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (location, replayed) = (header("location"), header("idempotent-replayed"));
        let text = res.text().await?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .map_err(|e| format!("{method} {path}: {status} {text:?}: {e}"))?
        };
        Ok(Reply {
            status,
            location,
            replayed,
            body,
        })
    }

    async fn get(&self, path: &str) -> Res<Reply> {
        self.call("GET", path, None, None).await
    }

    async fn job(&self, id: &str) -> Res<Reply> {
        let r = self.get(&format!("/v1/edits/{id}")).await?;
        assert_eq!(r.status, 200, "GET job {id}: {r:?}");
        Ok(r)
    }

    /// Polls until the job leaves `queued`/`processing`.
    async fn finished(&self, id: &str) -> Res<Reply> {
        let started = Instant::now();
        loop {
            let r = self.job(id).await?;
            let state = r.str("status");
            if !matches!(state.as_str(), "queued" | "processing") {
                return Ok(r);
            }
            if started.elapsed() > JOB_LIMIT {
                return Err(format!("job {id} still {state} after {JOB_LIMIT:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn submit(&self, key: &str, body: &Value) -> Res<Reply> {
        self.call("POST", "/v1/edits", Some(key), Some(body)).await
    }

    /// `GET /_stand-in/calls` for one job: (edit, check, review) calls. Parsed into the
    /// server's own `CallCounts`, so a body of another shape is an error, never zero calls.
    async fn calls(&self, job: &str) -> Res<(u64, u64, u64)> {
        let c: atelier_model_server::CallCounts = self
            .http
            .get(format!("{}/_stand-in/calls", self.stand_in))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let n = c.job(job);
        Ok((n.edit, n.check, n.review))
    }

    fn output(&self, key: &str) -> Res<String> {
        self.outputs
            .get(key)
            .cloned()
            .ok_or_else(|| format!("stack output {key} missing").into())
    }

    /// `atelier-admin --stack NAME`, as an operator runs it: the stack's outputs name the
    /// tables, queue and bucket; no ATELIER_* variable is passed but the one that lets the
    /// test's loopback webhook receiver be added (as in every local run).
    fn admin(&self, args: &[&str]) -> Res<std::process::Output> {
        let stack = var("CLOUD_E2E_STACK")?;
        let mut command = std::process::Command::new(var("CLOUD_E2E_ADMIN_BIN")?);
        for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("ATELIER_")) {
            command.env_remove(name);
        }
        let out = command
            .args(["--stack", &stack])
            .args(args)
            .env("ATELIER_WEBHOOK_PRIVATE_ADDRESSES", "allow")
            .output()?;
        eprintln!(
            "atelier-admin --stack {stack} {}: {}\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(out)
    }
}

/// The operator's AWS (the account's root on the local cloud).
async fn operator_aws() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// The one deployed function whose name holds `part` (`Api`, `Consumer`, `Sweeper`: the
/// construct ids).
async fn function_named(lambda: &aws_sdk_lambda::Client, part: &str) -> Res<String> {
    let all = lambda.list_functions().send().await?;
    let names: Vec<&str> = all
        .functions()
        .iter()
        .filter_map(|f| f.function_name())
        .filter(|n| n.contains(part))
        .collect();
    match names[..] {
        [one] => Ok(one.to_owned()),
        _ => Err(format!("expected one function named *{part}*, found {names:?}").into()),
    }
}

/// Invokes the sweeper through the Lambda API with `event`, as its schedule (or the daily
/// audit's) does, and returns what it answered; a function error fails.
async fn invoke_sweeper(lambda: &aws_sdk_lambda::Client, event: Value) -> Res<Value> {
    let sweeper = function_named(lambda, "Sweeper").await?;
    let out = lambda
        .invoke()
        .function_name(&sweeper)
        .payload(aws_sdk_lambda::primitives::Blob::new(event.to_string()))
        .send()
        .await?;
    let payload = out
        .payload()
        .map(|p| p.as_ref().to_vec())
        .unwrap_or_default();
    let answer: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
    if let Some(error) = out.function_error() {
        return Err(format!("the sweeper failed ({error}): {answer}").into());
    }
    Ok(answer)
}

/// The minute's tick, as EventBridge sends it.
fn scheduled_event() -> Value {
    json!({
        "version": "0", "id": ulid::Ulid::new().to_string(), "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "000000000000", "time": "2026-12-01T00:00:00Z",
        "region": "us-east-1", "resources": [], "detail": {}
    })
}

/// Credentials of the role a deployed function runs with, assumed through STS (ministack
/// gives each function its role's assumed-role session the same way).
async fn role_credentials(
    aws: &aws_config::SdkConfig,
    lambda: &aws_sdk_lambda::Client,
    part: &str,
) -> Res<aws_sdk_sts::config::Credentials> {
    let function = function_named(lambda, part).await?;
    let config = lambda
        .get_function_configuration()
        .function_name(&function)
        .send()
        .await?;
    let role = config.role().ok_or("a function without a role")?;
    let out = aws_sdk_sts::Client::new(aws)
        .assume_role()
        .role_arn(role)
        .role_session_name("cloud-e2e")
        .send()
        .await?;
    let c = out.credentials().ok_or("no credentials from AssumeRole")?;
    Ok(aws_sdk_sts::config::Credentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_owned()),
        None,
        "cloud-e2e-assumed-role",
    ))
}

/// The error code of a refused call; a call that went through fails the test.
fn refusal<T: std::fmt::Debug, E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    what: &str,
    result: Result<T, E>,
) -> Res<String> {
    match result {
        Ok(out) => Err(format!("{what} went through: {out:?}").into()),
        Err(e) => Ok(e.code().unwrap_or("(no code)").to_owned()),
    }
}

async fn connect() -> Res<Cloud> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()?;
    let stack = var("CLOUD_E2E_STACK")?;
    let all: Value = serde_json::from_str(&std::fs::read_to_string(var("CLOUD_E2E_OUTPUTS")?)?)?;
    let outputs = all[&stack]
        .as_object()
        .ok_or("no outputs for the stack")?
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    // A user of its own per run, so a rerun against the same deployment starts clean too.
    let user = format!("e2e-{}", ulid::Ulid::new().to_string().to_lowercase());
    let issuer = var("CLOUD_E2E_ISSUER_URL")?;
    let t: Value = http
        .post(format!("{issuer}/token"))
        .json(&json!({ "user": user }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = t["token"]
        .as_str()
        .ok_or("no token from the dev issuer")?
        .to_owned();
    Ok(Cloud {
        http,
        api: var("CLOUD_E2E_API_URL")?,
        stand_in: var("CLOUD_E2E_STAND_IN_URL")?,
        token,
        outputs,
    })
}

fn decode(png: &[u8]) -> Res<image::RgbaImage> {
    Ok(image::load_from_memory(png)?.to_rgba8())
}

/// A repair of a delivered edit (`POST /v1/edits/{id}/repairs`): paid like the edit, a job of
/// its own that the consumer delivers, one edit call. Returns the repairs' job ids.
async fn repair(c: &Cloud, of: &str, original: &image::RgbaImage) -> Res<Vec<String>> {
    let key = ulid::Ulid::new().to_string();
    let ask = json!({ "instruction": "finer stitches on the ears" });
    let path = format!("/v1/edits/{of}/repairs");
    let r = c.call("POST", &path, Some(&key), Some(&ask)).await?;
    assert_eq!(r.status, 202, "{r:?}");
    let id = r.str("id");
    let replay = c.call("POST", &path, Some(&key), Some(&ask)).await?;
    assert_eq!(
        (replay.status, replay.str("id")),
        (200, id.clone()),
        "a retried repair is the same job: {replay:?}"
    );
    let done = c.finished(&id).await?;
    assert_eq!(done.str("status"), "succeeded", "{done:?}");
    assert_eq!(done.body["repair"]["parent_job_id"], of, "{done:?}");
    let url = done.body["result"]["url"].as_str().ok_or("no result url")?;
    let png = c
        .http
        .get(url)
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    assert_signed_by_the_deployment(&png, mime_of(&png)).await?;
    assert_eq!(
        decode(&png)?.dimensions(),
        original.dimensions(),
        "the repaired image has the photo's size"
    );
    assert_eq!(c.calls(&id).await?.0, 1, "one edit call for the repair");
    Ok(vec![id])
}

/// The deployed consumer's result carries content credentials that the official C2PA library
/// trusts under this run's signing CA (the key `cargo xtask cloud-test` stored in the stack's
/// secret), saying it was edited with AI by the deployment's model.
async fn assert_signed_by_the_deployment(image: &[u8], format: &str) -> Res<()> {
    let anchor = std::fs::read_to_string(var("CLOUD_E2E_SIGNING_ANCHOR")?)?;
    let verdict = &atelier_tests::credentials::official_read(&[(image, format)], &anchor).await[0];
    atelier_tests::credentials::assert_result_credentials(
        verdict,
        atelier_shared::domain::catalogue::DEFAULT_IMAGE_MODEL,
        "embroidery",
    );
    assert_eq!(verdict["issuer"], "Atelier (local cloud)", "{verdict:#}");
    Ok(())
}

fn mime_of(image: &[u8]) -> &'static str {
    match image.starts_with(b"\xff\xd8\xff") {
        true => "image/jpeg",
        false => "image/png",
    }
}

/// What a webhook receiver got: each body, and whether it came signed.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(bool, Value)>>>;

/// A webhook receiver on the loopback that answers `204` and keeps what it gets.
async fn webhook_receiver() -> Res<(String, Received)> {
    use atelier_shared::domain::webhooks::sign::{ID_HEADER, SIGNATURE_HEADER};

    let received = Received::default();
    let kept = received.clone();
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: http::HeaderMap, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let signed =
                    headers.contains_key(ID_HEADER) && headers.contains_key(SIGNATURE_HEADER);
                let event = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if let Ok(mut all) = kept.lock() {
                    all.push((signed, event));
                }
                http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok((url, received))
}

/// Sets attributes of a job item as the operator, on the deployed jobs table.
async fn set_job(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
    fields: &[(&str, &str)],
) -> Res<()> {
    use aws_sdk_dynamodb::types::AttributeValue;

    let mut update = ddb
        .update_item()
        .table_name(table)
        .key(attr::JOB_ID, AttributeValue::S(id.to_owned()))
        .condition_expression("attribute_exists(#id)")
        .expression_attribute_names("#id", attr::JOB_ID);
    let mut sets = Vec::new();
    for (i, (name, value)) in fields.iter().enumerate() {
        sets.push(format!("#f{i} = :v{i}"));
        update = update
            .expression_attribute_names(format!("#f{i}"), *name)
            .expression_attribute_values(format!(":v{i}"), AttributeValue::S((*value).to_owned()));
    }
    update
        .update_expression(format!("SET {}", sets.join(", ")))
        .send()
        .await?;
    Ok(())
}

/// How often a job was sent to the queue (`dispatch_count`, read consistently).
async fn dispatches(ddb: &aws_sdk_dynamodb::Client, table: &str, id: &str) -> Res<u64> {
    let count = job_attribute(ddb, table, id, attr::DISPATCH_COUNT).await?;
    let n = count.as_n().ok().and_then(|n| n.parse().ok());
    n.ok_or_else(|| format!("{} of {id} is {count:?}", attr::DISPATCH_COUNT).into())
}

/// One attribute of job `id`'s row, read consistently.
async fn job_attribute(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
    name: &str,
) -> Res<aws_sdk_dynamodb::types::AttributeValue> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(
            attr::JOB_ID,
            aws_sdk_dynamodb::types::AttributeValue::S(id.to_owned()),
        )
        .consistent_read(true)
        .send()
        .await?;
    let value = out.item().and_then(|i| i.get(name)).cloned();
    value.ok_or_else(|| format!("no {name} on {id}: {out:?}").into())
}

/// One trace id for job `id` in the API's (`job_created`), the consumer's (`message_done`)
/// and the sweeper's (`webhook_attempt` of its event) log lines, read where the local cloud
/// writes each run's output: a run started by API Gateway only in the function's CloudWatch
/// log group (its `LoggingConfig`, as on AWS), a run started by a queue or `Invoke` in
/// `ministack.log` (docs/local-aws.md).
async fn traced_through_every_function(
    c: &Cloud,
    aws: &aws_config::SdkConfig,
    id: &str,
) -> Res<()> {
    let ddb = aws_sdk_dynamodb::Client::new(aws);
    let table = c.output("JobsTableName")?;
    let value = job_attribute(&ddb, &table, id, attr::TRACE_ID).await?;
    let trace = value
        .as_s()
        .map_err(|v| format!("trace of {id} is {v:?}"))?;
    let api_group = api_log_group(aws).await?;
    let log = std::path::Path::new(&var("CLOUD_E2E_STATE")?).join("ministack.log");
    let event = format!("evt_{id}_succeeded");
    let wanted = [
        ("job_created", id),
        ("message_done", id),
        ("webhook_attempt", event.as_str()),
    ];
    // A function's line reaches the log when its invocation ends, which can be just after
    // the receiver got the POST: read again for up to a minute.
    let started = Instant::now();
    loop {
        let mut text = std::fs::read_to_string(&log)?;
        text.push_str(&group_text(aws, &api_group).await?);
        let missing = wanted.iter().find(|(name, key)| {
            !text
                .lines()
                .any(|l| l.contains(name) && l.contains(key) && l.contains(trace.as_str()))
        });
        let Some((name, key)) = missing else { break };
        if started.elapsed() > Duration::from_secs(60) {
            let at = format!("{} or log group {api_group}", log.display());
            return Err(format!("no {name} line of {key} with trace {trace} in {at}").into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "cloud e2e: trace {trace} of {id} in the API's, the consumer's and the sweeper's logs"
    );
    Ok(())
}

/// The log group the deployed API function writes to, as its `LoggingConfig` names it.
async fn api_log_group(aws: &aws_config::SdkConfig) -> Res<String> {
    let lambda = aws_sdk_lambda::Client::new(aws);
    let api = function_named(&lambda, "Api").await?;
    let config = lambda
        .get_function_configuration()
        .function_name(&api)
        .send()
        .await?;
    let group = config.logging_config().and_then(|l| l.log_group());
    group
        .map(str::to_owned)
        .ok_or_else(|| format!("{api} has no LoggingConfig.LogGroup").into())
}

/// Every message in log group `group`, a line each (every page of `FilterLogEvents`).
async fn group_text(aws: &aws_config::SdkConfig, group: &str) -> Res<String> {
    let logs = aws_sdk_cloudwatchlogs::Client::new(aws);
    let mut pages = logs
        .filter_log_events()
        .log_group_name(group)
        .into_paginator()
        .send();
    let mut text = String::new();
    while let Some(page) = pages.next().await {
        for event in page?.events() {
            text.push_str(event.message().unwrap_or_default());
            text.push('\n');
        }
    }
    Ok(text)
}

/// The sweeper's rounds on the deployed stack, each invoked through the Lambda API as the
/// schedule invokes it, with the event source paused and `queued` = [B, D, E] queued: B's
/// re-send falls due (its `sweep_at` moved back), D was created two days ago (past the queued
/// deadline), and E was claimed by a consumer that then died (the claim's own update, long
/// ago). One tick re-sends B, fails and refunds D and E, settles orphans, and delivers the
/// webhook events due; then the daily audit's pass finds nothing wrong.
async fn sweeper_rounds(c: &Cloud, lambda: &aws_sdk_lambda::Client, queued: [&str; 3]) -> Res<()> {
    let [b, d, e] = queued;
    let ddb = aws_sdk_dynamodb::Client::new(&operator_aws().await);
    let jobs = c.output("JobsTableName")?;
    let long_ago = atelier_shared::clock::format(
        atelier_shared::clock::now() - Duration::from_secs(2 * 86_400),
    );
    set_job(&ddb, &jobs, b, &[(attr::SWEEP_AT, &long_ago)]).await?;
    set_job(
        &ddb,
        &jobs,
        d,
        &[(attr::CREATED_AT, &long_ago), (attr::SWEEP_AT, &long_ago)],
    )
    .await?;
    set_job(
        &ddb,
        &jobs,
        e,
        &[
            (attr::STATUS, "processing"),
            (attr::STARTED_AT, &long_ago),
            (attr::UPDATED_AT, &long_ago),
            (attr::SWEEP_STATE, "processing"),
            (attr::SWEEP_AT, &long_ago),
        ],
    )
    .await?;

    let sent_before = dispatches(&ddb, &jobs, b).await?;
    let tick = invoke_sweeper(lambda, scheduled_event()).await?;
    eprintln!("cloud e2e: sweeper tick: {tick}");
    for field in ["errors", "send_failures", "refund_failures"] {
        assert_eq!(tick[field], 0, "{field} in the sweep: {tick}");
    }
    assert_eq!(
        dispatches(&ddb, &jobs, b).await?,
        sent_before + 1,
        "B was sent again, once"
    );
    for (id, code) in [(d, "DISPATCH_LIMIT"), (e, "TIMED_OUT")] {
        let job = c.job(id).await?;
        assert_eq!(
            (job.str("status"), job.body["failure"]["code"].as_str()),
            ("failed".to_owned(), Some(code)),
            "{job:?}"
        );
    }

    let audit = invoke_sweeper(lambda, json!({ "task": "audit" })).await?;
    assert_eq!(audit["offenders"], 0, "the scheduled audit: {audit}");
    assert!(audit["accounts"].as_u64() >= Some(1), "{audit}");
    Ok(())
}

/// The job queue's event source (the consumer's trigger, batch size 1), which an operator can
/// pause so that jobs stay queued for certain.
struct JobTrigger {
    lambda: aws_sdk_lambda::Client,
    uuid: String,
}

impl JobTrigger {
    async fn of(
        c: &Cloud,
        sqs: &aws_sdk_sqs::Client,
        lambda: &aws_sdk_lambda::Client,
    ) -> Res<JobTrigger> {
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(c.output("QueueUrl")?)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await?;
        let queue_arn = attrs
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .ok_or("no queue ARN")?;
        let mappings = lambda
            .list_event_source_mappings()
            .event_source_arn(queue_arn)
            .send()
            .await?;
        let [mapping] = mappings.event_source_mappings() else {
            return Err(format!(
                "expected one event source on the queue, found {:?}",
                mappings.event_source_mappings()
            )
            .into());
        };
        assert_eq!(mapping.batch_size(), Some(1));
        Ok(JobTrigger {
            lambda: lambda.clone(),
            uuid: mapping.uuid().ok_or("mapping without UUID")?.to_owned(),
        })
    }

    async fn set_enabled(&self, on: bool) -> Res<()> {
        let out = self
            .lambda
            .update_event_source_mapping()
            .uuid(&self.uuid)
            .enabled(on)
            .send()
            .await?;
        let want = if on { "Enabled" } else { "Disabled" };
        assert_eq!(out.state(), Some(want), "the job queue's event source");
        Ok(())
    }
}

#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_user_edits_a_photo_through_the_deployed_api() -> Res<()> {
    let started = Instant::now();
    let c = connect().await?;
    let aws = operator_aws().await;
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let lambda = aws_sdk_lambda::Client::new(&aws);
    // A webhook receiver for the sweeper's delivery round, added as an operator adds one.
    let (hook_url, received) = webhook_receiver().await?;
    let added = c.admin(&["webhook", "add", &hook_url])?;
    assert!(added.status.success(), "atelier-admin webhook add");
    let endpoint: Value = serde_json::from_slice(&added.stdout)?;
    let endpoint = endpoint["id"].as_str().ok_or("no endpoint id")?.to_owned();

    // Public route from the packaged API function (ministack would answer a missing code
    // asset with a 200 "Mock response"), and the authorizer in front of the rest.
    let health = c.http.get(format!("{}/healthz", c.api)).send().await?;
    assert_eq!(health.status(), 200);
    assert_eq!(health.json::<Value>().await?, json!({ "status": "ok" }));
    let anonymous = c.http.get(format!("{}/v1/account", c.api)).send().await?;
    assert_eq!(
        anonymous.status(),
        401,
        "the JWT authorizer lets no token through"
    );
    let forged = c
        .http
        .get(format!("{}/v1/account", c.api))
        .bearer_auth(format!("{}x", c.token))
        .send()
        .await?;
    assert_eq!(
        forged.status(),
        401,
        "a token with a broken signature is refused"
    );

    // 1. Account: the signup grant.
    let account = c.get("/v1/account").await?;
    assert_eq!(account.status, 200, "{account:?}");
    assert_eq!(account.body["balance"], 6, "signup grant: {account:?}");
    assert_eq!(account.body["in_flight"], 0);

    // 2. Upload the sample photo straight to the bucket through the presigned URL.
    let photo = atelier_model_server::samples::single_pet();
    let original = decode(&photo)?;
    let asset = upload(&c, &photo).await?;

    // 3. Quote, 4. submit (and replay the same request: same job, charged once).
    let body = json!({ "style": "embroidery", "target": "pet", "original_asset_id": asset });
    let quote = c.call("POST", "/v1/quotes", None, Some(&body)).await?;
    assert_eq!(quote.status, 200, "{quote:?}");
    let price = quote.body["credits"]
        .as_i64()
        .ok_or("quote without credits")?;
    assert_eq!(price, 4, "a pet edit costs 4 credits: {quote:?}");
    let key_a = ulid::Ulid::new().to_string();
    let submit_started = Instant::now();
    let a = c.submit(&key_a, &body).await?;
    assert_eq!(a.status, 202, "{a:?}");
    let id_a = a.str("id");
    assert_eq!(
        a.location.as_deref(),
        Some(format!("/v1/edits/{id_a}").as_str())
    );
    let replay = c.submit(&key_a, &body).await?;
    assert_eq!(
        (replay.status, replay.str("id"), replay.replayed.as_deref()),
        (200, id_a.clone(), Some("true")),
        "{replay:?}"
    );

    // 5. Poll until the deployed consumer (fed by the SQS event source) delivers.
    let done = c.finished(&id_a).await?;
    let job_time = submit_started.elapsed();
    assert_eq!(done.str("status"), "succeeded", "{done:?}");
    let result = &done.body["result"];
    assert_eq!(result["review"]["verdict"], "passed", "{done:?}");

    // 6. Download: by default a JPEG (the phone's rendition) of the photo's size that differs
    // from it.
    let url = result["url"].as_str().ok_or("no result url")?;
    let download = c.http.get(url).send().await?;
    assert_eq!(download.status(), 200);
    let bytes = download.bytes().await?;
    assert!(
        bytes.starts_with(b"\xff\xd8\xff") && result["format"] == "jpeg",
        "the default download is a JPEG: {result}"
    );
    assert_signed_by_the_deployment(&bytes, "image/jpeg").await?;
    let edited = decode(&bytes)?;
    assert_eq!(
        edited.dimensions(),
        original.dimensions(),
        "the result has the photo's size"
    );
    assert_eq!(
        (result["width"].as_u64(), result["height"].as_u64()),
        (
            Some(u64::from(original.width())),
            Some(u64::from(original.height()))
        )
    );
    let changed = edited
        .pixels()
        .zip(original.pixels())
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        changed > 1000,
        "the edit changed the photo ({changed} pixels differ)"
    );
    assert_eq!(
        c.calls(&id_a).await?,
        (1, 1, 1),
        "one check, one edit, one review for job A"
    );

    // More credits for the rest (an operator grant on the deployed tables, once per reason).
    let grant = c.admin(&[
        "grant",
        "--user",
        account.str("user_id").as_str(),
        "--credits",
        "20",
        "--reason",
        "cloud-e2e",
        "--operator",
        "cloud-e2e",
    ])?;
    assert!(grant.status.success(), "atelier-admin grant");
    let account = c.get("/v1/account").await?;
    assert_eq!(account.body["balance"], 6 - 4 + 20, "{account:?}");

    // 7. A repair of the delivered edit.
    let repairs = repair(&c, &id_a, &original).await?;

    // 8. Pause the event source, as an operator can, so that jobs stay queued for certain.
    let queue = c.output("QueueUrl")?;
    let trigger = JobTrigger::of(&c, &sqs, &lambda).await?;
    trigger.set_enabled(false).await?;

    // 9. Two more edits; the second is canceled while certainly still queued.
    let b = c.submit(&ulid::Ulid::new().to_string(), &body).await?;
    let cj = c.submit(&ulid::Ulid::new().to_string(), &body).await?;
    assert_eq!((b.status, cj.status), (202, 202), "{b:?} {cj:?}");
    let (id_b, id_c) = (b.str("id"), cj.str("id"));
    let canceled = c
        .call("POST", &format!("/v1/edits/{id_c}/cancel"), None, None)
        .await?;
    assert_eq!(
        (canceled.status, canceled.str("status")),
        (200, "canceled".to_owned()),
        "{canceled:?}"
    );
    let again = c
        .call("POST", &format!("/v1/edits/{id_c}/cancel"), None, None)
        .await?;
    assert_eq!(
        (again.status, again.str("status")),
        (200, "canceled".to_owned()),
        "repeating a cancel is harmless: {again:?}"
    );
    assert_eq!(c.job(&id_b).await?.str("status"), "queued");

    // 10. The sweeper's rounds: D and E are queued too; then B's re-send falls due, D passes
    // the queued deadline, and E is claimed by a consumer that dies (the claim's own update).
    let d = c.submit(&ulid::Ulid::new().to_string(), &body).await?;
    let e = c.submit(&ulid::Ulid::new().to_string(), &body).await?;
    assert_eq!((d.status, e.status), (202, 202), "{d:?} {e:?}");
    let (id_d, id_e) = (d.str("id"), e.str("id"));
    sweeper_rounds(&c, &lambda, [&id_b, &id_d, &id_e]).await?;
    let seen = received.lock().map_err(|_| "receiver poisoned")?.clone();
    for (id, kind) in [
        (&id_a, "edit.succeeded"),
        (&id_c, "edit.canceled"),
        (&id_d, "edit.failed"),
        (&id_e, "edit.failed"),
    ] {
        assert!(
            seen.iter().any(|(signed, e)| *signed
                && e["type"] == kind
                && e["data"]["job_id"] == id.as_str()),
            "the sweeper's webhook round delivered {kind} of {id}, signed: {seen:?}"
        );
    }
    let removed = c.admin(&["webhook", "remove", &endpoint])?;
    assert!(removed.status.success(), "atelier-admin webhook remove");
    traced_through_every_function(&c, &aws, &id_a).await?;

    // 11. One message delivered twice: the same doorbell straight into the queue, twice more.
    for _ in 0..2 {
        sqs.send_message()
            .queue_url(&queue)
            .message_body(json!({ "jobId": id_b }).to_string())
            .send()
            .await?;
    }
    trigger.set_enabled(true).await?;
    let done_b = c.finished(&id_b).await?;
    assert_eq!(done_b.str("status"), "succeeded", "{done_b:?}");
    // Every message (B's three, C's one) is taken and acknowledged, none dead-lettered.
    let drained = Instant::now();
    loop {
        let mut left = 0;
        for q in [queue.clone(), c.output("DeadLetterQueueUrl")?] {
            let a = sqs
                .get_queue_attributes()
                .queue_url(&q)
                .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
                .send()
                .await?;
            for n in [
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
            ] {
                left += a
                    .attributes()
                    .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::from(n)))
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("{q}: no {n} attribute"))?;
            }
        }
        if left == 0 {
            break;
        }
        if drained.elapsed() > JOB_LIMIT {
            return Err(format!("{left} messages still in the queues").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        c.calls(&id_b).await?,
        (1, 1, 1),
        "three deliveries of job B, one paid call of each kind"
    );
    for id in [&id_c, &id_d, &id_e] {
        assert_eq!(
            c.calls(id).await?,
            (0, 0, 0),
            "a canceled or swept job never reached the model ({id})"
        );
    }
    assert_eq!(
        c.job(&id_c).await?.str("status"),
        "canceled",
        "delivery after the cancel changes nothing"
    );

    // 12. The ledger: the grants, one debit per job, one refund per job that did not finish.
    let account = c.get("/v1/account").await?;
    let ledger = c.get("/v1/account/ledger?limit=100").await?;
    assert_eq!(ledger.status, 200, "{ledger:?}");
    let rows = ledger.body["items"].as_array().ok_or("no ledger items")?;
    let of = |kind: &str, job: Option<&str>| -> Vec<i64> {
        rows.iter()
            .filter(|r| r["kind"] == kind && job.is_none_or(|j| r["job_id"] == j))
            .filter_map(|r| r["amount"].as_i64())
            .collect()
    };
    assert_eq!(
        of("grant", None).iter().sum::<i64>(),
        26,
        "signup 6 + operator 20: {rows:#?}"
    );
    for id in [&id_a, &id_b, &id_c, &id_d, &id_e]
        .into_iter()
        .chain(&repairs)
    {
        assert_eq!(
            of("debit", Some(id)),
            vec![-4],
            "one debit for {id}: {rows:#?}"
        );
    }
    assert_eq!(of("refund", None), vec![4; 3], "three refunds: {rows:#?}");
    for id in [&id_c, &id_d, &id_e] {
        assert_eq!(of("refund", Some(id)), vec![4], "{id}'s refund: {rows:#?}");
    }
    let sum: i64 = rows.iter().filter_map(|r| r["amount"].as_i64()).sum();
    assert_eq!(
        account.body["balance"].as_i64(),
        Some(sum),
        "balance == sum(ledger)"
    );
    assert_eq!(sum, 26 - 4 * (5 + repairs.len() as i64) + 3 * 4);
    assert_eq!(account.body["in_flight"], 0, "{account:?}");

    // 13. The operator's audit on the deployed tables.
    let audit = c.admin(&["audit"])?;
    assert!(audit.status.success(), "atelier-admin audit is clean");

    eprintln!(
        "cloud e2e: job A submit→succeeded {:.2} s; whole test {:.1} s",
        job_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The ledger tamper alarm on the deployed stack: a ledger row changed outside the code's
/// append path (here an `UpdateItem`, which no function's role may do but a person with table
/// access can) reaches the sweeper through the ledger's stream and its filtered event source,
/// and the sweeper's log names the row's key. The log is read where the local cloud writes a
/// function's output (`ministack.log` in the state folder; reading it back through CloudWatch
/// Logs found nothing here, docs/local-aws.md).
#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_changed_ledger_row_is_logged_by_the_tamper_alarm() -> Res<()> {
    use atelier_shared::store::schema::reference;

    let c = connect().await?;
    let aws = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await;
    let ddb = aws_sdk_dynamodb::Client::new(&aws);
    let lambda = aws_sdk_lambda::Client::new(&aws);
    let log = std::path::Path::new(&var("CLOUD_E2E_STATE")?).join("ministack.log");

    // The user's first request opens the account with its signup grant: one ledger row.
    let account = c.get("/v1/account").await?;
    assert_eq!(account.status, 200, "{account:?}");
    let user = account.str("user_id");
    let ledger = c.output("LedgerTableName")?;

    // The deployed wiring: the ledger's stream feeds one event source, filtered to changes.
    let table = ddb.describe_table().table_name(&ledger).send().await?;
    let stream = table
        .table()
        .and_then(|t| t.latest_stream_arn())
        .ok_or("the ledger table has no stream")?
        .to_owned();
    let mappings = lambda
        .list_event_source_mappings()
        .event_source_arn(&stream)
        .send()
        .await?;
    let [mapping] = mappings.event_source_mappings() else {
        return Err(format!("expected one mapping on the ledger stream: {mappings:?}").into());
    };
    let function = mapping.function_arn().ok_or("mapping without a function")?;
    assert!(
        function.contains("Sweeper"),
        "the sweeper is the guard: {function}"
    );
    let filters = format!("{:?}", mapping.filter_criteria());
    assert!(
        filters.contains("MODIFY") && filters.contains("REMOVE") && !filters.contains("INSERT"),
        "only changes invoke the guard: {filters}"
    );

    // The tamper: a harmless attribute added to the signup grant (the balance still agrees).
    ddb.update_item()
        .table_name(&ledger)
        .key(
            attr::USER_ID,
            aws_sdk_dynamodb::types::AttributeValue::S(user.clone()),
        )
        .key(
            attr::REF,
            aws_sdk_dynamodb::types::AttributeValue::S(reference::SIGNUP.to_owned()),
        )
        .update_expression("SET tampered_by = :who")
        .condition_expression("attribute_exists(#ref)")
        .expression_attribute_names("#ref", attr::REF)
        .expression_attribute_values(
            ":who",
            aws_sdk_dynamodb::types::AttributeValue::S("cloud-e2e".to_owned()),
        )
        .send()
        .await?;
    let tampered = Instant::now();

    // The sweeper's log line with the row's key (this run's user: no older line matches),
    // within a minute (the alarm's period).
    loop {
        let found = std::fs::read_to_string(&log)?.lines().any(|m| {
            m.contains("ledger_row_changed")
                && m.contains(&user)
                && m.contains(reference::SIGNUP)
                && m.contains("MODIFY")
        });
        if found {
            eprintln!(
                "cloud e2e: ledger row changed → ledger_row_changed logged in {:.1} s",
                tampered.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if tampered.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "no ledger_row_changed for {user}/{} in {} within 60 s",
                reference::SIGNUP,
                log.display()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// IAM is enforced on the local cloud: a call a function's role does not allow, made with
/// that role's own credentials, is refused, while a call inside the role goes through.
#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_call_outside_a_functions_role_is_refused() -> Res<()> {
    use atelier_shared::store::schema::reference;
    use aws_sdk_dynamodb::types::AttributeValue;

    let c = connect().await?;
    let account = c.get("/v1/account").await?;
    assert_eq!(account.status, 200, "{account:?}");
    let user = AttributeValue::S(account.str("user_id"));
    let aws = operator_aws().await;
    let lambda = aws_sdk_lambda::Client::new(&aws);
    let as_role = |creds: aws_sdk_sts::config::Credentials| {
        aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&aws)
                .credentials_provider(creds)
                .build(),
        )
    };

    // The API's role reads accounts, and may only check a budget row inside its submit.
    let api = as_role(role_credentials(&aws, &lambda, "Api").await?);
    let own = api
        .get_item()
        .table_name(c.output("AccountsTableName")?)
        .key(attr::USER_ID, user.clone())
        .send()
        .await?;
    assert!(own.item().is_some(), "the API's role reads the account");
    let budget = api
        .get_item()
        .table_name(c.output("BudgetTableName")?)
        .key(attr::DAY, AttributeValue::S("2026-12-01".to_owned()))
        .send()
        .await;
    assert_eq!(
        refusal("the API's role reading the budget", budget)?,
        "AccessDeniedException"
    );
    // No role may change a ledger row (append-only).
    let sweeper_creds = role_credentials(&aws, &lambda, "Sweeper").await?;
    let tamper = as_role(sweeper_creds.clone())
        .delete_item()
        .table_name(c.output("LedgerTableName")?)
        .key(attr::USER_ID, user)
        .key(attr::REF, AttributeValue::S(reference::SIGNUP.to_owned()))
        .send()
        .await;
    assert_eq!(
        refusal("the sweeper's role deleting a ledger row", tamper)?,
        "AccessDeniedException"
    );

    // Only the consumer reads the model provider's key.
    let secret = c.output("ProviderKeySecretArn")?;
    let secrets = |creds| {
        aws_sdk_secretsmanager::Client::from_conf(
            aws_sdk_secretsmanager::config::Builder::from(&aws)
                .credentials_provider(creds)
                .build(),
        )
    };
    let read = secrets(sweeper_creds)
        .get_secret_value()
        .secret_id(&secret)
        .send()
        .await;
    assert_eq!(
        refusal("the sweeper's role reading the provider key", read)?,
        "AccessDeniedException"
    );
    let consumer_creds = role_credentials(&aws, &lambda, "Consumer").await?;
    let key = secrets(consumer_creds.clone())
        .get_secret_value()
        .secret_id(&secret)
        .send()
        .await?;
    assert!(key.secret_string().is_some(), "the consumer reads it");

    // The consumer never rings the doorbell; the API does.
    let sqs = |creds| {
        aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(&aws)
                .credentials_provider(creds)
                .build(),
        )
    };
    let queue = c.output("QueueUrl")?;
    let ring = sqs(consumer_creds)
        .send_message()
        .queue_url(&queue)
        .message_body(json!({ "jobId": "01ARZ3NDEKTSV4RRFFQ69G5FAV" }).to_string())
        .send()
        .await;
    let code = refusal("the consumer's role sending to the queue", ring)?;
    assert!(code.starts_with("AccessDenied"), "{code}");
    Ok(())
}

/// Uploads a photo through a presigned URL; returns its asset id.
async fn upload(c: &Cloud, photo: &[u8]) -> Res<String> {
    let slot = c
        .call(
            "POST",
            "/v1/uploads",
            None,
            Some(&json!({ "kind": "original", "content_type": "image/png", "bytes": photo.len() })),
        )
        .await?;
    assert_eq!(slot.status, 201, "{slot:?}");
    let mut put = c.http.put(slot.str("upload_url")).body(photo.to_vec());
    for (k, v) in slot.body["headers"].as_object().into_iter().flatten() {
        if k != "content-length" {
            put = put.header(k.as_str(), v.as_str().unwrap_or_default());
        }
    }
    let put = put.send().await?;
    assert_eq!(put.status(), 200, "presigned PUT: {}", put.text().await?);
    Ok(slot.str("asset_id"))
}

/// The keys of the bucket's objects under `prefix`, as the operator lists them.
async fn objects(s3: &aws_sdk_s3::Client, bucket: &str, prefix: &str) -> Res<Vec<String>> {
    let out = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .send()
        .await?;
    Ok(out
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect())
}

/// The paths a user takes beside the paid edit, each through the deployed API and so under
/// the API's and the consumer's own roles: a long-poll that answers when the job changes, a
/// clarification (refunded) and its answer, deleting an edit's images and an unused upload,
/// the export, and deleting the account, which leaves no object of the user in the bucket.
#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_user_clarifies_exports_and_deletes_through_the_deployed_api() -> Res<()> {
    let c = connect().await?;
    let account = c.get("/v1/account").await?;
    assert_eq!(account.body["balance"], 6, "{account:?}");
    let user = account.str("user_id");
    let aws = operator_aws().await;
    let trigger = JobTrigger::of(
        &c,
        &aws_sdk_sqs::Client::new(&aws),
        &aws_sdk_lambda::Client::new(&aws),
    )
    .await?;

    // Two pets and target `pet` without a description: a question, and the credits back.
    // The event source is paused, so the long-poll starts while the job is certainly queued.
    let asset = upload(&c, &atelier_model_server::samples::two_pets()).await?;
    let ask = json!({ "style": "embroidery", "target": "pet", "original_asset_id": asset });
    trigger.set_enabled(false).await?;
    let job = c.submit(&ulid::Ulid::new().to_string(), &ask).await;
    let woke = match &job {
        Ok(job) if job.status == 202 => long_poll_wakes_up(&c, &trigger, &job.str("id")).await,
        _ => Ok(()),
    };
    trigger.set_enabled(true).await?;
    let job = job?;
    assert_eq!(job.status, 202, "{job:?}");
    woke?;
    let id = job.str("id");
    let asked = c.finished(&id).await?;
    assert_eq!(
        asked.body["failure"]["code"], "NEEDS_CLARIFICATION",
        "{asked:?}"
    );
    assert_eq!(c.get("/v1/account").await?.body["balance"], 6, "refunded");

    // The answer: the same photo, the pet described.
    let answer = json!({ "style": "embroidery", "target": "pet", "original_asset_id": asset,
                         "target_description": "the cat on the left" });
    let job = c.submit(&ulid::Ulid::new().to_string(), &answer).await?;
    assert_eq!(job.status, 202, "{job:?}");
    let id = job.str("id");
    let done = c.finished(&id).await?;
    assert_eq!(done.str("status"), "succeeded", "{done:?}");

    // Deleting the edit's images, and an upload never used.
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&operator_aws().await)
            .force_path_style(true)
            .build(),
    );
    let bucket = c.output("BucketName")?;
    let results = format!("results/{user}/");
    assert!(
        !objects(&s3, &bucket, &results).await?.is_empty(),
        "the result is kept"
    );
    let images = c
        .call("DELETE", &format!("/v1/edits/{id}/images"), None, None)
        .await?;
    assert!(images.status < 300, "{images:?}");
    let unused = upload(&c, &atelier_model_server::samples::single_pet()).await?;
    let gone = c
        .call("DELETE", &format!("/v1/assets/{unused}"), None, None)
        .await?;
    assert!(gone.status < 300, "{gone:?}");
    assert_eq!(
        c.job(&id).await?.body["result"]["url"],
        Value::Null,
        "no link to deleted images"
    );

    // The export, page by page: the account, its ledger (grant, two debits, a refund) and
    // both edits.
    let (mut pages, mut ledger, mut jobs) = (Vec::new(), 0, 0);
    let mut path = "/v1/account/export".to_owned();
    loop {
        let page = c.get(&path).await?;
        assert_eq!(page.status, 200, "{page:?}");
        ledger += page.body["ledger"].as_array().map_or(0, Vec::len);
        jobs += page.body["jobs"].as_array().map_or(0, Vec::len);
        let next = page.body["next_cursor"].as_str().map(str::to_owned);
        pages.push(page);
        match next {
            Some(cursor) if pages.len() < 10 => {
                let cursor: String = cursor
                    .bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                            char::from(b).to_string()
                        }
                        _ => format!("%{b:02X}"),
                    })
                    .collect();
                path = format!("/v1/account/export?cursor={cursor}");
            }
            _ => break,
        }
    }
    assert_eq!(
        pages[0].body["account"]["user_id"],
        user.as_str(),
        "{pages:?}"
    );
    assert_eq!((ledger, jobs), (4, 2), "{pages:?}");

    // Deleting the account leaves nothing of the user in the bucket.
    let deleted = c.call("DELETE", "/v1/account", None, None).await?;
    assert_eq!(
        (deleted.status, deleted.str("status")),
        (200, "deleted".to_owned()),
        "{deleted:?}"
    );
    for prefix in [format!("uploads/{user}/"), results] {
        assert_eq!(
            objects(&s3, &bucket, &prefix).await?,
            Vec::<String>::new(),
            "{prefix}"
        );
    }
    let audit = c.admin(&["audit"])?;
    assert!(audit.status.success(), "atelier-admin audit is clean");
    Ok(())
}

/// How long the long-poll asks to wait, and when the paused event source is resumed in it.
const ASKED_WAIT: Duration = Duration::from_secs(20);
const RESUMED_AFTER: Duration = Duration::from_secs(3);

/// `GET /v1/edits/{id}` with `Prefer: wait=20` and the job's current `ETag`, asked while the
/// job is certainly `queued` (the event source paused), which is resumed 3 s into the wait:
/// a wake-up is a `200` with another status, after the resume and before the wait ran out
/// (neither a `304` at its end nor a change that came before the wait began).
async fn long_poll_wakes_up(c: &Cloud, trigger: &JobTrigger, id: &str) -> Res<()> {
    let url = format!("{}/v1/edits/{id}", c.api);
    let first = c.http.get(&url).bearer_auth(&c.token).send().await?;
    let etag = first
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .ok_or("no ETag")?
        .to_owned();
    let shown: Value = first.json().await?;
    if shown["status"] != "queued" {
        return Err(
            format!("the event source is paused, yet the job is not queued: {shown}").into(),
        );
    }
    let asked = Instant::now();
    let wait = c
        .http
        .get(&url)
        .bearer_auth(&c.token)
        .header("prefer", format!("wait={}", ASKED_WAIT.as_secs()))
        .header("if-none-match", &etag)
        .send();
    let resume = async {
        tokio::time::sleep(RESUMED_AFTER).await;
        trigger.set_enabled(true).await
    };
    let (waited, resumed) = tokio::join!(wait, resume);
    resumed?;
    let waited = waited?;
    let took = asked.elapsed();
    let status = waited.status().as_u16();
    let now: Value = waited.json().await.unwrap_or(Value::Null);
    eprintln!(
        "cloud e2e: long-poll from {} answered {status} with {} after {:.2} s (asked {} s, \
         the event source resumed at {} s)",
        shown["status"],
        now["status"],
        took.as_secs_f64(),
        ASKED_WAIT.as_secs(),
        RESUMED_AFTER.as_secs()
    );
    assert_eq!(status, 200, "the long-poll woke up on the change: {now}");
    assert_ne!(now["status"], shown["status"], "it shows the new status");
    assert!(
        took > RESUMED_AFTER && took < ASKED_WAIT,
        "woken by the change, within the wait: {took:?}"
    );
    Ok(())
}

/// Buying credits through the deployed API's Stripe webhook, under the API's role: a signed
/// `checkout.session.completed` grants the pack once however often it arrives, a forged one
/// is `400` and changes nothing, and the payment's refund takes the pack back. (The checkout
/// itself calls Stripe's API, which the local cloud cannot reach: docs/local-aws.md.)
#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_purchase_and_its_refund_arrive_through_the_signed_webhook() -> Res<()> {
    let c = connect().await?;
    let account = c.get("/v1/account").await?;
    assert_eq!(account.body["balance"], 6, "{account:?}");
    let user = account.str("user_id");
    let secret = var("CLOUD_E2E_STRIPE_WEBHOOK_SECRET")?;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let (session, payment) = (format!("cs_test_{tag}"), format!("pi_{tag}"));
    let paid = json!({ "id": format!("evt_paid_{tag}"), "type": "checkout.session.completed",
        "data": { "object": { "id": session, "object": "checkout.session", "payment_status": "paid",
            "payment_intent": payment, "client_reference_id": user,
            "metadata": { "user_id": user, "pack": "starter", "credits": "50" } } } })
    .to_string();
    let send = |body: String, signed_body: String| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default();
        let header = atelier_shared::adapters::payments::signature::header(
            signed_body.as_bytes(),
            &secret,
            now,
        );
        c.http
            .post(format!("{}/v1/webhooks/stripe", c.api))
            .header("stripe-signature", header)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    for _ in 0..2 {
        let r = send(paid.clone(), paid.clone()).await?;
        assert_eq!(r.status(), 200, "{}", r.text().await?);
    }
    let forged = paid.replace("\"50\"", "\"500\"");
    let r = send(forged, paid.clone()).await?;
    assert_eq!(r.status(), 400, "an altered body is refused");
    let after = c.get("/v1/account").await?;
    assert_eq!(after.body["balance"], 56, "the pack, once: {after:?}");
    let ledger = c.get("/v1/account/ledger?limit=100").await?;
    let purchases: Vec<&Value> = ledger.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["kind"] == "purchase")
        .collect();
    assert_eq!(purchases.len(), 1, "{ledger:?}");
    assert_eq!(purchases[0]["amount"], 50);

    let refund = json!({ "id": format!("evt_refund_{tag}"), "type": "charge.refunded",
        "data": { "object": { "id": format!("ch_{tag}"), "payment_intent": payment, "refunded": true } } })
    .to_string();
    let r = send(refund.clone(), refund).await?;
    assert_eq!(r.status(), 200, "{}", r.text().await?);
    assert_eq!(
        c.get("/v1/account").await?.body["balance"],
        6,
        "the pack taken back"
    );
    let audit = c.admin(&["audit"])?;
    assert!(audit.status.success(), "atelier-admin audit is clean");
    Ok(())
}

/// The nearest-rank percentile `p` of sorted seconds.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// Finishes `n` edits of the run's user, at most three queued at once (the default
/// `MaxInFlight`); returns their ids. Every one must succeed.
async fn finish_edits(c: &Cloud, n: usize) -> Res<Vec<String>> {
    let asset = upload(c, &atelier_model_server::samples::single_pet()).await?;
    let body = json!({ "style": "embroidery", "target": "pet", "original_asset_id": asset });
    let mut done = Vec::new();
    while done.len() < n {
        let mut wave = Vec::new();
        for _ in 0..(n - done.len()).min(3) {
            let r = c.submit(&ulid::Ulid::new().to_string(), &body).await?;
            assert_eq!(r.status, 202, "{r:?}");
            wave.push(r.str("id"));
        }
        for id in wave {
            let job = c.finished(&id).await?;
            assert_eq!(job.str("status"), "succeeded", "{job:?}");
            done.push(id);
        }
    }
    Ok(done)
}

/// Issue 30 on the deployed stack under IAM: three endpoints added as an operator adds them —
/// healthy, hanging on every request, answering 500 — and `CLOUD_E2E_WEBHOOK_JOBS` edits (20
/// by default, for CI) finished through the API. Each `edit.succeeded` reaches the healthy
/// endpoint once, p95 under 12 s (80 % of the 15 s POST timeout) after the job's delivery
/// (the event's `timestamp`, written in the job's final transaction, on the same host's
/// clock): the stream → fan-out → delivery queue → sweeper path, with the hanging endpoint's
/// POSTs held 15 s each beside it.
#[tokio::test]
#[ignore = "needs the local cloud: cargo xtask cloud-test"]
async fn a_healthy_endpoint_hears_each_finished_edit_in_seconds_beside_a_hanging_and_a_failing_one()
-> Res<()> {
    use atelier_shared::config::WebhookSettings;
    use atelier_tests::receiver::Receiver;

    let n: usize = std::env::var("CLOUD_E2E_WEBHOOK_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let c = connect().await?;
    let healthy = Receiver::start(&[], Duration::ZERO).await;
    let hanging = Receiver::start(&[], Duration::from_secs(3600)).await;
    let failing = Receiver::start(&vec![500; 10 * n], Duration::ZERO).await;
    let mut endpoints = Vec::new();
    for r in [&healthy, &hanging, &failing] {
        let added = c.admin(&["webhook", "add", &r.url])?;
        assert!(added.status.success(), "atelier-admin webhook add");
        let ep: Value = serde_json::from_slice(&added.stdout)?;
        endpoints.push(ep["id"].as_str().ok_or("no endpoint id")?.to_owned());
    }
    let account = c.get("/v1/account").await?;
    let user = account.str("user_id");
    let credits = (4 * n).to_string();
    let grant = c.admin(&[
        "grant",
        "--user",
        &user,
        "--credits",
        &credits,
        "--reason",
        "cloud-e2e-webhooks",
        "--operator",
        "cloud-e2e",
    ])?;
    assert!(grant.status.success(), "atelier-admin grant");

    let started = Instant::now();
    let jobs = finish_edits(&c, n).await?;
    let finished = started.elapsed();
    let succeeded = |d: &atelier_tests::receiver::Delivery| {
        let body: Value = serde_json::from_str(&d.body).unwrap_or(Value::Null);
        (body["type"] == "edit.succeeded").then_some(body)
    };
    let limit = Instant::now() + Duration::from_secs(60);
    while healthy.deliveries().iter().filter_map(succeeded).count() < n && Instant::now() < limit {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Time for a duplicate to show up, were there one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for ep in &endpoints {
        assert!(c.admin(&["webhook", "remove", ep])?.status.success());
    }

    // Arrivals on the same wall clock the functions stamp events with.
    let wall = |at: Instant| atelier_shared::clock::now() - at.elapsed();
    let first_hang = hanging
        .deliveries()
        .iter()
        .map(|d| wall(d.at))
        .min()
        .ok_or("the hanging endpoint was never tried")?;
    let timeout = time::Duration::seconds(WebhookSettings::default().timeout_secs as i64);
    let mut per_job: BTreeMap<String, usize> = BTreeMap::new();
    let mut latencies = Vec::new();
    for d in healthy.deliveries() {
        let Some(body) = succeeded(&d) else { continue };
        let job = body["data"]["job_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !jobs.contains(&job) {
            continue;
        }
        *per_job.entry(job.clone()).or_default() += 1;
        let at = body["timestamp"]
            .as_str()
            .and_then(atelier_shared::clock::parse)
            .ok_or_else(|| format!("an event without a timestamp: {body}"))?;
        let arrived = wall(d.at);
        latencies.push((arrived - at).as_seconds_f64());
        // The structural fact (not a speed limit: the figures are printed for the docs): no
        // healthy POST waited out a hanging one. Each arrived before the hanging endpoint's
        // first POST, or its own event if that came later, could have timed out.
        assert!(
            arrived < at.max(first_hang) + timeout,
            "{job}'s event reached the healthy endpoint {:.2} s after it was stamped, after a \
             hanging POST could have timed out ({timeout}): blocked behind the hanging endpoint",
            (arrived - at).as_seconds_f64()
        );
    }
    assert_eq!(
        per_job.len(),
        n,
        "every finished edit reached the healthy endpoint"
    );
    assert!(per_job.values().all(|k| *k == 1), "once each: {per_job:?}");
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (percentile(&latencies, 0.5), percentile(&latencies, 0.95));
    eprintln!(
        "cloud e2e webhooks: {n} edits finished in {:.1} s; healthy endpoint, one hanging and \
         one answering 500 beside it: job delivered -> POST received p50 {p50:.2} s, p95 \
         {p95:.2} s, max {:.2} s; hanging endpoint {} POSTs, 500 endpoint {} POSTs",
        finished.as_secs_f64(),
        latencies.last().copied().unwrap_or(f64::NAN),
        hanging.deliveries().len(),
        failing.deliveries().len(),
    );
    assert!(
        !failing.deliveries().is_empty(),
        "the 500 endpoint was tried"
    );
    Ok(())
}
