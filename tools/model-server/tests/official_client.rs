//! The stand-in model server checked against the provider's own client.
//!
//! The stand-in imports our client's types and schemas from `atelier-shared`, so a mistake in
//! how our client shapes a request could be shared by both and never show. Here OpenAI's
//! official Python library (`openai`, pinned in `official_client.requirements.txt`, installed
//! by `cargo xtask test` into `.venv/openai`) makes every kind of call we make, with our own
//! prompts and images, through `official_client.py`; our client makes the same call. A
//! capturing proxy in front of the stand-in records both requests, and each test proves that:
//!
//! - the stand-in accepts the official library's request, and its answer validates strictly
//!   against the library's own response models (an `ImagesResponse` whose `b64_json` is a PNG;
//!   a `ChatCompletion` whose content our strict schema parser accepts, the same answer our
//!   client got);
//! - our client's request has the same shape as the official library's: the same multipart
//!   parts (names, file names, content types, values) or the same JSON body (field names,
//!   types and values).
//!
//! Outside `cargo xtask test` the venv may be missing: the tests then fail with the command
//! that installs it, never pass without having run.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod capture;

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::SocketAddr;
use std::path::PathBuf;

use atelier_model_server::wire_diff::{assert_same, shape};
use atelier_model_server::{ServerHandle, samples, spawn};
use atelier_shared::adapters::model::cost::VISION_MAX_OUTPUT_TOKENS;
use atelier_shared::adapters::model::vision::VisionAnswer;
use atelier_shared::adapters::model::{
    Comparison, EditCall, EditSize, ImageInput, ImageRole, ModelClient, ModelConfig, Readiness,
    Review, VisionPrompt, VisionReply,
};
use atelier_shared::domain::imaging::{DecodeLimits, encode_png, mask_from_png};
use atelier_shared::domain::prompts;
use atelier_shared::domain::{
    AssetId, EditSpec, IdempotencyKey, JobId, Operation, Strength, StyleId, Target, UserId,
};
use axum::body::Body;
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;
use capture::{Capture, Captured, essence};
use serde::Deserialize;
use serde_json::{Value, json};

/// The pinned requirement, the one `cargo xtask test` installs.
const REQUIREMENT: &str = include_str!("official_client.requirements.txt");

/// The pinned `openai` version (`openai==X` in the requirements file).
fn pinned_version() -> &'static str {
    REQUIREMENT
        .lines()
        .find_map(|l| l.trim().strip_prefix("openai=="))
        .expect("official_client.requirements.txt pins openai==<version>")
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The venv's python: `ATELIER_OPENAI_PYTHON` (set by `cargo xtask test`), else the
/// workspace's `.venv/openai`. Missing is a failure that says how to install it.
fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("ATELIER_OPENAI_PYTHON") {
        let path = PathBuf::from(path);
        assert!(
            path.exists(),
            "ATELIER_OPENAI_PYTHON is {} but no such file exists",
            path.display()
        );
        return path;
    }
    let path = workspace_root().join(".venv/openai/bin/python");
    assert!(
        path.exists(),
        "NOT RUN: the official OpenAI client is not installed ({} is missing). \
         `cargo xtask test` installs {} into .venv/openai; to install it alone: \
         python3 -m venv .venv/openai && .venv/openai/bin/pip install -r \
         tools/model-server/tests/official_client.requirements.txt",
        path.display(),
        REQUIREMENT.trim()
    );
    path
}

/// The stand-in, the proxy in front of it, and our client pointed at the proxy.
struct Bench {
    _server: ServerHandle,
    proxy: Capture,
    client: ModelClient,
    dir: PathBuf,
}

impl Bench {
    async fn start(name: &str) -> Bench {
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let (_, server) = spawn(loopback).await.expect("stand-in starts");
        let proxy = Capture::start(server.base_url()).await;
        let client =
            ModelClient::new(ModelConfig::new(proxy.base_url.clone())).expect("client builds");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("official_client")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        Bench {
            _server: server,
            proxy,
            client,
            dir,
        }
    }

