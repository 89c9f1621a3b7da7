//! The commands: each is a few API calls and what to print about them.
//!
//! Paid commands (`edit`, `repair`) follow one path: fingerprint the request, find or write
//! its journal entry (key and uploaded assets), submit with that key, record the job, wait,
//! download, and only then forget the entry. See `journal.rs` for why.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::client::{Api, Hook};
use crate::config::{Login, Saved};
use crate::journal::{Entry, Fingerprint, Journal};
use crate::{EditArgs, EditOptions, RepairArgs};

/// What every command gets.
pub struct Ctx {
    pub api: Api,
    pub home: PathBuf,
    /// Who the token is for (part of a paid request's fingerprint).
    pub user: Option<String>,
    /// Print the server's JSON instead of sentences.
    pub json: bool,
    pub hook: Hook,
}

// ---- the API's JSON, as far as the client reads it (unknown fields are ignored) ----

#[derive(Debug, Deserialize)]
struct Upload {
    asset_id: String,
    upload_url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Job {
    id: String,
    #[serde(default)]
    operation: String,
    status: String,
    #[serde(default)]
    credits: i64,
    #[serde(default)]
    settings: Value,
    #[serde(default)]
    created_at: String,
    failure: Option<Failure>,
    result: Option<JobResult>,
    /// On `GET /v1/edits/{id}` of an edit with repairs, or of a repair.
    lineage: Option<Lineage>,
}

#[derive(Debug, Deserialize)]
struct Failure {
    code: String,
    message: String,
    #[serde(default)]
    questions: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct JobResult {
    url: String,
    width: u32,
    height: u32,
    review: Review,
    leakage: Option<Leakage>,
    /// A repair: how its candidate compared with the version the user held.
    comparison: Option<Comparison>,
    /// A repair that did not improve: `url` is the previous version, kept.
    #[serde(default)]
    retained_previous: bool,
}

#[derive(Debug, Deserialize)]
struct Comparison {
    outcome: String,
    #[serde(default)]
    notes: String,
}

#[derive(Debug, Deserialize)]
struct Lineage {
    repairs_left: u32,
    current_job_id: String,
}

#[derive(Debug, Deserialize)]
struct Review {
    verdict: String,
    #[serde(default)]
    notes: String,
}

#[derive(Debug, Deserialize)]
struct Leakage {
    changed_outside: u64,
    outside: u64,
    ratio_ppm: u64,
    basis: String,
}

#[derive(Debug, Deserialize)]
struct Quote {
    credits: u32,
    #[serde(default)]
    lines: Vec<QuoteLine>,
}

#[derive(Debug, Deserialize)]
struct QuoteLine {
    item: String,
    credits: u32,
}

#[derive(Debug, Deserialize)]
struct Page<T> {
    items: Vec<T>,
    next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Style {
    id: String,
    name: String,
    #[serde(default)]
    blurb: String,
}

#[derive(Debug, Deserialize)]
struct Account {
    user_id: String,
    balance: i64,
    in_flight: i64,
    max_in_flight: u32,
}

#[derive(Debug, Deserialize)]
struct LedgerRow {
    amount: i64,
    kind: String,
    reference: String,
    #[serde(default)]
    reason: Option<String>,
    created_at: String,
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "succeeded" | "failed" | "canceled")
}

impl Ctx {
    /// GETs a path; prints the JSON in `--json` mode and returns it decoded.
    async fn fetch<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let value: Value = self.api.get(path).await?;
        self.decode(value, path)
    }

    fn decode<T: DeserializeOwned>(&self, value: Value, what: &str) -> anyhow::Result<T> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        serde_json::from_value(value).with_context(|| format!("unexpected answer to {what}"))
    }

    /// Prints a line unless `--json` asked for JSON only.
    fn say(&self, line: impl AsRef<str>) {
        if !self.json {
            println!("{}", line.as_ref());
        }
    }

    async fn post_json(&self, what: &str, path: &str, body: &Value) -> anyhow::Result<Value> {
        let reply = self
            .api
            .send(
                what,
                || self.api.request(Method::POST, path).json(body),
                Hook::None,
            )
            .await?;
        Ok(reply.json(what)?)
    }
}

// ---- login ----

