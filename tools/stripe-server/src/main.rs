//! `atelier-stripe-server`: serves the stand-in Stripe on a loopback port, forwarding signed
//! events to the API like `stripe listen --forward-to`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::Context as _;
use atelier_stripe_server::{Options, spawn};
use clap::Parser;

#[derive(Parser)]
#[command(
    about = "The stand-in Stripe (Checkout Sessions, payments, refunds, disputes, signed webhooks)"
)]
struct Args {
    /// Port to listen on (12111, as stripe-mock).
    #[arg(long, default_value_t = 12111)]
    port: u16,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    host: IpAddr,
    /// The webhook signing secret events are signed with (the API's ATELIER_STRIPE_WEBHOOK_SECRET).
    #[arg(long)]
    webhook_secret: String,
    /// Where to deliver events, e.g. http://127.0.0.1:8787/v1/webhooks/stripe.
    #[arg(long)]
    forward_to: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    atelier_shared::adapters::telemetry::init();
    let args = Args::parse();
    let options = Options {
        webhook_secret: args.webhook_secret,
        forward_to: args.forward_to,
    };
    let handle = spawn(SocketAddr::new(args.host, args.port), options)
        .await
        .with_context(|| format!("binding {}:{}", args.host, args.port))?;
    tracing::info!(base_url = %handle.base_url(), "stripe_server_listening");
    tokio::select! {
        result = handle.wait() => result.context("serving")?,
        signal = tokio::signal::ctrl_c() => {
            signal.context("waiting for ctrl-c")?;
            tracing::info!("stripe_server_stopping");
        }
    }
    Ok(())
}
