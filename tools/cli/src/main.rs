//! `atelier`: the command-line client of the Atelier API. It speaks HTTP only, so it works
//! against the local run, the local cloud and a real deployment alike.
//!
//! Exit status: 0 done; 1 the server refused, the job failed, or the network gave up (the
//! message names the problem `code`); 2 bad usage; 3 only with the kill test's hook.

mod args;
mod choices;
mod client;
mod commands;
mod config;
mod journal;
mod login;
mod oidc;
mod secure;
mod vault;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use sha2::Digest;

use crate::args::{EditArgs, EditOptions, RepairArgs};
use crate::client::{Api, Hook};
use crate::commands::Ctx;
use crate::config::Saved;

#[derive(Parser)]
#[command(
    name = "atelier",
    version,
    about = "Handmade-looking edits of one part of a photo"
)]
struct Cli {
    /// API base URL [default: the last one logged in to, else http://127.0.0.1:8787].
    #[arg(long, env = "ATELIER_API", global = true)]
    api: Option<String>,
    /// Print the server's JSON on stdout (progress still goes to stderr).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Log in: in your browser at the identity provider (OpenID Connect, code + PKCE, a
    /// loopback redirect; the token is renewed with its refresh token), or with a token read
    /// from standard input (--with-token), or as a dev user of the local issuer (--user).
    Login(LoginArgs),
    /// Forget the saved login for the API (the next command asks you to log in).
    Logout,
    /// Print a completion script: `atelier completions bash > ~/.local/share/bash-completion/completions/atelier`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The styles (media) on offer.
    Styles,
    /// What an edit would cost.
    Quote {
        photo: PathBuf,
        #[command(flatten)]
        options: EditOptions,
    },
    /// Restyle one part of a photo: upload, pay once, wait, download the result.
    Edit(EditArgs),
    /// Ask for a repair of a finished edit ("make the collar red again").
    Repair(RepairArgs),
    /// Cancel a queued edit (refunded).
    Cancel { job: String },
    /// Your recent edits.
    Jobs {
        #[arg(long, default_value_t = 20)]
        limit: u16,
    },
    /// One edit, with its result or failure.
    Job { id: String },
    /// Your credits.
    Balance,
    /// Buy a credit pack (see `atelier packs`): prints the checkout URL to pay at. Locally the
    /// stand-in Stripe is paid at once and the command waits for the credits.
    Buy {
        pack: String,
        /// Open the checkout page in your browser.
        #[arg(long)]
        web: bool,
        /// Stop waiting for the credits after this many seconds (local runs).
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// The credit packs for sale.
    Packs,
    /// Your ledger: grants, debits, refunds.
    Ledger {
        #[arg(long, default_value_t = 20)]
        limit: u16,
    },
}

/// How `login` gets its token (the browser when no flag says otherwise).
#[derive(Args, Debug)]
struct LoginArgs {
    /// A dev token for this user from the local dev issuer (local runs only).
    #[arg(long, conflicts_with = "with_token")]
    user: Option<String>,
    /// Read a token from standard input (so it never lands in the shell's history):
    /// `atelier login --with-token < token.txt`.
    #[arg(long)]
    with_token: bool,
    /// Print the sign-in address instead of opening a browser (a remote shell); the address
    /// the browser ends on may then be pasted back.
    #[arg(long)]
    no_browser: bool,
    /// The app client id at the identity provider.
    #[arg(long, default_value = "atelier")]
    client_id: String,
    /// The issuer [default: API/dev-issuer].
    #[arg(long)]
    issuer: Option<String>,
    /// The browser sign-in (now the default; kept so existing scripts still run).
    #[arg(long, hide = true)]
    oidc: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Completions { shell } = cli.command {
        let mut command = <Cli as clap::CommandFactory>::command();
        clap_complete::generate(shell, &mut command, "atelier", &mut std::io::stdout());
        return Ok(());
    }
    let home = config::home()?;
    let mut saved = Saved::load(&home)?;
    let api_url = config::api_url(cli.api.as_deref(), &saved);
    secure::require_secure("the API", &api_url)?;
    let login = match cli.command {
        Command::Login(_) | Command::Logout => None,
        _ => config::current_login(&home, &mut saved, &api_url).await?,
    };
    let token = std::env::var("ATELIER_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .or_else(|| login.as_ref().map(|l| l.token.clone()));
    // The fingerprint's user: the token's subject, else (an opaque token) a digest of it.
    let user = token
        .as_deref()
        .map(|t| config::token_subject(t).unwrap_or_else(|| hex::encode(sha2::Sha256::digest(t))));
    let needs_token = !matches!(
        cli.command,
        Command::Login(_) | Command::Logout | Command::Styles | Command::Packs
    );
    if needs_token && token.is_none() {
        anyhow::bail!(
            "not logged in to {api_url}: run `atelier login` (or `atelier login --user NAME` on a local run), or set ATELIER_TOKEN"
        );
    }
    let hook = if std::env::var("ATELIER_CLI_EXIT_AFTER_SUBMIT_SENT").as_deref() == Ok("1") {
        Hook::ExitAfterSent
    } else {
        Hook::None
    };
    let ctx = Ctx {
        api: Api::new(&api_url, token).context("starting the HTTP client")?,
        home,
        user,
        json: cli.json,
        hook,
    };
    dispatch(&ctx, cli.command).await
}

async fn dispatch(ctx: &Ctx, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Login(args) => login(ctx, &args).await,
        Command::Logout => commands::logout(ctx),
        Command::Completions { .. } => Ok(()),
        Command::Styles => commands::styles(ctx).await,
        Command::Quote { photo, options } => commands::quote(ctx, &photo, &options).await,
        Command::Edit(args) => commands::edit(ctx, &args).await,
        Command::Repair(args) => commands::repair(ctx, &args).await,
        Command::Cancel { job } => commands::cancel(ctx, &job).await,
        Command::Jobs { limit } => commands::jobs(ctx, limit).await,
        Command::Job { id } => commands::job(ctx, &id).await,
        Command::Balance => commands::balance(ctx).await,
        Command::Buy { pack, web, timeout } => commands::buy(ctx, &pack, web, timeout).await,
        Command::Packs => commands::packs(ctx).await,
        Command::Ledger { limit } => commands::ledger(ctx, limit).await,
    }
}

async fn login(ctx: &Ctx, args: &LoginArgs) -> anyhow::Result<()> {
    let token;
    let with = if args.with_token {
        token =
            std::io::read_to_string(std::io::stdin()).context("reading the token from stdin")?;
        anyhow::ensure!(!token.trim().is_empty(), "no token on standard input");
        commands::LoginWith::Token(token.trim())
    } else if let Some(user) = args.user.as_deref() {
        commands::LoginWith::DevUser(user)
    } else {
        commands::LoginWith::Oidc {
            client_id: &args.client_id,
            open_browser: !args.no_browser,
        }
    };
    commands::login(ctx, with, args.issuer.as_deref()).await
}