/// How `login` gets its token.
#[derive(Debug, Clone, Copy)]
pub enum LoginWith<'a> {
    /// A token the user already has.
    Token(&'a str),
    /// A dev token for this user from the local issuer (`POST {issuer}/token`).
    DevUser(&'a str),
    /// OpenID Connect in a browser: code + PKCE with a loopback redirect.
    Oidc {
        client_id: &'a str,
        /// Open the address in the user's browser (only on a terminal: a script or a test
        /// reads the printed address instead).
        open_browser: bool,
    },
}

/// A dev ID token from the local issuer.
async fn dev_login(ctx: &Ctx, user: &str, issuer: &str) -> anyhow::Result<Login> {
    let url = format!("{issuer}/token");
    // Twelve hours: a working session; the issuer caps it anyway.
    let body = json!({ "user": user, "ttl": 43_200 });
    let reply = ctx
        .api
        .send(
            "the dev issuer",
            || ctx.api.external(Method::POST, &url).json(&body),
            Hook::None,
        )
        .await?;
    #[derive(Deserialize)]
    struct Issued {
        token: String,
        expires_in: u64,
    }
    let issued: Issued = reply.json(&url).with_context(|| {
        format!("getting a dev token from {url} (only a local run serves the dev issuer; elsewhere `atelier login` signs in in a browser)")
    })?;
    Ok(Login {
        user: crate::config::token_subject(&issued.token).or(Some(user.to_owned())),
        token: issued.token,
        expires_at: Some(crate::config::now_secs() + issued.expires_in),
        refresh: None,
    })
}

pub async fn login(ctx: &Ctx, with: LoginWith<'_>, issuer: Option<&str>) -> anyhow::Result<()> {
    let api = ctx.api.base().to_owned();
    let issuer = issuer
        .map(|i| i.trim_end_matches('/').to_owned())
        .unwrap_or_else(|| format!("{api}/dev-issuer"));
    if !matches!(with, LoginWith::Token(_)) {
        crate::config::require_secure("the issuer", &issuer)?;
    }
    let login = match with {
        LoginWith::Token(token) => Login {
            token: token.trim().to_owned(),
            user: crate::config::token_subject(token),
            expires_at: None,
            refresh: None,
        },
        LoginWith::DevUser(user) => dev_login(ctx, user, &issuer).await?,
        LoginWith::Oidc {
            client_id,
            open_browser,
        } => {
            let http = reqwest::Client::new();
            let paste = !open_browser;
            let (tokens, refresh) = crate::oidc::sign_in(&http, &issuer, client_id, paste, |url| {
                eprintln!("Open this address in a browser to sign in:\n  {url}");
                if open_browser {
                    open_in_browser(url);
                } else {
                    eprintln!(
                        "If that browser is on another machine, paste here the address it ends on\n(its page will not load; the address holds the sign-in's answer):"
                    );
                }
            })
            .await?;
            Login {
                user: crate::config::token_subject(&tokens.id_token),
                token: tokens.id_token,
                expires_at: Some(crate::config::now_secs() + tokens.expires_in),
                refresh: Some(refresh).filter(|r| !r.refresh_token.is_empty()),
            }
        }
    };
    let mut saved = Saved::load(&ctx.home)?;
    let who = login
        .user
        .clone()
        .unwrap_or_else(|| "(unknown user)".into());
    saved.api = Some(api.clone());
    let choice = crate::vault::Choice::from_env()?;
    let kept = match saved.store(&ctx.home, &api, login, choice)? {
        crate::vault::Place::Keychain => "the token is in the OS keychain".to_owned(),
        crate::vault::Place::File => format!("saved in {}", ctx.home.join("config.json").display()),
    };
    ctx.say(format!("Logged in to {api} as {who} ({kept})"));
    Ok(())
}

/// `logout`: forgets the saved login for the API (other APIs' logins stay).
pub fn logout(ctx: &Ctx) -> anyhow::Result<()> {
    let mut saved = Saved::load(&ctx.home)?;
    let api = ctx.api.base().to_owned();
    if !saved.forget(&ctx.home, &api)? {
        ctx.say(format!("Not logged in to {api}"));
        return Ok(());
    }
    ctx.say(format!("Logged out of {api}"));
    Ok(())
}

/// Opens `url` in the user's browser when a person is at the terminal; a script, a test or a
/// remote shell gets the printed address only.
fn open_in_browser(url: &str) {
    if std::io::stderr().is_terminal() && webbrowser::open(url).is_err() {
        eprintln!("(no browser could be opened here: open the address yourself)");
    }
}

// ---- reading ----

pub async fn styles(ctx: &Ctx) -> anyhow::Result<()> {
    let list: Page<Style> = ctx.fetch("/v1/styles").await?;
    for s in list.items {
        ctx.say(format!("{:<18} {:<18} {}", s.id, s.name, s.blurb));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
struct Pack {
    id: String,
    credits: i64,
    amount: i64,
    currency: String,
}

pub async fn packs(ctx: &Ctx) -> anyhow::Result<()> {
    let list: Page<Pack> = ctx.fetch("/v1/packs").await?;
    for p in list.items {
        ctx.say(format!(
            "{:<12} {:>6} credits  {}.{:02} {}",
            p.id,
            p.credits,
            p.amount / 100,
            p.amount % 100,
            p.currency.to_uppercase()
        ));
    }
    Ok(())
}

pub async fn balance(ctx: &Ctx) -> anyhow::Result<()> {
    let a: Account = ctx.fetch("/v1/account").await?;
    ctx.say(format!(
        "{}: {} credits ({} of at most {} edits in flight)",
        a.user_id, a.balance, a.in_flight, a.max_in_flight
    ));
    Ok(())
}

pub async fn ledger(ctx: &Ctx, limit: u16) -> anyhow::Result<()> {
    let page: Page<LedgerRow> = ctx
        .fetch(&format!("/v1/account/ledger?limit={limit}"))
        .await?;
    for r in &page.items {
        ctx.say(format!(
            "{}  {:>+4}  {:<6}  {}{}",
            r.created_at,
            r.amount,
            r.kind,
            r.reference,
            r.reason
                .as_deref()
                .map(|x| format!("  ({x})"))
                .unwrap_or_default()
        ));
    }
    if page.items.is_empty() {
        ctx.say("(no ledger rows)");
    }
    if page.next_cursor.is_some() {
        ctx.say(format!(
            "(more rows: raise --limit, at most 100; showing {})",
            page.items.len()
        ));
    }
    Ok(())
}

pub async fn jobs(ctx: &Ctx, limit: u16) -> anyhow::Result<()> {
    let page: Page<Job> = ctx.fetch(&format!("/v1/edits?limit={limit}")).await?;
    for j in &page.items {
        ctx.say(format!(
            "{}  {:<10}  {:<6}  {:<28}  {:>2} cr  {}",
            j.id,
            j.status,
            j.operation,
            settings_summary(&j.settings),
            j.credits,
            j.created_at
        ));
    }
    if page.items.is_empty() {
        ctx.say("(no edits yet)");
    }
    Ok(())
}

pub async fn job(ctx: &Ctx, id: &str) -> anyhow::Result<()> {
    let job: Job = ctx.fetch(&format!("/v1/edits/{id}")).await?;
    ctx.say(format!(
        "{}  {}  {}  {}  {} credits  created {}",
        job.id,
        job.status,
        job.operation,
        settings_summary(&job.settings),
        job.credits,
        job.created_at
    ));
    if let Some(r) = &job.result {
        ctx.say(format!("Result: {} ({}x{})", r.url, r.width, r.height));
        print_review(ctx, r, &job);
    }
    if let Some(f) = &job.failure {
        print_failure(ctx, f, &job);
    }
    if let Some(l) = &job.lineage {
        ctx.say(format!(
            "Current version: {}; repairs left: {}",
            l.current_job_id, l.repairs_left
        ));
    }
    Ok(())
}

pub async fn cancel(ctx: &Ctx, id: &str) -> anyhow::Result<()> {
    let path = format!("/v1/edits/{id}/cancel");
    let reply = ctx
        .api
        .send(
            "cancel",
            || ctx.api.request(Method::POST, &path),
            Hook::None,
        )
        .await?;
    let job: Job = ctx.decode(reply.json("cancel")?, "cancel")?;
    ctx.say(format!(
        "{} is {}; {} credits refunded",
        job.id, job.status, job.credits
    ));
    Ok(())
}

// ---- quoting and paying ----

/// What a file is, from its first bytes (the API accepts these three).
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// One file to upload: its role in the request, the upload kind, its bytes and type.
struct Input {
    role: &'static str,
    bytes: Vec<u8>,
    content_type: &'static str,
}

fn read_image(path: &Path, role: &'static str, png_only: bool) -> anyhow::Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let content_type = sniff_image(&bytes)
        .filter(|t| !png_only || *t == "image/png")
        .with_context(|| {
            let want = if png_only {
                "a PNG"
            } else {
                "a PNG, JPEG or WebP image"
            };
            format!("{} is not {want}", path.display())
        })?;
    Ok(Input {
        role,
        bytes,
        content_type,
    })
}

fn read_inputs(photo: &Path, o: &EditOptions) -> anyhow::Result<Vec<Input>> {
    let mut inputs = vec![read_image(photo, "original", false)?];
    if let Some(mask) = &o.mask {
        inputs.push(read_image(mask, "mask", true)?);
    }
    if let Some(r) = &o.style_ref {
        inputs.push(read_image(r, "style_reference", false)?);
    }
    Ok(inputs)
}

/// The `POST /v1/edits` body (field names: `EditRequest` in shared/src/domain/edit.rs).
fn edit_body(o: &EditOptions, assets: &BTreeMap<String, String>) -> Value {
    let mut body = json!({ "style": o.style, "target": o.target });
    let mut set = |field: &str, value: Option<&String>| {
        if let Some(v) = value {
            body[field] = json!(v);
        }
    };
    set("original_asset_id", assets.get("original"));
    set("mask_asset_id", assets.get("mask"));
    set("style_reference_asset_id", assets.get("style_reference"));
    set("custom_style", o.custom_style.as_ref());
    set("target_description", o.describe.as_ref());
    if let Some(strength) = o.strength {
        body["strength"] = json!(strength);
    }
    if !o.lock.is_empty() {
        body["locks"] = json!(o.lock);
    }
    body
}

/// `quote PHOTO …`: the price of the edit. The price depends only on the options (target,
/// style reference), so nothing is uploaded: well-formed stand-in asset ids are sent.
pub async fn quote(ctx: &Ctx, photo: &Path, o: &EditOptions) -> anyhow::Result<()> {
    let inputs = read_inputs(photo, o)?;
    let placeholder = format!("ast_{}", "0".repeat(26));
    let assets = inputs
        .iter()
        .map(|i| (i.role.to_owned(), placeholder.clone()))
        .collect();
    let value = ctx
        .post_json("quote", "/v1/quotes", &edit_body(o, &assets))
        .await?;
    let q: Quote = ctx.decode(value, "quote")?;
    print_quote(ctx, &q);
    Ok(())
}

fn print_quote(ctx: &Ctx, q: &Quote) {
    let lines: Vec<String> = q
        .lines
        .iter()
        .map(|l| format!("{} {}", l.item, l.credits))
        .collect();
    ctx.say(format!(
        "Price: {} credits ({})",
        q.credits,
        lines.join(", ")
    ));
}

/// The user part of a fingerprint (set from the token in `main`).
fn user_part(ctx: &Ctx) -> String {
    ctx.user.clone().unwrap_or_default()
}

/// `edit PHOTO …`: upload, quote, submit (once, whatever happens), wait, download.
pub async fn edit(ctx: &Ctx, args: &EditArgs) -> anyhow::Result<()> {
    let o = &args.options;
    let inputs = read_inputs(&args.photo, o)?;
    let options = json!({
        "style": o.style, "target": o.target, "strength": o.strength, "describe": o.describe,
        "custom_style": o.custom_style, "lock": o.lock,
    });
    let mut fp = Fingerprint::new("edit")
        .part("api", ctx.api.base().as_bytes())
        .part("user", user_part(ctx).as_bytes())
        .part("options", options.to_string().as_bytes());
    for role in ["original", "mask", "style_reference"] {
        fp = fp.optional(
            role,
            inputs
                .iter()
                .find(|i| i.role == role)
                .map(|i| i.bytes.as_slice()),
        );
    }
    let fingerprint = fp.finish();
    let journal = Journal::new(&ctx.home);
    let command = format!(
        "edit {} --style {} --target {}",
        args.photo.display(),
        crate::choices::wire(o.style),
        crate::choices::wire(o.target)
    );
    // A resumed entry's key may already have been sent: it must never be dropped before the
    // server has answered a submit with it.
    let (mut entry, resumed) = pending_entry(&journal, &fingerprint, &command, args.new)?;

    for input in &inputs {
        if entry.assets.contains_key(input.role) {
            continue; // uploaded by the interrupted run
        }
        let asset = upload(ctx, input).await?;
        entry.assets.insert(input.role.to_owned(), asset);
        journal.save(&entry)?;
    }
    let body = edit_body(o, &entry.assets);
    if !resumed {
        // The price before paying; a refused request (unknown style, …) stops here, and its
        // fresh entry (whose key was never sent) goes.
        let value = match ctx.post_json("quote", "/v1/quotes", &body).await {
            Ok(v) => v,
            Err(e) => {
                journal.remove(&fingerprint)?;
                return Err(e);
            }
        };
        let q: Quote = serde_json::from_value(value).context("unexpected quote")?;
        if !ctx.json {
            print_quote(ctx, &q);
        }
    }
    let default_out = {
        let stem = args
            .photo
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "photo".into());
        args.photo
            .with_file_name(format!("{stem}-{}.png", crate::choices::wire(o.style)))
    };
    let follow = Follow {
        out: args.out.clone().or(Some(default_out)),
        no_wait: args.no_wait,
        timeout: Duration::from_secs(args.timeout),
    };
    submit_and_follow(ctx, &journal, &mut entry, "/v1/edits", &body, &follow).await
}

/// `repair JOB "instruction"`: a paid follow-up on a finished job, same safety as `edit`.
pub async fn repair(ctx: &Ctx, args: &RepairArgs) -> anyhow::Result<()> {
    let fingerprint = Fingerprint::new("repair")
        .part("api", ctx.api.base().as_bytes())
        .part("user", user_part(ctx).as_bytes())
        .part("job", args.job.as_bytes())
        .part("instruction", args.instruction.as_bytes())
        .finish();
    let journal = Journal::new(&ctx.home);
    let command = format!("repair {} {:?}", args.job, args.instruction);
    let (mut entry, _) = pending_entry(&journal, &fingerprint, &command, args.new)?;
    journal.save(&entry)?;
    let body = json!({ "instruction": args.instruction });
    let follow = Follow {
        out: args.out.clone(),
        no_wait: args.no_wait,
        timeout: Duration::from_secs(args.timeout),
    };
    let path = format!("/v1/edits/{}/repairs", args.job);
    submit_and_follow(ctx, &journal, &mut entry, &path, &body, &follow).await
}

/// The journal entry of an interrupted run of this same command (`true`), or a new one.
fn pending_entry(
    journal: &Journal,
    fingerprint: &str,
    command: &str,
    new: bool,
) -> anyhow::Result<(Entry, bool)> {
    if new {
        journal.remove(fingerprint)?;
    } else if let Some(entry) = journal.load(fingerprint)? {
        eprintln!(
            "atelier: resuming the same {} (started {}s ago): same Idempotency-Key, it will not be charged twice (--new starts another)",
            entry.command,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().saturating_sub(entry.created_at))
                .unwrap_or(0)
        );
        return Ok((entry, true));
    }
    Ok((Entry::new(fingerprint, command), false))
}

/// Asks for an upload slot and PUTs the bytes to it; returns the asset id.
async fn upload(ctx: &Ctx, input: &Input) -> anyhow::Result<String> {
    let slot_body = json!({
        "kind": input.role, "content_type": input.content_type, "bytes": input.bytes.len(),
    });
    let slot: Upload = serde_json::from_value(
        ctx.post_json("upload slot", "/v1/uploads", &slot_body)
            .await?,
    )
    .context("unexpected upload slot")?;
    let reply = ctx
        .api
        .send(
            &format!("uploading the {}", input.role.replace('_', " ")),
            || {
                let mut req = ctx
                    .api
                    .external(Method::PUT, &slot.upload_url)
                    .body(input.bytes.clone());
                for (k, v) in &slot.headers {
                    // The client sets these itself from the body and the URL.
                    if !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("host")
                    {
                        req = req.header(k.as_str(), v.as_str());
                    }
                }
                req
            },
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem()).context(format!("uploading the {}", input.role));
    }
    Ok(slot.asset_id)
}

