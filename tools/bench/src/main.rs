//! `cargo xtask bench`: one markdown table of figures measured in one run on the local stack
//! (xtask starts a private ministack and sets the local environment).
//!
//! - Calls per submit, replay, claim and job are counted on the wire by the wire proxy
//!   (`tools/wire-proxy`) placed between the code and the emulator: the API router runs
//!   in-process (as the tests drive it) and the consumer's `Processor` against the stand-in
//!   model server.
//! - Init time: each packaged Lambda binary is started against a tiny fake Lambda Runtime API;
//!   the time from spawn to its first `GET …/invocation/next` is the cold-start path (config,
//!   clients, the consumer's secret read).
//! - Submit latency against its own round trips made bare, same emulator, same run (the S3
//!   HeadObject of the asset, the transaction of the same items, the SQS send of the same body);
//!   jobs per second with an instant stand-in model and K consumers fed from the queue;
//!   zip sizes; peak memory of the consumer's image work on a 12 MP photo (the
//!   `imaging_12mp` example).
//! - Against the machine's limits (issue 33, `limits.rs`): the 12 MP path against its codec
//!   floor, each init against a bare `lambda_runtime`, zips against 4 MB per architecture,
//!   Lambda's cost of the image work per million jobs.
//!
//! Timings are printed, never asserted.

use anyhow::{Context, Result};
use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::services::App;
use atelier_shared::store::provision;
use atelier_tests::{Harness, StandIn};
use atelier_wire_proxy::Proxy;
use aws_config::BehaviorVersion;

use crate::args::args;
use crate::calls::call_counts;
use crate::image::image_rows;
use crate::init_time::init_times;
use crate::latency::latency;
use crate::throughput::throughput;
use crate::zips::zip_sizes;

mod args;
mod artefacts;
mod calls;
mod fixture;
mod image;
mod init_time;
mod latency;
mod limits;
mod peer;
mod table;
mod throughput;
mod zips;

#[tokio::main]
async fn main() -> Result<()> {
    if let Some(out) = peer::requested() {
        return peer::run(out).await;
    }
    let args = args()?;
    let config = Config::from_env().context("run through `cargo xtask bench`")?;
    let upstream = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
    let proxy = Proxy::start(&upstream, None).await?;
    let direct_clients = Clients::from_env().await?;
    provision::ensure(&direct_clients, &config.resources)
        .await
        .map_err(|e| anyhow::anyhow!("provisioning: {e:?}"))?;
    let counted_sdk = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(proxy.url())
        .load()
        .await;
    let counted_clients = Clients::new(&counted_sdk);
    let counted = Harness {
        app: App::new(config.clone(), &counted_clients),
        clients: counted_clients,
    };
    let direct = Harness {
        app: App::new(config.clone(), &direct_clients),
        clients: direct_clients,
    };
    let model = StandIn::start().await;
    let mut rows = Vec::new();

    eprintln!("bench: counting calls on the wire ({} jobs)", args.counted);
    rows.extend(call_counts(&counted, &proxy, &model, args.counted).await?);
    eprintln!("bench: submit latency ({} samples)", args.samples);
    rows.extend(latency(&direct, args.samples).await?);
    eprintln!(
        "bench: throughput ({} jobs, {} consumers)",
        args.jobs, args.workers
    );
    rows.extend(throughput(&direct, &model, args.jobs, args.workers).await?);
    eprintln!("bench: cold starts ({} per function)", args.init_runs);
    rows.extend(init_times(&direct, &proxy, &model, args.init_runs).await?);
    rows.extend(zip_sizes());
    eprintln!("bench: the 12 MP image path against its codec floor, peak memory");
    rows.extend(image_rows(args.image_runs).await);

    println!();
    println!("| what | figure | how |");
    println!("|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} |", r.what, r.figure, r.how);
    }
    Ok(())
}
