//! The providers' official clients the tests drive the stand-ins with, each pinned and
//! installed once (most in a venv of their own), and the Secret Service of the keychain test.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};

use crate::venv::{ensure_requirements, venv};
use crate::workspace::run;

/// OpenAI's official Python client, pinned, which `tools/model-server/tests/official_client.rs`
/// drives the stand-in model with (a venv of its own, `.venv/openai`). The test reads the same
/// file to check the version it ran.
const OFFICIAL_CLIENT_REQUIREMENTS: &str =
    include_str!("../../tools/model-server/tests/official_client.requirements.txt");

/// Installs the official OpenAI client into `.venv/openai` (once; a marker records the pins) and
/// returns that venv's python.
pub(crate) fn ensure_official_client() -> Result<PathBuf> {
    ensure_requirements(
        "openai",
        ".atelier-openai-pins",
        OFFICIAL_CLIENT_REQUIREMENTS,
    )
}

/// Stripe's official Node library, pinned, which `tests/tests/purchases.rs` drives against the
/// stand-in Stripe and the webhook (its test-signature helper is Node's alone).
const OFFICIAL_STRIPE: &str = include_str!("../../tests/official-stripe/requirement.txt");

/// Installs the official Stripe library into `.venv/stripe-node` (once; a marker records the
/// pin) and returns its `node_modules`.
pub(crate) fn ensure_official_stripe() -> Result<PathBuf> {
    let dir = venv().join("stripe-node");
    let pin = OFFICIAL_STRIPE.trim();
    let marker = dir.join(".atelier-stripe-pin");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == pin) {
        return Ok(dir.join("node_modules"));
    }
    std::fs::create_dir_all(&dir)?;
    eprintln!("xtask: installing {pin} into {}", dir.display());
    run(Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg(pin))
    .context("npm install (is Node.js installed?)")?;
    std::fs::write(&marker, pin)?;
    Ok(dir.join("node_modules"))
}

/// The official Standard Webhooks library, pinned, which `tests/tests/webhooks.rs` verifies
/// our signed deliveries with (a venv of its own, `.venv/standardwebhooks`).
const OFFICIAL_WEBHOOKS_REQUIREMENTS: &str =
    include_str!("../../tests/official-standardwebhooks/requirements.txt");

/// Installs the official Standard Webhooks library into `.venv/standardwebhooks` (once; a
/// marker records the pins) and returns that venv's python.
pub(crate) fn ensure_official_webhooks() -> Result<PathBuf> {
    ensure_requirements(
        "standardwebhooks",
        ".atelier-standardwebhooks-pins",
        OFFICIAL_WEBHOOKS_REQUIREMENTS,
    )
}

/// Apple's official App Store Server Library, pinned, which `tests/tests/apple_purchases.rs`
/// verifies the stand-in App Store's signed data with (a venv of its own, `.venv/app-store`).
const OFFICIAL_APP_STORE_REQUIREMENTS: &str =
    include_str!("../../tests/official-app-store/requirements.txt");

pub(crate) fn ensure_official_app_store() -> Result<PathBuf> {
    ensure_requirements(
        "app-store",
        ".atelier-app-store-pins",
        OFFICIAL_APP_STORE_REQUIREMENTS,
    )
}

/// The OpenAPI Generator, pinned, which `tests/tests/java_client.rs` makes the Java client
/// for app developers with (a venv of its own, `.venv/openapi-generator`; the JDK is the
/// machine's).
const OPENAPI_GENERATOR_REQUIREMENTS: &str = include_str!("../../clients/java/requirements.txt");

pub(crate) fn ensure_openapi_generator() -> Result<PathBuf> {
    // The generated client is compiled and run with a JDK: Debian's, when there is none.
    if Command::new("javac").arg("-version").output().is_err() {
        eprintln!("xtask: installing a JDK (apt-get)");
        run(Command::new("apt-get").args(["install", "-y", "-q", "default-jdk-headless"]))
            .context("apt-get install default-jdk-headless (needs root; or install a JDK)")?;
    }
    ensure_requirements(
        "openapi-generator",
        ".atelier-openapi-generator-pins",
        OPENAPI_GENERATOR_REQUIREMENTS,
    )
}

/// A Secret Service for the CLI's keychain test (`tests/src/keychain.rs`): Debian's D-Bus,
/// GNOME Keyring and libsecret's `secret-tool`, when any is missing.
pub(crate) fn ensure_secret_service() -> Result<()> {
    let present = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"]
        .iter()
        .all(|t| present(t))
    {
        return Ok(());
    }
    eprintln!("xtask: installing a Secret Service (apt-get)");
    let packages = ["dbus-daemon", "gnome-keyring", "libsecret-tools"];
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(packages))
    .context("apt-get install dbus-daemon gnome-keyring libsecret-tools (needs root)")
}

/// The push services' client libraries, pinned (`firebase-admin`, `aioapns`), which
/// `tests/tests/push_official.rs` drives against the stand-in APNs and FCM (a venv of its own,
/// `.venv/push`).
const OFFICIAL_PUSH_REQUIREMENTS: &str = include_str!("../../tests/official-push/requirements.txt");

pub(crate) fn ensure_official_push() -> Result<PathBuf> {
    ensure_requirements("push", ".atelier-push-pins", OFFICIAL_PUSH_REQUIREMENTS)
}

/// Google's official Python clients (google-api-python-client, google-auth), pinned, which
/// `tests/tests/google_purchases.rs` proves the stand-in Google Play with (a venv of its own,
/// `.venv/google`).
const OFFICIAL_GOOGLE_REQUIREMENTS: &str =
    include_str!("../../tests/official-google/requirements.txt");

pub(crate) fn ensure_official_google() -> Result<PathBuf> {
    ensure_requirements(
        "google",
        ".atelier-google-pins",
        OFFICIAL_GOOGLE_REQUIREMENTS,
    )
}

/// Authlib, a maintained OpenID Connect client, pinned, which `tests/tests/oidc.rs` signs in
/// at the local issuer with (a venv of its own, `.venv/authlib`).
const OFFICIAL_AUTHLIB_REQUIREMENTS: &str =
    include_str!("../../tests/official-authlib/requirements.txt");

pub(crate) fn ensure_official_authlib() -> Result<PathBuf> {
    ensure_requirements(
        "authlib",
        ".atelier-authlib-pins",
        OFFICIAL_AUTHLIB_REQUIREMENTS,
    )
}

/// The Content Authenticity Initiative's official C2PA library for Python, pinned, which the
/// tests read every signed result with (`tests/src/credentials.rs`; a venv of its own,
/// `.venv/c2pa`).
const OFFICIAL_C2PA_REQUIREMENTS: &str = include_str!("../../tests/official-c2pa/requirements.txt");

pub(crate) fn ensure_official_c2pa() -> Result<PathBuf> {
    ensure_requirements("c2pa", ".atelier-c2pa-pins", OFFICIAL_C2PA_REQUIREMENTS)
}
