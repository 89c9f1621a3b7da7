//! Cold-start init of each packaged function (and the bare runtime's) on a fake Lambda Runtime
//! API, with the calls each makes on the wire.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use atelier_tests::{Harness, StandIn};
use atelier_wire_proxy::{Counts, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::artefacts::{FUNCTIONS, stale, target_dir};
use crate::limits;
use crate::table::{Row, describe, ms, percentile, row};

/// One cold start: the time to the first `GET …/invocation/next` and the function's own
/// `init_timed` steps (absent for the bare runtime, which logs none).
struct ColdStart {
    took: Duration,
    steps: Option<String>,
}

/// A fake Lambda Runtime API: records when the first `GET …/invocation/next` arrives and
/// never answers it (the function stays ready for its first event).
async fn time_to_first_next(binary: &Path, env: &[(String, String)]) -> Result<ColdStart> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let started = Instant::now();
    // Only what Lambda gives a function (no `SSL_CERT_FILE`, `HOME` or this machine's other
    // settings, which would add file reads a Lambda cold start never makes).
    let mut child = tokio::process::Command::new(binary)
        .env_clear()
        .envs(env.iter().cloned())
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let steps = child.stdout.take().map(|out| tokio::spawn(init_steps(out)));
    let wait = async {
        loop {
            let (mut stream, _) = listener.accept().await?;
            let mut buf = vec![0u8; 4096];
            let n = stream.read(&mut buf).await?;
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            if head.starts_with("GET /2018-06-01/runtime/invocation/next") {
                return Ok::<_, anyhow::Error>(started.elapsed());
            }
            // Anything else (an init error report): acknowledge and keep waiting.
            let _ = stream
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    };
    let exited = child.wait();
    let took = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(20), wait) => r.context("no GET …/next within 20 s")??,
        status = exited => bail!("{} exited before asking for an event: {status:?}", binary.display()),
    };
    let _ = child.kill().await;
    let steps = match steps {
        Some(task) => tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten(),
        None => None,
    };
    Ok(ColdStart { took, steps })
}

/// The `steps` of the function's `init_timed` line (logged before it asks for an event).
async fn init_steps(out: tokio::process::ChildStdout) -> Option<String> {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(out).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if event["message"] == "init_timed" {
            return event["steps"].as_str().map(str::to_owned);
        }
    }
    None
}