struct Follow {
    /// Where to save the result (`None`: `<job id>.png` in the current folder).
    out: Option<PathBuf>,
    no_wait: bool,
    timeout: Duration,
}

/// Submits with the entry's key, records the job, waits, downloads, forgets the entry.
async fn submit_and_follow(
    ctx: &Ctx,
    journal: &Journal,
    entry: &mut Entry,
    path: &str,
    body: &Value,
    follow: &Follow,
) -> anyhow::Result<()> {
    let (value, job, replayed) = submit_journaled(ctx, journal, entry, path, body).await?;
    if replayed {
        eprintln!(
            "atelier: {} was already submitted by an earlier run; not charged again",
            job.id
        );
    } else {
        eprintln!("atelier: submitted {} ({} credits)", job.id, job.credits);
    }
    if follow.no_wait {
        if ctx.json {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        ctx.say(format!(
            "{} is {}. `atelier job {}` shows it; rerunning this command waits for it and downloads it without charging again.",
            job.id, job.status, job.id
        ));
        return Ok(());
    }
    wait_and_download(ctx, journal, entry, &job.id, follow).await
}

/// The paid request, journaled before it leaves and with its job after: (the job's JSON, the
/// job, whether an earlier run had submitted it).
async fn submit_journaled(
    ctx: &Ctx,
    journal: &Journal,
    entry: &mut Entry,
    path: &str,
    body: &Value,
) -> anyhow::Result<(Value, Job, bool)> {
    // Durable before the first byte of the paid request leaves.
    journal.save(entry)?;
    let key = entry.idempotency_key.clone();
    let resume_hint = "rerun the same command to resume: it reuses the same Idempotency-Key, so nothing is charged twice";
    let reply = ctx
        .api
        .send(
            "submit",
            || {
                ctx.api
                    .request(Method::POST, path)
                    .header("idempotency-key", &key)
                    .json(body)
            },
            ctx.hook,
        )
        .await
        .context(resume_hint)?;
    let status = reply.status;
    let replayed = reply.header("idempotent-replayed") == Some("true") || status.as_u16() == 200;
    if !status.is_success() {
        let refused = status.is_client_error() && status.as_u16() != 409;
        let err = reply.into_problem();
        if refused {
            // A refused request created no job and charged nothing: start clean next time.
            journal.remove(&entry.fingerprint)?;
            return Err(err.into());
        }
        return Err(anyhow::Error::from(err).context(if status.as_u16() == 409 {
            "pass --new to submit a new request"
        } else {
            resume_hint
        }));
    }
    let value: Value = reply.json("submit")?;
    let job: Job = serde_json::from_value(value.clone()).context("unexpected job")?;
    entry.job_id = Some(job.id.clone());
    journal.save(entry)?;
    Ok((value, job, replayed))
}

/// Waits for the job to end, then saves its image (or explains its failure); either way the
/// journal entry is done.
async fn wait_and_download(
    ctx: &Ctx,
    journal: &Journal,
    entry: &Entry,
    job_id: &str,
    follow: &Follow,
) -> anyhow::Result<()> {
    let out = follow
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{job_id}.png")));
    let (value, job) = wait(ctx, job_id, follow.timeout, download_format(&out)).await?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    }
    match (&job.result, &job.failure) {
        (Some(result), _) if job.status == "succeeded" => {
            download(ctx, &result.url, &out).await?;
            journal.remove(&entry.fingerprint)?;
            ctx.say(format!(
                "Saved {} ({}x{}) from {}",
                out.display(),
                result.width,
                result.height,
                job.id
            ));
            print_review(ctx, result, &job);
            Ok(())
        }
        (_, failure) => {
            journal.remove(&entry.fingerprint)?;
            match failure {
                Some(f) => {
                    print_failure(ctx, f, &job);
                    Err(anyhow!("{} {}: {}", job.id, job.status, f.code))
                }
                None => Err(anyhow!(
                    "{} {} ({} credits refunded)",
                    job.id,
                    job.status,
                    job.credits
                )),
            }
        }
    }
}

