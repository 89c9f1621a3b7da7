//! The `atelier` command-line client, run as a person runs it: the real binary, its own
//! `ATELIER_HOME`, against the real local API over HTTP (the dev issuer, the authorizer, the
//! API on ministack, the SQS poller feeding the consumer, the stand-in model server).
//!
//! The binary: `CARGO_BIN_EXE_atelier` only exists inside atelier-cli's own tests, and a
//! dev-dependency builds a crate's library, never its binary. So the tests ask cargo to build
//! it (`cargo build -p atelier-cli --bin atelier`, once per run; a no-op when `cargo xtask test`
//! already built every target) and take the path cargo reports: never a stale or guessed file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use atelier_local::authorizer::Authorizer;
use atelier_local::issuer::DevIssuer;
use atelier_local::serve::ISSUER_PATH;
use atelier_model_server::samples;
use atelier_shared::domain::LedgerKind;
use atelier_shared::domain::catalogue::DEFAULT_IMAGE_MODEL;
use atelier_tests::{Harness, StandIn};
use serde_json::Value;
use tokio::sync::OnceCell;

static BINARY: OnceCell<PathBuf> = OnceCell::const_new();

/// The `atelier` binary, built by cargo for this profile.
async fn binary() -> PathBuf {
    BINARY
        .get_or_init(|| async {
            tokio::task::spawn_blocking(|| atelier_tests::build_binary("atelier-cli", "atelier"))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .await
        .clone()
}

/// The local system on ephemeral ports, on a stack of its own (its queue is this test's alone).
struct Local {
    h: Harness,
    api: String,
    /// A folder of this test's own: `home/` is ATELIER_HOME, photos sit beside it.
    dir: PathBuf,
    model: StandIn,
    _stripe: atelier_tests::stripe::StripeStandIn,
}

async fn start() -> Local {
    let model = StandIn::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let api = format!("http://{addr}");
    // The stand-in Stripe delivers its events to this API, as `stripe listen` would.
    let stripe =
        atelier_tests::stripe::StripeStandIn::forwarding(Some(format!("{api}/v1/webhooks/stripe")))
            .await;
    let h = Harness::isolated(|_| {}).await.with_stripe(&stripe);
    let issuer_url = format!("{api}{ISSUER_PATH}");
    let issuer = DevIssuer::ephemeral(&issuer_url).unwrap_or_else(|e| panic!("{e}"));
    let router = atelier_local::serve::app(
        h.app.clone(),
        Authorizer::new(&issuer_url, atelier_local::AUDIENCE),
        Some(issuer),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    tokio::spawn(atelier_local::poller::run(
        Arc::new(h.processor(&model)),
        h.clients.sqs.clone(),
        h.app.config.resources.queue_url.clone(),
        2,
        Default::default(),
    ));
    let dir = std::env::temp_dir().join(format!("atelier-cli-test-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    Local {
        h,
        api,
        dir,
        model,
        _stripe: stripe,
    }
}

/// One run of the client.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:#?}"))
    }
}

impl Local {
    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// Writes a sample photo into the test's folder.
    fn photo(&self, name: &str, bytes: Vec<u8>) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    async fn atelier(&self, args: &[&str]) -> Run {
        self.atelier_with(args, &[]).await
    }

    /// The client with this test's home and API; logins in `config.json`, never in the
    /// keychain of the machine running the tests (the keychain test brings its own).
    async fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(binary().await);
        command
            .args(args)
            .env("ATELIER_HOME", self.home())
            .env("ATELIER_API", &self.api)
            .env("ATELIER_CREDENTIALS", "file")
            .env_remove("ATELIER_TOKEN")
            .env_remove("ATELIER_CLI_EXIT_AFTER_SUBMIT_SENT");
        command
    }

    /// The client started with its standard streams piped, for a test that talks to it.
    async fn interactive(&self, args: &[&str]) -> tokio::process::Child {
        self.command(args)
            .await
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("running atelier: {e}"))
    }

    async fn atelier_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let out = self
            .command(args)
            .await
            .envs(env.iter().copied())
            .output()
            .await
            .unwrap_or_else(|e| panic!("running atelier: {e}"));
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Logs a fresh user in through the dev issuer; returns the user.
    async fn login(&self) -> atelier_shared::domain::UserId {
        let user = self.h.user();
        let run = self.atelier(&["login", "--user", &user.to_string()]).await;
        assert_eq!(run.code, Some(0), "{run:#?}");
        user
    }

    async fn balance(&self) -> i64 {
        let run = self.atelier(&["--json", "balance"]).await;
        assert_eq!(run.code, Some(0), "{run:#?}");
        run.json()["balance"]
            .as_i64()
            .unwrap_or_else(|| panic!("no balance: {run:#?}"))
    }

    fn pending(&self) -> usize {
        std::fs::read_dir(self.home().join("pending"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The result file is a PNG the size of the sample photo.
fn assert_png_of_sample_size(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", path.display());
    let image = image::load_from_memory(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (image.width(), image.height()),
        (samples::WIDTH, samples::HEIGHT)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_edit_a_sample_photo_and_pay_exactly_the_quote() {
    let local = start().await;
    let user = local.login().await;
    let photo = local.photo("single_pet.png", samples::single_pet());
    let photo_arg = photo.to_string_lossy().into_owned();
    let pet = ["--style", "embroidery", "--target", "pet"];
    let quote = local
        .atelier(&[&["--json", "quote", &photo_arg][..], &pet].concat())
        .await;
    assert_eq!(quote.code, Some(0), "{quote:#?}");
    let price = quote.json()["credits"].as_i64().expect("the quote's price");
    let before = local.balance().await;

    let run = local
        .atelier(&[&["edit", &photo_arg][..], &pet].concat())
        .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let out = local.dir.join("single_pet-embroidery.png");
    assert!(
        run.stdout.contains(&format!("Saved {}", out.display())),
        "{run:#?}"
    );
    assert_png_of_sample_size(&out);
    assert!(run.stdout.contains("Review: passed"), "{run:#?}");
    assert!(
        run.stdout.contains("Leakage: ") && run.stdout.contains("outside the pet"),
        "{run:#?}"
    );
    assert_labelled(&local, &run).await;
    assert_eq!((before, price), (6, 4), "signup grant and a pet's price");
    assert_eq!(local.balance().await, before - price);
    let ledger = local.atelier(&["--json", "ledger"]).await;
    let debits: Vec<i64> = ledger.json()["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["kind"] == "debit")
        .filter_map(|r| r["amount"].as_i64())
        .collect();
    assert_eq!(debits, vec![-price], "{ledger:#?}");
    assert_eq!(
        local.h.ledger(&user).await.len(),
        2,
        "signup grant + one debit"
    );
    assert_eq!(
        local.pending(),
        0,
        "the journal entry is gone once downloaded"
    );
}

/// The delivered pet edit's content credentials, printed by `edit` and by `job`: the label and
/// the sentence naming what changed and the model.
async fn assert_labelled(local: &Local, edit: &Run) {
    let said = format!(
        "Edited with AI: The pet was redrawn as embroidery by the AI model {DEFAULT_IMAGE_MODEL}"
    );
    assert!(edit.stdout.contains(&said), "{said:?} not in {edit:#?}");
    let jobs = local.atelier(&["--json", "jobs"]).await;
    let id = jobs.json()["items"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let job = local.atelier(&["job", &id]).await;
    assert_eq!(job.code, Some(0), "{job:#?}");
    assert!(job.stdout.contains(&said), "{said:?} not in {job:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_prints_the_area_saves_nothing_and_the_same_edit_then_draws_it() {
    let local = start().await;
    local.login().await;
    let photo = local.photo("single_pet.png", samples::single_pet());
    let photo_arg = photo.to_string_lossy().into_owned();
    let pet = [
        "edit",
        &photo_arg,
        "--style",
        "embroidery",
        "--target",
        "pet",
    ];

    let look = local.atelier(&[&pet[..], &["--preview"]].concat()).await;

    assert_eq!(look.code, Some(0), "{look:#?}");
    assert!(look.stdout.contains("PREVIEWED"), "{look:#?}");
    assert!(
        look.stdout.contains("[] the area to redraw: x "),
        "{look:#?}"
    );
    assert!(!local.dir.join("single_pet-embroidery.png").exists());
    assert_eq!(local.balance().await, 6, "refunded whole");
    let draw = local.atelier(&pet).await;
    assert_eq!(draw.code, Some(0), "{draw:#?}");
    assert!(draw.stdout.contains("Saved "), "{draw:#?}");
    assert_eq!(local.balance().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_submit_and_rerun_charges_once() {
    let local = start().await;
    let user = local.login().await;
    let photo = local.photo("single_pet.png", samples::single_pet());
    let args = [
        "edit",
        &photo.to_string_lossy(),
        "--style",
        "needle_felt",
        "--target",
        "pet",
    ]
    .map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let killed = local
        .atelier_with(&args, &[("ATELIER_CLI_EXIT_AFTER_SUBMIT_SENT", "1")])
        .await;

    assert_eq!(killed.code, Some(3), "{killed:#?}");
    assert_eq!(local.pending(), 1, "the interrupted submit is journaled");
    let debits = |rows: &[atelier_shared::store::schema::LedgerItem]| {
        rows.iter().filter(|r| r.kind == LedgerKind::Debit).count()
    };
    assert_eq!(
        debits(&local.h.ledger(&user).await),
        1,
        "the server charged before the client died"
    );

    let rerun = local.atelier(&args).await;

    assert_eq!(rerun.code, Some(0), "{rerun:#?}");
    assert!(
        rerun.stderr.contains("not charged again"),
        "the rerun got the same job back: {rerun:#?}"
    );
    assert_png_of_sample_size(&local.dir.join("single_pet-needle_felt.png"));
    let rows = local.h.ledger(&user).await;
    assert_eq!(debits(&rows), 1, "exactly one debit: {rows:#?}");
    assert_eq!(local.h.balance(&user).await, 6 - 4);
    let jobs = local.atelier(&["--json", "jobs"]).await;
    assert_eq!(
        jobs.json()["items"].as_array().map(Vec::len),
        Some(1),
        "one job: {jobs:#?}"
    );
    assert_eq!(local.pending(), 0);
    local.h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_print_the_problem_code_and_exit_non_zero() {
    let local = start().await;
    let photo = local.photo("single_pet.png", samples::single_pet());
    let photo_arg = photo.to_string_lossy().into_owned();

    let anonymous = local
        .atelier_with(&["balance"], &[("ATELIER_TOKEN", "not-a-token")])
        .await;
    assert_eq!(anonymous.code, Some(1), "{anonymous:#?}");
    assert!(
        anonymous.stderr.contains("UNAUTHENTICATED (401)"),
        "{anonymous:#?}"
    );

    let nobody_listens = local
        .atelier_with(&["styles"], &[("ATELIER_API", "http://127.0.0.1:9")])
        .await;
    assert_eq!(nobody_listens.code, Some(1), "{nobody_listens:#?}");
    assert!(
        nobody_listens.stderr.contains("retrying in")
            && nobody_listens
                .stderr
                .contains("no answer from the server after 5 attempts"),
        "network errors are retried, then reported: {nobody_listens:#?}"
    );

    local.login().await;
    let too_many_locks = local
        .atelier(&[
            "edit", &photo_arg, "--style", "origami", "--target", "pet", "--lock", "a", "--lock",
            "b", "--lock", "c", "--lock", "d",
        ])
        .await;
    assert_eq!(too_many_locks.code, Some(1), "{too_many_locks:#?}");
    assert!(
        too_many_locks.stderr.contains("VALIDATION_FAILED (422)")
            && too_many_locks.stderr.contains("locks: at most 3 locks"),
        "the code and the field error: {too_many_locks:#?}"
    );
    let unknown = local
        .atelier(&[
            "edit",
            &photo_arg,
            "--style",
            "watercolour",
            "--target",
            "pet",
        ])
        .await;
    assert_eq!(unknown.code, Some(2), "a usage error: {unknown:#?}");
    assert!(
        unknown
            .stderr
            .contains("possible values: embroidery, needle_felt"),
        "the choices are listed: {unknown:#?}"
    );
    assert_eq!(local.balance().await, 6, "nothing charged");

    // 6 credits: a background (5) leaves 1, too little for a pet (4).
    let background = local
        .atelier(&[
            "edit",
            &photo_arg,
            "--style",
            "origami",
            "--target",
            "background",
            "--no-wait",
        ])
        .await;
    assert_eq!(background.code, Some(0), "{background:#?}");
    let broke = local
        .atelier(&["edit", &photo_arg, "--style", "origami", "--target", "pet"])
        .await;
    assert_eq!(broke.code, Some(1), "{broke:#?}");
    assert!(
        broke
            .stderr
            .contains("INSUFFICIENT_CREDITS (402): this edit costs 4 credits and the balance is 1"),
        "{broke:#?}"
    );
    assert!(!broke.stderr.contains("panicked"), "{broke:#?}");
    local.h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repair_killed_mid_submit_and_rerun_is_charged_once() {
    let local = start().await;
    let user = local.login().await;
    local.h.fund_to(&user, 20).await;
    let photo = local.photo("single_pet.png", samples::single_pet());
    let edit = local
        .atelier(&[
            "edit",
            &photo.to_string_lossy(),
            "--style",
            "embroidery",
            "--target",
            "pet",
        ])
        .await;
    assert_eq!(edit.code, Some(0), "{edit:#?}");
    let jobs = local.atelier(&["--json", "jobs"]).await;
    let edit_id = jobs.json()["items"][0]["id"]
        .as_str()
        .expect("the edit is listed")
        .to_owned();
    local
        .model
        .fault(serde_json::json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    let out = local.dir.join("repaired.png");
    let out_arg = out.to_string_lossy().into_owned();
    let args = [
        "repair",
        edit_id.as_str(),
        "finer stitches on the ears",
        "--out",
        &out_arg,
    ];

    let killed = local
        .atelier_with(&args, &[("ATELIER_CLI_EXIT_AFTER_SUBMIT_SENT", "1")])
        .await;
    let rerun = local.atelier(&args).await;

    assert_eq!(killed.code, Some(3), "{killed:#?}");
    assert_eq!(rerun.code, Some(0), "{rerun:#?}");
    assert!(rerun.stderr.contains("not charged again"), "{rerun:#?}");
    assert!(
        rerun
            .stdout
            .contains("Compared with the previous version: improved"),
        "{rerun:#?}"
    );
    assert_png_of_sample_size(&out);
    let debits: Vec<i64> = local
        .h
        .ledger(&user)
        .await
        .iter()
        .filter(|r| r.kind == LedgerKind::Debit)
        .map(|r| r.amount.get())
        .collect();
    assert_eq!(debits, vec![-4, -4], "the edit and ONE repair");
    assert_eq!(local.h.balance(&user).await, 20 - 8);
    assert_eq!(local.pending(), 0);
    local.h.assert_audit_clean().await;
}

#[tokio::test]
async fn buy_pays_on_the_stand_in_stripe_and_waits_for_the_credits() {
    let local = start().await;
    let user = local.login().await;
    let before = local.balance().await;

    let packs = local.atelier(&["packs"]).await;
    let run = local.atelier(&["buy", "starter"]).await;

    assert_eq!(packs.code, Some(0), "{packs:#?}");
    assert!(packs.stdout.contains("starter"), "{packs:#?}");
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("pay at http://127.0.0.1:"), "{run:#?}");
    assert_eq!(local.balance().await, before + 50);
    let purchases = local
        .h
        .ledger(&user)
        .await
        .into_iter()
        .filter(|r| r.kind == LedgerKind::Purchase)
        .count();
    assert_eq!(purchases, 1);
    local.h.assert_audit_clean().await;
}

/// A browser signing in at the issuer's form: the form's URL, then the address posted with
/// the request's parameters. The issuer's answer, its redirect to the client's loopback followed
/// when `follow` (a browser on this machine) and not otherwise (a browser on another one).
async fn submit_sign_in(url: &str, email: &str, follow: bool) -> reqwest::Response {
    let policy = match follow {
        true => reqwest::redirect::Policy::default(),
        false => reqwest::redirect::Policy::none(),
    };
    let http = reqwest::Client::builder()
        .redirect(policy)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let form = http.get(url).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(form.status(), 200, "the sign-in form");
    let parsed = reqwest::Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut body = reqwest::Url::parse("http://form.invalid/").unwrap_or_else(|e| panic!("{e}"));
    body.query_pairs_mut()
        .extend_pairs(parsed.query_pairs())
        .append_pair("email", email);
    let action = url.split('?').next().unwrap_or(url);
    http.post(action)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.query().unwrap_or_default().to_owned())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A browser on this machine signing in: the last page, at the client's loopback.
async fn browser_sign_in(url: &str, email: &str) -> String {
    let done = submit_sign_in(url, email, true).await;
    done.text().await.unwrap_or_default()
}

/// The sign-in address the client prints on standard error.
async fn printed_sign_in_url(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncBufReadExt;
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(u) = line.trim().strip_prefix("http") {
            // The rest of standard error drains on its own; the client must not block on it.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return format!("http{u}");
        }
    }
    panic!("the client printed no sign-in address")
}

#[tokio::test]
async fn login_with_oidc_signs_in_in_a_browser_through_a_loopback_redirect_and_renews() {
    let local = start().await;
    let mut child = local
        .command(&["login"])
        .await
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let url = printed_sign_in_url(&mut child).await;
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(
        url.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A"),
        "{url}"
    );

    let email = format!(
        "cli-{}@example.test",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let page = browser_sign_in(&url, &email).await;
    let out = child
        .wait_with_output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    assert!(page.starts_with("Signed in."), "{page}");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        local.balance().await,
        6,
        "the ID token got the signup grant"
    );
    // The token expires: the next command renews it with the refresh token.
    let path = local.home().join("config.json");
    let mut saved: Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_default()).unwrap_or_default();
    let login = &mut saved["logins"][&local.api];
    let old = login["token"].clone();
    login["expires_at"] = 1.into();
    std::fs::write(&path, saved.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(local.balance().await, 6);
    let renewed: Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_default()).unwrap_or_default();
    assert_ne!(
        renewed["logins"][&local.api]["token"], old,
        "a renewed token is saved"
    );
}

#[tokio::test]
async fn login_without_a_browser_here_takes_the_address_the_remote_browser_ended_on() {
    use tokio::io::AsyncWriteExt;
    let local = start().await;
    let mut child = local.interactive(&["login", "--no-browser"]).await;
    let url = printed_sign_in_url(&mut child).await;
    let email = format!(
        "remote-{}@example.test",
        ulid::Ulid::new().to_string().to_lowercase()
    );

    // A browser on another machine: the redirect to this one's loopback is never loaded.
    let answer = submit_sign_in(&url, &email, false).await;
    assert!(answer.status().is_redirection(), "{answer:?}");
    let ended_on = answer
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no redirect: {answer:?}"))
        .to_owned();
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let pasted = format!("not an address\n{ended_on}\n");
    stdin
        .write_all(pasted.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let out = child
        .wait_with_output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        local.balance().await,
        6,
        "the signed-in user got the signup grant"
    );
    let again = local.atelier_with(&["login", "--no-browser"], &[]).await;
    assert_eq!(
        again.code,
        Some(1),
        "stdin closed without an address: {again:#?}"
    );
    assert!(again.stderr.contains("standard input closed"), "{again:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logout_forgets_the_login_and_with_token_reads_it_from_standard_input() {
    use tokio::io::AsyncWriteExt;
    let local = start().await;
    local.login().await;
    assert_eq!(local.balance().await, 6);
    let path = local.home().join("config.json");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_default()).unwrap_or_default();
    let token = saved["logins"][&local.api]["token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let out = local.atelier(&["logout"]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let after = local.atelier(&["balance"]).await;
    assert_eq!(after.code, Some(1), "{after:#?}");
    assert!(after.stderr.contains("not logged in"), "{after:#?}");

    let mut child = local.interactive(&["login", "--with-token"]).await;
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    stdin
        .write_all(format!("{token}\n").as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    drop(stdin);
    let out = child
        .wait_with_output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(local.balance().await, 6, "the same user, logged in again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_is_kept_in_the_os_keychain_not_in_the_file_and_logout_removes_it() {
    let local = start().await;
    let keychain = atelier_tests::keychain::SecretService::start(&local.dir.join("keychain"));
    let bus = keychain.env();
    let mut env: Vec<(&str, &str)> = bus.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("ATELIER_CREDENTIALS", "keychain"));
    let user = local.h.user().to_string();

    let login = local.atelier_with(&["login", "--user", &user], &env).await;
    assert_eq!(login.code, Some(0), "{login:#?}");
    assert!(login.stdout.contains("in the OS keychain"), "{login:#?}");
    let kept = keychain
        .lookup("atelier", &local.api)
        .unwrap_or_else(|| panic!("secret-tool finds no login for {}", local.api));
    let kept: Value = serde_json::from_str(&kept).unwrap_or_else(|e| panic!("{e}: {kept}"));
    let token = kept["token"].as_str().unwrap_or_default();
    assert!(token.len() > 100, "a JWT is kept: {kept}");
    let file = std::fs::read_to_string(local.home().join("config.json")).unwrap_or_default();
    assert!(!file.contains(token), "config.json holds no token: {file}");
    assert!(
        file.contains(&local.api),
        "config.json names the API: {file}"
    );

    let balance = local.atelier_with(&["--json", "balance"], &env).await;
    assert_eq!(balance.code, Some(0), "{balance:#?}");
    assert_eq!(balance.json()["balance"], 6, "the keychain's token is used");

    let logout = local.atelier_with(&["logout"], &env).await;
    assert_eq!(logout.code, Some(0), "{logout:#?}");
    assert_eq!(keychain.lookup("atelier", &local.api), None, "removed");
    let after = local.atelier_with(&["balance"], &env).await;
    assert_eq!(after.code, Some(1), "{after:#?}");
    assert!(after.stderr.contains("not logged in"), "{after:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_keychain_the_login_falls_back_to_the_file_unless_the_keychain_is_required() {
    let local = start().await;
    let user = local.h.user().to_string();
    let nobody = format!("unix:path={}", local.dir.join("no-bus").display());
    let required = [
        ("ATELIER_CREDENTIALS", "keychain"),
        ("DBUS_SESSION_BUS_ADDRESS", nobody.as_str()),
    ];
    let refused = local
        .atelier_with(&["login", "--user", &user], &required)
        .await;
    assert_eq!(refused.code, Some(1), "{refused:#?}");
    assert!(refused.stderr.contains("OS keychain"), "{refused:#?}");
    let file = std::fs::read_to_string(local.home().join("config.json")).unwrap_or_default();
    assert!(!file.contains("token"), "nothing kept: {file}");

    let auto = [
        ("ATELIER_CREDENTIALS", "auto"),
        ("DBUS_SESSION_BUS_ADDRESS", nobody.as_str()),
    ];
    let kept = local.atelier_with(&["login", "--user", &user], &auto).await;
    assert_eq!(kept.code, Some(0), "{kept:#?}");
    assert!(
        kept.stderr.contains("keeping the login in config.json"),
        "{kept:#?}"
    );
    let saved: Value = serde_json::from_slice(
        &std::fs::read(local.home().join("config.json")).unwrap_or_default(),
    )
    .unwrap_or_default();
    assert!(saved["logins"][&local.api]["token"].is_string(), "{saved}");
    assert_eq!(local.balance().await, 6);
}

#[tokio::test]
async fn completions_are_printed_for_a_shell() {
    let local = start().await;
    let bash = local.atelier(&["completions", "bash"]).await;
    assert_eq!(bash.code, Some(0), "{bash:#?}");
    assert!(
        bash.stdout.contains("atelier") && bash.stdout.contains("logout"),
        "{bash:#?}"
    );
    let unknown = local.atelier(&["completions", "tcsh"]).await;
    assert_eq!(unknown.code, Some(2), "{unknown:#?}");
}

/// A token never crosses a network in clear: a plain-http API or issuer beyond this machine is
/// refused before anything is sent (nothing listens at those names; the refusal comes first).
#[tokio::test]
async fn the_client_refuses_plain_http_beyond_this_machine() {
    let local = start().await;
    let cases: [(&[&str], &str); 3] = [
        (&["--api", "http://api.example.test", "balance"], "the API"),
        (
            &["--api", "http://localhost:@api.example.test", "packs"],
            "the API",
        ),
        (
            &[
                "login",
                "--no-browser",
                "--issuer",
                "http://idp.example.test",
            ],
            "the issuer",
        ),
    ];
    for (args, what) in cases {
        let run = local
            .atelier_with(args, &[("ATELIER_TOKEN", "a-token")])
            .await;
        assert_eq!(run.code, Some(1), "{args:?}: {run:#?}");
        assert!(
            run.stderr.contains(what) && run.stderr.contains("not https"),
            "{args:?}: {run:#?}"
        );
    }
}
