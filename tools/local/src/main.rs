//! `atelier-local`: run the system locally (`serve`), print a dev token (`token`), or create
//! the local resources (`provision`). Reads the same configuration as the functions.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use atelier_local::authorizer::Authorizer;
use atelier_local::issuer::DevIssuer;
use atelier_local::serve::ISSUER_PATH;
use atelier_shared::adapters::aws::Clients;
use atelier_shared::adapters::cors::{BadOrigin, Origins};
use std::sync::Arc;

use atelier_shared::config::{Config, ModelSettings, STAND_IN_MODEL_URL, STAND_IN_STRIPE_URL};
use atelier_shared::services::App;
use atelier_shared::services::process::{Processor, Providers};
use clap::{Parser, Subcommand};

/// The local stand-in for the event source mapping's maximum concurrency.
const CONSUMER_CONCURRENCY: usize = 2;

#[derive(Parser)]
#[command(name = "atelier-local", about = "Atelier's local runner")]
struct Cli {
    /// Folder for local state (the dev issuer's key).
    #[arg(long, env = "ATELIER_STATE_DIR", default_value = ".atelier")]
    state_dir: PathBuf,
    /// Port of the local API (the dev issuer lives under it).
    #[arg(long, env = "ATELIER_LOCAL_PORT", default_value_t = 8787)]
    port: u16,
    /// Browser origins allowed to call the API and the bucket (CORS), comma-separated: what
    /// `WebOrigins` / `web_origins` is to a deployment. The default is `cargo xtask dev`'s app.
    #[arg(long, env = "ATELIER_LOCAL_WEB_ORIGINS", default_value = "http://127.0.0.1:5173", value_parser = parse_origins)]
    web_origins: Origins,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the tables, queue and bucket (idempotent), then serve the API.
    Serve,
    /// Create the tables, queue and bucket (idempotent).
    Provision,
    /// Serve only the dev issuer (JWKS and the dev token endpoint) on `--port`: the issuer of
    /// the local cloud's JWT authorizer.
    Issuer,
    /// Print a dev bearer token for a user.
    Token {
        #[arg(long)]
        user: String,
        /// Lifetime in seconds.
        #[arg(long, default_value_t = 3600)]
        ttl: i64,
        /// Mint a token whose e-mail is not verified (`email_verified: false`): the API serves
        /// it but gives no signup grant.
        #[arg(long)]
        unverified: bool,
    },
}

fn parse_origins(list: &str) -> Result<Origins, BadOrigin> {
    Origins::parse(list)
}

/// The stand-in Stripe's keys in local runs (not secrets: nothing but the stand-in knows them).
const LOCAL_STRIPE_KEY: &str = "sk_test_atelier_local";
const LOCAL_WEBHOOK_SECRET: &str = "whsec_atelier_local_stand_in";