/// Polls the job until it is finished, showing its state and the time taken.
/// The result's download format for a file: the JPEG rendition for `.jpg`/`.jpeg`, else the
/// lossless PNG master (a desktop client has the bandwidth; a phone app asks for `jpeg`).
fn download_format(out: &Path) -> &'static str {
    match out.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg") => "jpeg",
        _ => "png",
    }
}

async fn wait(
    ctx: &Ctx,
    id: &str,
    timeout: Duration,
    format: &str,
) -> anyhow::Result<(Value, Job)> {
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let path = format!("/v1/edits/{id}?format={format}");
    let mut last = String::new();
    // The job's ETag and body as last seen: each next read waits on the server until it
    // changes (a long-poll), instead of asking again and again.
    let mut held: Option<(String, Value)> = None;
    loop {
        let wait_secs = timeout
            .saturating_sub(started.elapsed())
            .as_secs()
            .clamp(1, LONG_POLL_SECS);
        let tag = held.as_ref().map(|(tag, _)| tag.clone());
        let request = ctx.api.send(
            &path,
            || {
                let req = ctx.api.request(Method::GET, &path);
                match &tag {
                    Some(tag) => req
                        .header("prefer", format!("wait={wait_secs}"))
                        .header("if-none-match", tag),
                    None => req,
                }
            },
            Hook::None,
        );
        let reply = spinning(request, tty, started, &last)
            .await
            .context("rerun the same command to keep waiting (nothing is charged twice)")?;
        let value = match held.take() {
            Some((tag, value)) if reply.status == reqwest::StatusCode::NOT_MODIFIED => {
                if reply.header("preference-applied").is_none() {
                    // Answered without waiting (this user holds the most waits the API
                    // allows): pause instead of asking again at once.
                    tokio::time::sleep(UNWAITED_PAUSE).await;
                }
                held = Some((tag, value.clone()));
                value
            }
            _ => {
                let tag = reply.header("etag").map(str::to_owned);
                let value: Value = reply
                    .json(&path)
                    .context("rerun the same command to keep waiting (nothing is charged twice)")?;
                held = tag.map(|tag| (tag, value.clone()));
                value
            }
        };
        let job: Job = serde_json::from_value(value.clone()).context("unexpected job")?;
        let secs = started.elapsed().as_secs();
        if !tty && job.status != last {
            eprintln!("atelier: {id} {} ({secs}s)", job.status);
        }
        last.clone_from(&job.status);
        if is_terminal(&job.status) {
            if tty {
                eprintln!();
            }
            return Ok((value, job));
        }
        if started.elapsed() > timeout {
            if tty {
                eprintln!();
            }
            bail!(
                "{id} is still {} after {secs}s; rerun the same command to keep waiting (nothing is charged twice), or `atelier job {id}`",
                job.status
            );
        }
    }
}