fn release_binary(f: &str) -> Option<PathBuf> {
    let target = target_dir();
    [
        target
            .join("x86_64-unknown-linux-gnu")
            .join("release")
            .join(f),
        target
            .join("aarch64-unknown-linux-gnu")
            .join("release")
            .join(f),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// One binary's cold starts.
struct ColdStarts {
    name: &'static str,
    binary: PathBuf,
    env: Vec<(String, String)>,
    times: Vec<Duration>,
    /// Each cold start's `init_timed` steps.
    steps: Vec<String>,
    /// Calls on the wire of its first cold start.
    calls: Option<Counts>,
    failure: Option<String>,
}

/// Each function's init, and the bare runtime's, cold-started in turn `runs` times (so a
/// busy moment on the machine falls on all of them alike).
pub async fn init_times(
    h: &Harness,
    proxy: &Proxy,
    model: &StandIn,
    runs: usize,
) -> Result<Vec<Row>> {
    let (secret, signing) = consumer_secrets(h).await?;
    let mut out = Vec::new();
    let mut all = Vec::new();
    for name in FUNCTIONS.into_iter().chain([limits::BARE]) {
        match release_binary(name) {
            Some(binary) => all.push(ColdStarts {
                name,
                binary,
                env: lambda_env(name, &proxy.url(), &model.base_url, [&secret, &signing]),
                times: Vec::new(),
                steps: Vec::new(),
                calls: None,
                failure: None,
            }),
            None => out.push(row(
                format!("init time, {name}"),
                "not measured",
                "run `cargo xtask package` (the packaged release binary is absent)",
            )),
        }
    }
    let mut secret_reads = Vec::new();
    for _ in 0..runs.max(1) {
        for c in all.iter_mut().filter(|c| c.failure.is_none()) {
            let before = proxy.counts();
            match time_to_first_next(&c.binary, &c.env).await {
                Ok(start) => {
                    c.times.push(start.took);
                    c.steps.extend(start.steps);
                }
                Err(e) => c.failure = Some(format!("{e:#}")),
            }
            c.calls.get_or_insert_with(|| proxy.counts().since(&before));
        }
        secret_reads.push(secret_read(proxy, &secret).await?);
    }
    out.extend(all.iter_mut().map(init_row));
    out.extend(all.iter().filter_map(steps_row));
    secret_reads.sort();
    out.push(row(
        "the consumer's secret read at init, bare",
        ms(percentile(&secret_reads, 0.5)),
        format!(
            "`GetSecretValue` of the same secret through the same wire proxy on a new client (a new connection, as at a cold start), interleaved with the cold starts; median of {}: the part of the consumer's init that is a round trip to Secrets Manager",
            secret_reads.len()
        ),
    ));
    let median = |c: &ColdStarts| (!c.times.is_empty()).then(|| percentile(&c.times, 0.5));
    let bare = all.iter().find(|c| c.name == limits::BARE).and_then(median);
    let ours: Vec<(&str, Duration)> = all
        .iter()
        .filter(|c| c.name != limits::BARE)
        .filter_map(|c| Some((c.name, median(c)?)))
        .collect();
    if let Some(bare) = bare {
        out.push(limits::init_ratio_row(&ours, bare));
    }
    Ok(out)
}

/// `name=ms,…` as `init_timed` logs it.
fn parse_steps(steps: &str) -> Vec<(&str, f64)> {
    steps.split(',').filter_map(step_of).collect()
}

fn step_of(part: &str) -> Option<(&str, f64)> {
    let (name, ms) = part.split_once('=')?;
    Some((name, ms.parse().ok()?))
}

/// The median of each `init_timed` step of `c`'s cold starts, in ms, and what comes before
/// `main` (the cold start's median less the steps' median total).
fn steps_row(c: &ColdStarts) -> Option<Row> {
    let parsed: Vec<Vec<(&str, f64)>> = c.steps.iter().map(|s| parse_steps(s)).collect();
    let names: Vec<&str> = parsed.first()?.iter().map(|(n, _)| *n).collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let of = |name: &str| {
        median(
            parsed
                .iter()
                .flat_map(|p| p.iter().filter(|(n, _)| *n == name).map(|(_, v)| *v))
                .collect(),
        )
    };
    let totals = median(
        parsed
            .iter()
            .map(|p| p.iter().map(|(_, v)| v).sum())
            .collect(),
    );
    let whole = c.times.get(c.times.len() / 2)?.as_secs_f64() * 1e3;
    let mut figure = format!(
        "before main + the runtime's first request {:.1}",
        whole - totals
    );
    for name in names {
        figure.push_str(&format!(", {name} {:.1}", of(name)));
    }
    Some(row(
        format!("init steps (ms), {}", c.name),
        figure,
        format!(
            "the function's own `init_timed` log line of each cold start, medians of {}; the rest of the cold start's median is the process's start, the dynamic loader and the Runtime API's first request",
            parsed.len()
        ),
    ))
}

/// One `GetSecretValue` of `secret` through `proxy` on a client of its own (its own
/// connection), as the consumer's cold start makes it.
async fn secret_read(proxy: &Proxy, secret: &str) -> Result<Duration> {
    let sdk = atelier_shared::adapters::aws::sdk_config().await?;
    let config = aws_sdk_secretsmanager::config::Builder::from(&sdk)
        .endpoint_url(proxy.url())
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let started = Instant::now();
    client.get_secret_value().secret_id(secret).send().await?;
    Ok(started.elapsed())
}

fn init_row(c: &mut ColdStarts) -> Row {
    let what = format!("init time, {}", c.name);
    c.times.sort();
    let (Some(first), Some(last)) = (c.times.first(), c.times.last()) else {
        return row(what, "failed", c.failure.clone().unwrap_or_default());
    };
    let mut how = format!(
        "spawn → first `GET /runtime/invocation/next` on a fake Runtime API; median of {}; calls per cold start: {}",
        c.times.len(),
        describe(&c.calls.clone().unwrap_or_default(), 1)
    );
    if c.name != limits::BARE && stale(&c.binary, c.name) {
        how.push_str("; **binary older than its sources: rerun `cargo xtask package`**");
    }
    if let Some(e) = &c.failure {
        how.push_str(&format!("; a later start failed: {e}"));
    }
    let figure = format!(
        "{} (min {}, max {})",
        ms(percentile(&c.times, 0.5)),
        ms(*first),
        ms(*last)
    );
    row(what, figure, how)
}

/// The secrets the consumer reads at cold start: its provider key and its content
/// credentials' signing key (issue 46), each new for this run.
async fn consumer_secrets(h: &Harness) -> Result<(String, String)> {
    let secret = format!(
        "bench-model-key-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let signing = format!("{secret}-signing");
    let key = atelier_shared::adapters::credentials::test_ca::generate("Atelier (bench)")?;
    for (name, value) in [
        (&secret, "sk-bench".to_owned()),
        (&signing, key.secret_json),
    ] {
        h.clients
            .secrets
            .create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await?;
    }
    Ok((secret, signing))
}

/// The environment Lambda gives function `f`, with AWS through `aws_url` and the model at
/// `model_url`, its key and the signing key in `secrets`.
fn lambda_env(
    f: &str,
    aws_url: &str,
    model_url: &str,
    [secret, signing]: [&str; 2],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("ATELIER_") || k.starts_with("AWS_"))
        .collect();
    // JSON lines, as Lambda's JSON log format gives them (the local stack's are text): the
    // bench reads `init_timed` from them.
    let ours = ["AWS_ENDPOINT_URL", "AWS_CA_BUNDLE", "AWS_LAMBDA_LOG_FORMAT"];
    env.retain(|(k, _)| !ours.contains(&k.as_str()));
    env.push(("AWS_LAMBDA_LOG_FORMAT".to_owned(), "JSON".to_owned()));
    env.extend([
        ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
        ("LANG".to_owned(), "en_US.UTF-8".to_owned()),
        ("TZ".to_owned(), ":UTC".to_owned()),
        ("AWS_ENDPOINT_URL".to_owned(), aws_url.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME".to_owned(), f.to_owned()),
        (
            "AWS_LAMBDA_FUNCTION_VERSION".to_owned(),
            "$LATEST".to_owned(),
        ),
        (
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".to_owned(),
            "1024".to_owned(),
        ),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME".to_owned(),
            format!("/aws/lambda/{f}"),
        ),
        ("AWS_LAMBDA_LOG_STREAM_NAME".to_owned(), "bench".to_owned()),
        ("ATELIER_MODEL_BASE_URL".to_owned(), model_url.to_owned()),
        (
            "ATELIER_MODEL_API_KEY_SECRET_ID".to_owned(),
            secret.to_owned(),
        ),
        ("ATELIER_SIGNING_SECRET_ID".to_owned(), signing.to_owned()),
    ]);
    env
}