/// The app with Stripe: the configured keys, or the stand-in started on its default port.
async fn with_stripe(
    app: App,
    clients: &Clients,
    api_port: u16,
) -> anyhow::Result<(App, Option<atelier_stripe_server::ServerHandle>)> {
    let settings = &app.config.payments;
    let configured = settings.stripe_secret_id.is_some() || settings.stripe_secret_key.is_some();
    if configured || settings.stripe_base_url != STAND_IN_STRIPE_URL {
        let stripe = atelier_shared::adapters::payments::setup::connect(settings, clients).await?;
        return Ok((app.with_stripe(stripe), None));
    }
    let addr: SocketAddr = STAND_IN_STRIPE_URL.trim_start_matches("http://").parse()?;
    let server = atelier_stripe_server::spawn(
        addr,
        atelier_stripe_server::Options {
            webhook_secret: LOCAL_WEBHOOK_SECRET.to_owned(),
            forward_to: Some(format!("http://127.0.0.1:{api_port}/v1/webhooks/stripe")),
        },
    )
    .await
    .with_context(|| format!("starting the stand-in Stripe on {addr}"))?;
    eprintln!("Stand-in Stripe on {}", server.base_url());
    let client = atelier_shared::adapters::payments::stripe::StripeClient::new(
        STAND_IN_STRIPE_URL,
        LOCAL_STRIPE_KEY.to_owned(),
    )?;
    let stripe =
        atelier_shared::adapters::payments::Stripe::new(client, LOCAL_WEBHOOK_SECRET.to_owned());
    Ok((app.with_stripe(Some(stripe)), Some(server)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let issuer_url = format!("http://127.0.0.1:{}{ISSUER_PATH}", cli.port);
    let issuer_dir = cli.state_dir.join("dev-issuer");
    match cli.command {
        Command::Token {
            user,
            ttl,
            unverified,
        } => {
            let issuer = DevIssuer::load_or_create(&issuer_dir, &issuer_url)?;
            let token = if unverified {
                issuer.token_unverified(&user, ttl)?
            } else {
                issuer.token(&user, ttl)?
            };
            println!("{token}");
            Ok(())
        }
        Command::Issuer => {
            atelier_shared::adapters::telemetry::init();
            let issuer = DevIssuer::load_or_create(&issuer_dir, &issuer_url)?;
            let listener = bind(cli.port).await?;
            eprintln!("Dev issuer {issuer_url} (JWKS at {issuer_url}/.well-known/jwks.json)");
            serve_until_ctrl_c(listener, atelier_local::serve::issuer_router(issuer)).await
        }
        Command::Provision => {
            atelier_shared::adapters::telemetry::init();
            let config = Config::from_env()?;
            let clients = Clients::from_env().await?;
            atelier_shared::store::provision::ensure(&clients, &config.resources).await?;
            atelier_shared::store::provision::ensure_bucket_cors(
                &clients,
                &config.resources.bucket,
                &cli.web_origins,
            )
            .await?;
            Ok(())
        }
        Command::Serve => serve(cli.port, &issuer_dir, &issuer_url, &cli.web_origins).await,
    }
}

/// `serve`: the resources, the model (the stand-in when none is configured), the consumer's
/// poller, the sweeper's schedule and the API with the dev issuer, until Ctrl-C.
async fn serve(
    port: u16,
    issuer_dir: &Path,
    issuer_url: &str,
    web_origins: &Origins,
) -> anyhow::Result<()> {
    atelier_shared::adapters::telemetry::init();
    let mut config = Config::from_env()?;
    let clients = Clients::from_env().await?;
    let key = atelier_shared::adapters::address_key::load(&config.identity, &clients).await?;
    config.identity.address_key = Some(key);
    atelier_shared::store::provision::ensure(&clients, &config.resources)
        .await
        .context("creating local resources")?;
    atelier_shared::store::provision::ensure_bucket_cors(
        &clients,
        &config.resources.bucket,
        web_origins,
    )
    .await
    .context("the bucket's CORS rule")?;
    let issuer = DevIssuer::load_or_create(issuer_dir, issuer_url)?;
    let app = App::new(config, &clients);
    let _stand_in = stand_in_model().await?;
    // No Stripe keys configured: the stand-in Stripe, in-process, forwarding its
    // signed events to this API like `stripe listen --forward-to`.
    let (app, _stripe_stand_in) = with_stripe(app, &clients, port).await?;
    // Google Play as the API's cold start sets it up (off unless configured).
    let play = atelier_shared::adapters::payments::setup::connect_google_play(
        &app.config.payments,
        &clients,
    )
    .await?;
    let app = app.with_google_play(play);
    let (edit, vision) = atelier_shared::adapters::model::setup::clients_from_env(&clients).await?;
    let providers = Providers::new(edit, vision)
        .ok_or_else(|| anyhow::anyhow!("no model provider is configured"))?;
    let signing = local_signing(&issuer_dir.with_file_name("signing"), &clients).await?;
    let processor = Processor::with_providers(app.clone(), providers, Arc::new(signing));
    // The same cold-start check as the consumer Lambda's.
    let timeout = std::time::Duration::from_secs(app.config.limits.consumer_timeout_secs);
    processor.check_fits(timeout)?;
    let processor = Arc::new(processor);
    let http = atelier_shared::adapters::webhooks::client::WebhookClient::new(
        app.config.webhooks.private_addresses,
    )?;
    let sweeper = tokio::spawn(sweep_every_minute(app.clone(), http.clone()));
    let hooks = tokio::spawn(atelier_local::hooks::run(
        app.clone(),
        http,
        clients.sqs.clone(),
        HOOK_WORKERS,
    ));
    let hold = Arc::new(atelier_local::hold::Hold::default());
    let poller = tokio::spawn(atelier_local::poller::run(
        processor,
        clients.sqs.clone(),
        app.config.resources.queue_url.clone(),
        CONSUMER_CONCURRENCY,
        hold.clone(),
    ));
    let router = atelier_local::serve::app(
        app,
        Authorizer::new(issuer_url, atelier_local::AUDIENCE),
        Some(issuer),
    )
    .merge(atelier_local::hold::router(hold));
    // API Gateway's CORS in front of the whole local origin (the dev issuer's token
    // endpoint is called cross-origin too, as Cognito's is).
    let router = atelier_local::cors::layer(router, web_origins.clone());
    let listener = bind(port).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, issuer = %issuer_url, "local_api_listening");
    eprintln!("Atelier API on http://{addr}  (token: cargo xtask token --user alice)");
    serve_until_ctrl_c(listener, router).await?;
    poller.abort();
    sweeper.abort();
    hooks.abort();
    Ok(())
}

/// With no provider configured the stand-in model server is the model, in-process; the
/// handle keeps it running.
async fn stand_in_model() -> anyhow::Result<Option<atelier_model_server::ServerHandle>> {
    let settings = ModelSettings::from_env()?;
    if settings.base_url != STAND_IN_MODEL_URL || settings.api_key_secret_id.is_some() {
        return Ok(None);
    }
    let addr: SocketAddr = STAND_IN_MODEL_URL.trim_start_matches("http://").parse()?;
    let (addr, server) = atelier_model_server::spawn(addr)
        .await
        .with_context(|| format!("starting the stand-in model server on {addr}"))?;
    eprintln!("Stand-in model server on http://{addr}");
    Ok(Some(server))
}

/// The delivery queue mapping's concurrency, locally: batches (of up to ten messages, their
/// POSTs made at once) handled at the same time.
const HOOK_WORKERS: usize = 16;

/// The EventBridge schedule: one sweep and the webhook safety net's round a minute.
async fn sweep_every_minute(
    app: App,
    http: atelier_shared::adapters::webhooks::client::WebhookClient,
) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tick.tick().await;
        atelier_sweeper::handle(&app, atelier_shared::clock::now()).await;
        atelier_sweeper::redrive_webhooks(&app, &http, atelier_shared::clock::now()).await;
    }
}