/// The longest a read of a job waits on the server for it to change (`Prefer: wait=20`, the
/// API's longest).
const LONG_POLL_SECS: u64 = 20;

/// The pause before asking again after an unchanged job was answered without the wait.
const UNWAITED_PAUSE: Duration = Duration::from_secs(2);

/// Awaits `request`, redrawing the spinner line (state, seconds waited) every 750 ms on a
/// terminal.
async fn spinning<T>(
    request: impl std::future::Future<Output = T>,
    tty: bool,
    started: Instant,
    status: &str,
) -> T {
    let frames = ['|', '/', '-', '\\'];
    let mut tick = 0usize;
    tokio::pin!(request);
    loop {
        tokio::select! {
            out = &mut request => return out,
            () = tokio::time::sleep(Duration::from_millis(750)), if tty => {
                let secs = started.elapsed().as_secs();
                eprint!("\r{} {status:<11} {secs:>4}s ", frames[tick % frames.len()]);
                tick += 1;
            }
        }
    }
}

/// Downloads the result to `out` (written whole or not at all).
async fn download(ctx: &Ctx, url: &str, out: &Path) -> anyhow::Result<()> {
    let reply = ctx
        .api
        .send(
            "downloading the result",
            || ctx.api.external(Method::GET, url),
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem()).context("downloading the result");
    }
    let tmp = out.with_extension(format!("part-{}", std::process::id()));
    std::fs::write(&tmp, &reply.body).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("saving {}", out.display()))
}

