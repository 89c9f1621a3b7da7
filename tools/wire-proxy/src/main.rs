//! `atelier-wire-proxy`: the proxy as a process of its own, for a local run or a harness that
//! drives it over HTTP (`/_proxy/counts`, `/_proxy/faults`, `/_proxy/reset`, `/_proxy/plan`).
//!
//! ```sh
//! atelier-wire-proxy --upstream http://127.0.0.1:4603 --listen 127.0.0.1:4613 \
//!     --seed 7 --rate transaction_conflict=0.05 --rate throttling=0.02 --rate latency=0.1
//! ```
//! Then point the code at it: `AWS_ENDPOINT_URL=http://127.0.0.1:4613`. Ctrl-C prints the
//! counts and the injected faults. `--record FILE` appends each IAM call the requests make
//! (principal, action, resource; see `record.rs`) to FILE as a JSON line, the caller named
//! `--principal NAME` or else by its access key id. The first line on stdout names the URL
//! (`--listen 127.0.0.1:0` picks a free port).

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use atelier_wire_proxy::{Attribution, FaultKind, FaultPlan, Proxy};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "Counting, fault-injecting proxy in front of the local AWS")]
struct Args {
    /// The local AWS endpoint.
    #[arg(
        long,
        env = "ATELIER_PROXY_UPSTREAM",
        default_value = "http://127.0.0.1:4566"
    )]
    upstream: String,
    #[arg(long, env = "ATELIER_PROXY_LISTEN", default_value = "127.0.0.1:4567")]
    listen: SocketAddr,
    /// Seed of the fault decisions (printed; the same seed replays the same faults).
    #[arg(long)]
    seed: Option<u64>,
    /// KIND=RATE, e.g. transaction_conflict=0.05 (kinds: transaction_conflict, throttling,
    /// provisioned_throughput_exceeded, internal_error, drop_after_forward, latency, index_lag).
    #[arg(long = "rate", value_parser = parse_rate)]
    rates: Vec<(FaultKind, f64)>,
    /// Only these operations (`TransactWriteItems` or `dynamodb:TransactWriteItems`).
    #[arg(long = "only", value_delimiter = ',')]
    only: Vec<String>,
    /// Delay of a latency fault.
    #[arg(long, default_value_t = 50)]
    latency_ms: u64,
    /// Append each distinct IAM call (JSON lines) to this file.
    #[arg(long)]
    record: Option<std::path::PathBuf>,
    /// The caller of every recorded request (default: its SigV4 access key id).
    #[arg(long, requires = "record")]
    principal: Option<String>,
}

fn parse_rate(s: &str) -> Result<(FaultKind, f64)> {
    let (kind, rate) = s.split_once('=').context("expected KIND=RATE")?;
    let Some(kind) = FaultKind::parse(kind) else {
        bail!("unknown fault kind {kind:?}");
    };
    let rate: f64 = rate.parse().context("rate is a number in [0, 1]")?;
    if !(0.0..=1.0).contains(&rate) {
        bail!("rate {rate} is outside [0, 1]");
    }
    Ok((kind, rate))
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let plan = if args.rates.is_empty() {
        None
    } else {
        let seed = args.seed.unwrap_or_else(rand::random);
        let mut plan = FaultPlan::new(seed).only(args.only.iter().cloned());
        plan.latency_ms = args.latency_ms;
        for (kind, rate) in &args.rates {
            plan = plan.rate(*kind, *rate);
        }
        Some(plan)
    };
    let proxy = Proxy::start_on(args.listen, &args.upstream, plan.clone())
        .await
        .context("starting the proxy")?;
    if let Some(path) = &args.record {
        let attribution = match &args.principal {
            Some(name) => Attribution::Fixed(name.clone()),
            None => Attribution::AccessKey,
        };
        proxy
            .record_to(attribution, path)
            .with_context(|| format!("opening {}", path.display()))?;
    }
    match &plan {
        Some(p) => println!(
            "wire proxy on {} -> {} (seed {}, faults {:?})",
            proxy.url(),
            args.upstream,
            p.seed,
            p.rates
        ),
        None => println!(
            "wire proxy on {} -> {} (no faults)",
            proxy.url(),
            args.upstream
        ),
    }
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    println!("requests: {}", proxy.counts());
    for ((kind, op), n) in proxy.fault_counts() {
        println!("fault {kind} {op}: {n}");
    }
    Ok(())
}