/// A listener on the loopback at `port`.
async fn bind(port: u16) -> anyhow::Result<tokio::net::TcpListener> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))
}

/// Serves `router` until Ctrl-C.
async fn serve_until_ctrl_c(
    listener: tokio::net::TcpListener,
    router: axum::Router,
) -> anyhow::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The consumer's signer: the configured key (`ATELIER_SIGNING_SECRET_ID` or
/// `ATELIER_SIGNING_CREDENTIALS`), else a test CA made for this run, its certificate written to
/// `dir/anchor.pem` for a verifier to trust (docs/api.md, "Content credentials").
async fn local_signing(
    dir: &Path,
    clients: &Clients,
) -> anyhow::Result<atelier_shared::adapters::credentials::Signing> {
    use atelier_shared::adapters::credentials::{self, Signing, SigningSetupError, test_ca};
    match credentials::from_env(clients).await {
        Err(SigningSetupError::Unset) => {}
        configured => return Ok(configured?),
    }
    let ca = test_ca::generate("Atelier (local)")?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("anchor.pem"), &ca.anchor_pem)?;
    eprintln!(
        "Content credentials signed by a CA made for this run: {}",
        dir.join("anchor.pem").display()
    );
    Ok(Signing::from_json(&ca.secret_json)?)
}