fn settings_summary(settings: &Value) -> String {
    let s = |k: &str| settings.get(k).and_then(Value::as_str).unwrap_or("?");
    format!("{} on {}", s("style"), s("target"))
}

fn print_review(ctx: &Ctx, r: &JobResult, job: &Job) {
    let notes = if r.review.notes.is_empty() {
        String::new()
    } else {
        format!(" — {}", r.review.notes)
    };
    ctx.say(format!("Review: {}{notes}", r.review.verdict));
    if let Some(c) = &r.comparison {
        ctx.say(format!(
            "Compared with the previous version: {}{}",
            c.outcome,
            if c.notes.is_empty() {
                String::new()
            } else {
                format!(" — {}", c.notes)
            }
        ));
    }
    if r.retained_previous {
        ctx.say("The repair did not improve on the previous version: that version is kept (and is what was saved).");
    }
    if let Some(l) = &r.leakage {
        let target = job
            .settings
            .get("target")
            .and_then(Value::as_str)
            .map_or(
                "selection",
                |t| if t == "brush" { "brushed area" } else { t },
            );
        let against = if l.basis == "mask" {
            "the mask"
        } else {
            "the checker's box"
        };
        ctx.say(format!(
            "Leakage: {:.2}% of the pixels outside the {target} changed ({} of {}, measured against {against})",
            l.ratio_ppm as f64 / 10_000.0,
            l.changed_outside,
            l.outside
        ));
    }
}