    /// The one request that carried `job`.
    fn request_of(&self, job: &str) -> Captured {
        self.proxy.request_of(job)
    }

    /// Writes a PNG into the work dir and returns its path.
    fn file(&self, name: &str, png: &[u8]) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, png).expect("write png");
        path.display().to_string()
    }

    /// Runs `official_client.py` for one call; returns its report.
    async fn official(&self, call: &Value) -> Report {
        let (report, ok, stderr) = self.official_raw(call).await;
        assert!(
            ok && report.error.is_none(),
            "the official client's call failed: {:?} (stderr: {stderr})",
            report.error
        );
        assert_eq!(report.status, Some(200));
        assert_eq!(
            report.our_request_problems.as_deref(),
            Some(&[][..]),
            "the official library's parameter types find fault with our request"
        );
        report
    }

    /// Runs `official_client.py` for one call, whatever it answers: the report, whether the
    /// script succeeded, and its stderr.
    async fn official_raw(&self, call: &Value) -> (Report, bool, String) {
        let call_path = self.dir.join("call.json");
        std::fs::write(&call_path, serde_json::to_vec_pretty(call).unwrap()).expect("call.json");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/official_client.py");
        let output = tokio::process::Command::new(python())
            .arg(&script)
            .arg(format!("{}/v1", self.proxy.base_url))
            .arg(&call_path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .await
            .expect("the venv's python runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let report: Report = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("official_client.py printed no report ({e}); stdout: {stdout}; stderr: {stderr}")
        });
        assert_eq!(
            report.version,
            pinned_version(),
            "the venv's openai is not the pinned one; rerun `cargo xtask test` to reinstall it"
        );
        (report, output.status.success(), stderr.into_owned())
    }
}

/// What `official_client.py` prints.
#[derive(Debug, Deserialize)]
struct Report {
    version: String,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    parsed_type: Option<String>,
    // The edit.
    #[serde(default)]
    images: Option<usize>,
    #[serde(default)]
    png: Option<bool>,
    #[serde(default)]
    width: Option<u32>,
    #[serde(default)]
    height: Option<u32>,
    #[serde(default)]
    usage: Option<Value>,
    // The chat completion.
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    answer_keys: Option<Vec<String>>,
    #[serde(default)]
    schema_already_strict: Option<bool>,
    /// What the library's own parameter names and types find wrong with our request.
    #[serde(default)]
    our_request_problems: Option<Vec<String>>,
}

// ---------------------------------------------------------------------------------------------
// Shapes of requests.

/// One multipart part as the server sees it. A file's bytes are given by length and hash.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PartShape {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    value: String,
}

async fn multipart_parts(captured: &Captured) -> Vec<PartShape> {
    let request = Request::builder()
        .header(CONTENT_TYPE, &captured.content_type)
        .body(Body::from(captured.body.clone()))
        .unwrap();
    let mut multipart = Multipart::from_request(request, &())
        .await
        .expect("a multipart/form-data body");
    let mut parts = Vec::new();
    while let Some(field) = multipart.next_field().await.expect("a readable part") {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(str::to_owned);
        let bytes = field.bytes().await.expect("part body");
        let value = if file_name.is_some() {
            let mut hasher = DefaultHasher::new();
            bytes.hash(&mut hasher);
            format!("{} bytes, hash {:016x}", bytes.len(), hasher.finish())
        } else {
            String::from_utf8_lossy(&bytes).into_owned()
        };
        parts.push(PartShape {
            name,
            file_name,
            content_type,
            value,
        });
    }
    // The order of different fields means nothing to the server; the order of the images does
    // (Image 1, Image 2): a stable sort by name keeps it.
    parts.sort_by(|a, b| a.name.cmp(&b.name));
    parts
}

// ---------------------------------------------------------------------------------------------
// The calls, with our prompts.

fn job(name: &str) -> JobId {
    let user = UserId::parse("official-client-tests").expect("user");
    let key = IdempotencyKey::parse(name).expect("key");
    JobId::derive(&user, Operation::Edit, &key)
}

