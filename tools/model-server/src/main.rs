//! `atelier-model-server`: serves the stand-in model on a loopback port, or writes the sample
//! photos to a folder.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use atelier_model_server::{Options, samples, spawn_with};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "The stand-in model server (OpenAI image edits and chat completions)")]
struct Args {
    /// Port to listen on.
    #[arg(long, default_value_t = 8788, env = "ATELIER_MODEL_SERVER_PORT")]
    port: u16,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    host: IpAddr,
    /// How long a `timeout` fault holds a request, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    hold_ms: u64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Write the sample photos and a brushed-circle mask as PNG files into a folder.
    Samples { dir: PathBuf },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    atelier_shared::adapters::telemetry::init();
    let args = Args::parse();
    if let Some(Command::Samples { dir }) = args.command {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let files = [
            ("single_pet.png", samples::single_pet()),
            ("two_pets.png", samples::two_pets()),
            ("portrait.png", samples::portrait()),
            ("circle_mask.png", samples::circle_mask(230, 250, 60)?),
        ];
        for (name, bytes) in files {
            let path = dir.join(name);
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            println!("{}", path.display());
        }
        return Ok(());
    }
    let options = Options {
        hold: Duration::from_millis(args.hold_ms),
    };
    let (addr, handle) = spawn_with(SocketAddr::new(args.host, args.port), options)
        .await
        .with_context(|| format!("binding {}:{}", args.host, args.port))?;
    tracing::info!(%addr, "model_server_listening");
    tokio::select! {
        result = handle.wait() => result.context("serving")?,
        signal = tokio::signal::ctrl_c() => {
            signal.context("waiting for ctrl-c")?;
            tracing::info!("model_server_stopping");
        }
    }
    Ok(())
}