fn print_failure(ctx: &Ctx, f: &Failure, job: &Job) {
    ctx.say(format!(
        "{} {}: {} — {}",
        job.id, job.status, f.code, f.message
    ));
    for q in &f.questions {
        ctx.say(format!("  ? {q}"));
    }
    ctx.say(format!(
        "{} credits were refunded (see `atelier ledger`)",
        job.credits
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_recognised_by_their_first_bytes() {
        assert_eq!(sniff_image(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(sniff_image(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff_image(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff_image(b"GIF89a"), None);
        assert_eq!(sniff_image(b""), None);
    }

    #[test]
    fn the_edit_body_names_the_api_fields_and_omits_what_was_not_given() {
        let o = EditOptions {
            style: crate::choices::Style::Embroidery,
            target: crate::choices::Target::Brush,
            mask: None,
            describe: Some("the grey cat".into()),
            strength: None,
            style_ref: None,
            custom_style: None,
            lock: vec!["the red collar".into()],
        };
        let assets = BTreeMap::from([
            ("original".to_owned(), "ast_a".to_owned()),
            ("mask".to_owned(), "ast_m".to_owned()),
        ]);
        assert_eq!(
            edit_body(&o, &assets),
            json!({
                "style": "embroidery", "target": "brush", "original_asset_id": "ast_a",
                "mask_asset_id": "ast_m", "target_description": "the grey cat",
                "locks": ["the red collar"],
            })
        );
    }
}

// ---- buying credits ----

#[derive(Debug, Deserialize)]
struct Checkout {
    id: String,
    url: String,
}

/// A checkout page on this machine is the stand-in Stripe's (a local run): real Stripe's
/// pages are on its own https host.
fn stand_in_checkout(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| {
        u.scheme() == "http"
            && matches!(u.host_str(), Some("127.0.0.1" | "localhost"))
            && u.path().starts_with("/checkout/")
    })
}

/// Buys a pack: a Checkout Session whose URL is printed (open it to pay). On a local run the
/// session is the stand-in Stripe's: it is paid there and the credits are awaited.
pub async fn buy(ctx: &Ctx, pack: &str, web: bool, timeout: u64) -> anyhow::Result<()> {
    let before: Account = ctx.api.get("/v1/account").await?;
    // A fresh key per purchase; a retry inside `send` reuses it, so one command is one session.
    let key = uuid::Uuid::new_v4().to_string();
    let body = serde_json::json!({ "pack": pack });
    let reply = ctx
        .api
        .send(
            "checkout",
            || {
                ctx.api
                    .request(Method::POST, "/v1/checkout")
                    .header("idempotency-key", &key)
                    .json(&body)
            },
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem().into());
    }
    let checkout: Checkout = ctx.decode(reply.json("checkout")?, "checkout")?;
    ctx.say(format!("Checkout {}: pay at {}", checkout.id, checkout.url));
    if web {
        open_in_browser(&checkout.url);
    }
    if !stand_in_checkout(&checkout.url) {
        ctx.say("Credits arrive when Stripe confirms the payment; see `atelier balance`.");
        return Ok(());
    }
    let paid = ctx
        .api
        .external(Method::POST, &format!("{}/pay", checkout.url))
        .send()
        .await
        .context("paying on the stand-in Stripe")?;
    anyhow::ensure!(
        paid.status().is_success(),
        "the stand-in Stripe refused the payment: {}",
        paid.status()
    );
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let now: Account = ctx.api.get("/v1/account").await?;
        if now.balance > before.balance {
            ctx.say(format!(
                "Paid on the stand-in Stripe: {} credits now (was {})",
                now.balance, before.balance
            ));
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "paid, but no credits arrived within {timeout}s; check `atelier ledger` later"
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