/// A brushed area with a style reference: the edit then carries two images and a mask, and
/// every vision call three or four images.
fn spec() -> EditSpec {
    EditSpec {
        style: StyleId::Embroidery,
        target: Target::Brush,
        strength: Strength::Balanced,
        original_asset_id: AssetId::generate(),
        mask_asset_id: Some(AssetId::generate()),
        style_reference_asset_id: Some(AssetId::generate()),
        custom_style: None,
        target_description: Some("the dog's body".to_owned()),
        locks: vec!["keep the collar".to_owned()],
        preview: false,
    }
}

fn mask_png() -> Vec<u8> {
    samples::circle_mask(230, 250, 60).expect("mask")
}

/// The picture each role stands for (the same for both clients).
fn picture(role: ImageRole) -> Vec<u8> {
    match role {
        ImageRole::Original | ImageRole::Current => samples::single_pet(),
        ImageRole::StyleReference | ImageRole::Result | ImageRole::Candidate => samples::portrait(),
        ImageRole::Mask => {
            let mask =
                mask_from_png(&mask_png(), (samples::WIDTH, samples::HEIGHT)).expect("mask reads");
            encode_png(&mask.to_visual()).expect("encodes")
        }
    }
}

fn role_name(role: ImageRole) -> String {
    serde_json::to_value(role)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("a role serialises as a string")
}

fn png_size(png: &[u8]) -> (u32, u32) {
    let img = DecodeLimits::MODEL_OUTPUT.decode(png).expect("a PNG");
    (img.width(), img.height())
}

/// Both clients make the same vision call; returns our reply, the official report, and both
/// requests as JSON.
async fn both_vision_calls<T: VisionAnswer>(
    name: &str,
    prompt: &VisionPrompt,
    ask: impl AsyncFnOnce(
        &ModelClient,
        &JobId,
        &[ImageInput],
    ) -> Result<VisionReply<T>, atelier_shared::adapters::model::ModelError>,
) -> (VisionReply<T>, Report, Value, Value) {
    let bench = Bench::start(name).await;
    let images: Vec<ImageInput> = prompt
        .images
        .iter()
        .map(|&role| ImageInput::png(role, picture(role)))
        .collect();
    let ours_job = job(&format!("{name}-ours"));
    let ours = ask(&bench.client, &ours_job, &images)
        .await
        .expect("our client's call is answered and parses");

    let ours_request = bench.request_of(ours_job.as_str());
    let ours_body: Value = serde_json::from_slice(&ours_request.body).expect("our body is JSON");

    let official_job = job(&format!("{name}-official"));
    let config = bench.client.config();
    let files: Vec<Value> = images
        .iter()
        .map(|i| {
            json!({
                "label": i.role.label(),
                "path": bench.file(&format!("{}.png", role_name(i.role)), &i.png),
            })
        })
        .collect();
    let report = bench
        .official(&json!({
            "kind": name,
            "job": official_job.as_str(),
            "model": config.vision_model.id,
            "reasoning_effort": config.vision_model.reasoning_effort,
            "system": prompt.system,
            "text": prompt.text,
            "images": files,
            "schema_name": T::SCHEMA_NAME,
            "schema": T::schema(),
            "max_completion_tokens": VISION_MAX_OUTPUT_TOKENS,
            "ours": ours_body,
        }))
        .await;

    let official_request = bench.request_of(official_job.as_str());
    assert_eq!(ours_request.path, "/v1/chat/completions");
    assert_eq!(official_request.path, ours_request.path);
    assert_eq!(essence(&ours_request.content_type), "application/json");
    assert_eq!(
        essence(&official_request.content_type),
        essence(&ours_request.content_type)
    );
    let official_body: Value =
        serde_json::from_slice(&official_request.body).expect("the official body is JSON");
    (ours, report, ours_body, official_body)
}

/// What every vision test asserts about the official client's answer and both requests.
fn assert_vision_call_agrees<T: VisionAnswer + PartialEq + std::fmt::Debug>(
    ours: &VisionReply<T>,
    report: &Report,
    ours_body: &Value,
    official_body: &Value,
) {
    assert_eq!(report.parsed_type.as_deref(), Some("ChatCompletion"));
    assert_eq!(report.finish_reason.as_deref(), Some("stop"));
    assert_eq!(report.refusal, None);
    assert_eq!(
        report.schema_already_strict,
        Some(true),
        "the official library's strict-schema rules would change our {} schema",
        T::SCHEMA_NAME
    );
    let content = report.content.as_deref().expect("an answer");
    let answer = T::parse(content).expect("the official client's answer parses under our schema");
    assert_eq!(answer, ours.answer, "both clients get the same answer");
    let required: Vec<String> = T::schema()["required"]
        .as_array()
        .expect("required")
        .iter()
        .map(|k| k.as_str().expect("a key").to_owned())
        .collect();
    let mut required = required;
    required.sort();
    assert_eq!(report.answer_keys.as_ref(), Some(&required));
    let usage = report.usage.as_ref().expect("usage");
    assert!(usage["prompt_tokens"].as_u64().unwrap_or(0) > 0, "{usage}");
    assert!(
        usage["completion_tokens"].as_u64().unwrap_or(0) > 0,
        "{usage}"
    );

    assert_same(
        &shape(ours_body),
        &shape(official_body),
        "our request's shape",
    );
    assert_same(ours_body, official_body, "our request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_edits_two_images_with_a_mask_and_sends_what_our_client_sends() {
    let bench = Bench::start("edit").await;
    let spec = spec();
    let prompt = prompts::edit(&spec, "A pet on a plain background.", None);
    assert_eq!(
        prompt.images,
        [ImageRole::Original, ImageRole::StyleReference],
        "the edit carries several images"
    );
    assert!(prompt.masked, "and a mask");
    let images: Vec<ImageInput> = prompt
        .images
        .iter()
        .map(|&role| ImageInput::png(role, picture(role)))
        .collect();
    let size = EditSize::Landscape;

    let ours_job = job("edit-ours");
    let ours = bench
        .client
        .edit(
            &ours_job,
            EditCall {
                prompt: prompt.clone(),
                images: images.clone(),
                mask_png: Some(mask_png()),
                size,
            },
        )
        .await
        .expect("our client's edit is answered");
    let ours_size = png_size(&ours.image);
    let ours_request = bench.request_of(ours_job.as_str());
    let ours_parts = multipart_parts(&ours_request).await;
    let ours_fields: serde_json::Map<String, Value> = ours_parts
        .iter()
        .map(|p| {
            let text = p.file_name.is_none().then(|| p.value.clone());
            (p.name.clone(), json!(text))
        })
        .collect();

    let official_job = job("edit-official");
    let config = bench.client.config();
    let files: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let name = format!("image-{}.png", i + 1);
            json!({ "filename": name, "path": bench.file(&name, &image.png) })
        })
        .collect();
    let report = bench
        .official(&json!({
            "kind": "edit",
            "job": official_job.as_str(),
            "model": config.image_model.id,
            "prompt": prompt.text,
            "size": size.as_str(),
            "quality": config.quality.as_str(),
            "n": 1,
            "images": files,
            "mask": { "filename": "mask.png", "path": bench.file("mask.png", &mask_png()) },
            "ours": ours_fields,
        }))
        .await;

    // The official library's answer: its own model, validated strictly, holding a PNG.
    assert_eq!(report.parsed_type.as_deref(), Some("ImagesResponse"));
    assert_eq!(report.images, Some(1));
    assert_eq!(report.png, Some(true), "data[0].b64_json decodes to a PNG");
    assert_eq!((report.width, report.height), (Some(1536), Some(1024)));
    assert_eq!(Some(ours_size), report.width.zip(report.height));
    let usage = report.usage.as_ref().expect("usage");
    assert!(usage["output_tokens"].as_u64().unwrap_or(0) > 0, "{usage}");
    assert!(
        usage["input_tokens_details"]["image_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{usage}"
    );

    // The two requests: the same endpoint, the same multipart parts.
    let official_request = bench.request_of(official_job.as_str());
    assert_eq!(ours_request.path, "/v1/images/edits");
    assert_eq!(official_request.path, ours_request.path);
    assert_eq!(essence(&ours_request.content_type), "multipart/form-data");
    assert_eq!(
        essence(&official_request.content_type),
        essence(&ours_request.content_type)
    );
    let official_parts = multipart_parts(&official_request).await;
    let names: Vec<&str> = official_parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "image[]", "image[]", "mask", "model", "n", "prompt", "quality", "size"
        ],
        "the official client's parts"
    );
    for (ours, official) in ours_parts.iter().zip(&official_parts) {
        assert_eq!(ours, official, "part {} differs", official.name);
    }
    assert_eq!(ours_parts.len(), official_parts.len(), "{ours_parts:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_asks_the_readiness_check_with_our_schema_as_our_client_does() {
    let prompt = prompts::readiness(&spec());
    assert_eq!(prompt.images.len(), 3, "original, style reference, mask");
    let (ours, report, ours_body, official_body) =
        both_vision_calls::<Readiness>("check", &prompt, async |client, job, images| {
            client.check_readiness(job, &prompt, images).await
        })
        .await;
    assert!(ours.answer.ready, "{:?}", ours.answer);
    assert_vision_call_agrees(&ours, &report, &ours_body, &official_body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_asks_the_review_with_our_schema_as_our_client_does() {
    let prompt = prompts::review(&spec());
    assert_eq!(prompt.images.len(), 3, "original, result, mask");
    let (ours, report, ours_body, official_body) =
        both_vision_calls::<Review>("review", &prompt, async |client, job, images| {
            client.review(job, &prompt, images).await
        })
        .await;
    assert_vision_call_agrees(&ours, &report, &ours_body, &official_body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_asks_the_comparison_with_our_schema_as_our_client_does() {
    let prompt = prompts::comparison(&spec(), Some("more stitches on the ear"));
    assert_eq!(prompt.images.len(), 4, "original, current, candidate, mask");
    let (ours, report, ours_body, official_body) =
        both_vision_calls::<Comparison>("compare", &prompt, async |client, job, images| {
            client.compare(job, &prompt, images).await
        })
        .await;
    assert_vision_call_agrees(&ours, &report, &ours_body, &official_body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_the_stand_in_does_not_serve_is_the_official_clients_not_found_error_and_ours_model_unavailable()
 {
    let bench = Bench::start("not_found").await;
    let prompt = prompts::readiness(&spec());
    let images: Vec<ImageInput> = prompt
        .images
        .iter()
        .map(|&role| ImageInput::png(role, picture(role)))
        .collect();
    let files: Vec<Value> = images
        .iter()
        .map(|i| {
            json!({
                "label": i.role.label(),
                "path": bench.file(&format!("{}.png", role_name(i.role)), &i.png),
            })
        })
        .collect();
    let (report, ok, _) = bench
        .official_raw(&json!({
            "kind": "check",
            "job": job("not-found-official").as_str(),
            "model": "gpt-9-nonexistent",
            "reasoning_effort": null,
            "system": prompt.system,
            "text": prompt.text,
            "images": files,
            "schema_name": Readiness::SCHEMA_NAME,
            "schema": Readiness::schema(),
            "max_completion_tokens": VISION_MAX_OUTPUT_TOKENS,
            "ours": {},
        }))
        .await;
    assert!(!ok, "the call fails");
    let error = report.error.expect("an APIStatusError");
    assert_eq!(error["status"], 404, "{error}");
    assert_eq!(error["class"], "NotFoundError", "{error}");
    assert_eq!(error["code"], "model_not_found", "{error}");

    // Our client, asking for a model the provider no longer serves, reads the same answer as
    // an outage of the model (a definite failure: failover may move on from it).
    let row = atelier_shared::adapters::model::catalogue::find("gpt-5.4-mini").expect("row");
    let unserved: &'static atelier_shared::adapters::model::catalogue::Model = Box::leak(Box::new(
        atelier_shared::adapters::model::catalogue::Model {
            id: "gpt-9-nonexistent",
            ..*row
        },
    ));
    let mut config = bench.client.config().clone();
    config.vision_model = unserved;
    let ours = ModelClient::new(config)
        .expect("client")
        .check_readiness(&job("not-found-ours"), &prompt, &images)
        .await
        .expect_err("no such model");
    assert!(ours.is_model_unavailable(), "{ours:?}");
    assert!(ours.is_definite(), "{ours}");
}

// ---------------------------------------------------------------------------------------------
// The model lifecycle as the pinned client documents it.

/// `October 23, 2026` → `2026-10-23`.
fn iso_from_prose(text: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(3).find_map(|w| {
        let month = MONTHS.iter().position(|m| *m == w[0])? + 1;
        let day: u32 = w[1].trim_end_matches(',').parse().ok()?;
        let year: u32 = w[2].trim_end_matches(['.', ',']).parse().ok()?;
        Some(format!("{year:04}-{month:02}-{day:02}"))
    })
}

/// The first `YYYY-MM-DD` in `text`.
fn iso_date(text: &str) -> Option<String> {
    text.as_bytes().windows(10).find_map(|w| {
        let ok = w.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        });
        ok.then(|| String::from_utf8_lossy(w).into_owned())
    })
}

/// A model list module of the installed client (`types/image_model.py`, …), read as text.
fn client_module(relative: &str) -> String {
    let out = std::process::Command::new(python())
        .args([
            "-c",
            "import openai, os; print(os.path.dirname(openai.__file__))",
        ])
        .output()
        .expect("the official client's python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    std::fs::read_to_string(dir.join(relative))
        .unwrap_or_else(|e| panic!("{relative} of the pinned client: {e}"))
}

/// What a model list module says: every listed id, and the shutdown day of each deprecated one
/// (its "Deprecated values:" entries: `- "a", "b": … shut down on October 23, 2026` or
/// `… Announced shutdown date: 2027-01-14`).
fn documented_lifecycle(module: &str) -> (Vec<String>, BTreeMap<String, String>) {
    let (list, notes) = module
        .split_once("Deprecated values:")
        .unwrap_or((module, ""));
    let quoted = |text: &str| -> Vec<String> {
        text.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let listed = quoted(list.split_once("Literal[").map_or("", |(_, rest)| rest));
    let mut shutdowns = BTreeMap::new();
    for entry in notes.split("\n- ").skip(1) {
        let (ids, prose) = entry.split_once("\":").unwrap_or(("", entry));
        let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(day) = iso_date(&prose).or_else(|| iso_from_prose(&prose)) {
            for id in quoted(&format!("{ids}\"")) {
                shutdowns.insert(id, day.clone());
            }
        }
    }
    (listed, shutdowns)
}

#[test]
fn no_default_model_is_listed_as_shut_down_by_the_pinned_official_client() {
    use atelier_shared::adapters::model::catalogue::{CATALOGUE, Serves};
    let today = atelier_shared::clock::now().date().to_string();
    let image = documented_lifecycle(&client_module("types/image_model.py"));
    let chat = documented_lifecycle(&client_module("types/shared/chat_model.py"));
    assert!(
        image
            .1
            .get("gpt-image-1")
            .is_some_and(|d| d == "2026-10-23"),
        "the reader no longer understands the client's notes: {:?}",
        image.1
    );
    let config = ModelConfig::new("http://unused");
    for (model, (listed, shutdowns)) in [(config.image_model, &image), (config.vision_model, &chat)]
    {
        assert!(
            listed.iter().any(|id| id == model.id),
            "the default {} is not a model openai=={} lists",
            model.id,
            pinned_version()
        );
        if let Some(day) = shutdowns.get(model.id) {
            assert!(
                day.as_str() > today.as_str(),
                "the default {} was shut down on {day} according to openai=={}",
                model.id,
                pinned_version()
            );
        }
    }
    // And the catalogue's dates are the client's, so the deploy refuses what it should.
    for model in CATALOGUE {
        let shutdowns = match model.serves {
            Serves::Edit => &image.1,
            Serves::Vision => &chat.1,
        };
        assert_eq!(
            model.shutdown.map(|d| d.to_string()).as_ref(),
            shutdowns.get(model.id),
            "{}: the catalogue's shutdown date differs from openai=={}",
            model.id,
            pinned_version()
        );
    }
}
