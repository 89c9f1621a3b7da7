//! The App Store's and Google Play's settings as plain values: the trusted roots (checked to
//! be certificates here, at cold start), the app, the store, where the APIs are and where
//! their keys are. The adapters (`adapters::payments`) verify and call with them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

/// Which App Store the data comes from (`environment` in every payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppleEnvironment {
    Production,
    Sandbox,
}

impl AppleEnvironment {
    pub fn parse(raw: &str) -> Option<AppleEnvironment> {
        match raw {
            "Production" => Some(AppleEnvironment::Production),
            "Sandbox" => Some(AppleEnvironment::Sandbox),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AppleEnvironment::Production => "Production",
            AppleEnvironment::Sandbox => "Sandbox",
        }
    }
}

/// What App Store data is checked against: the trusted roots (DER), the app, the store.
#[derive(Clone, PartialEq, Eq)]
pub struct AppleSettings {
    pub roots: Vec<Vec<u8>>,
    pub bundle_id: String,
    pub environment: AppleEnvironment,
    /// The app's numeric id; checked on production notifications when set (as Apple's library).
    pub app_apple_id: Option<i64>,
    /// The App Store Server API, when consumption answers are configured.
    pub api: Option<AppleApiSettings>,
}

/// Where the App Store Server API is and where its key comes from (consumption answers,
/// `adapters::payments::apple_api`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppleApiSettings {
    pub url: String,
    pub key: KeySource,
}

impl std::fmt::Debug for AppleSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppleSettings")
            .field("roots", &self.roots.len())
            .field("bundle_id", &self.bundle_id)
            .field("environment", &self.environment)
            .field("app_apple_id", &self.app_apple_id)
            .field("api", &self.api)
            .finish()
    }
}

/// The production and sandbox base URLs, as Apple's library names them.
pub fn default_url(environment: AppleEnvironment) -> &'static str {
    match environment {
        AppleEnvironment::Production => "https://api.storekit.apple.com",
        AppleEnvironment::Sandbox => "https://api.storekit-sandbox.apple.com",
    }
}

/// Where Google Play is, which app is sold, and where the service account's key is (read at
/// cold start; a plain key, local runs only, never shows in `Debug`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GooglePlaySettings {
    /// The Android app's package name (`applicationId`).
    pub package_name: String,
    /// `https://androidpublisher.googleapis.com` (or a stand-in).
    pub publisher_url: String,
    /// `https://oauth2.googleapis.com/token` (or a stand-in).
    pub token_url: String,
    /// The Pub/Sub push subscription's audience (its OIDC token's `aud`).
    pub push_audience: String,
    /// The service account Pub/Sub signs pushes as (the token's `email`).
    pub push_service_account: String,
    /// Google's signing keys, a JWKS (`https://www.googleapis.com/oauth2/v3/certs`).
    pub certs_url: String,
    /// Where the service account's JSON key is.
    pub key: KeySource,
}

/// Where the service account's JSON key is: a secret (deployed), or the key itself (local).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Secret(String),
    Plain(Redacted),
}

/// A value that never shows in logs or `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Redacted(pub String);

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Redacted {
    fn from(s: String) -> Redacted {
        Redacted(s)
    }
}

/// Why a configured root certificate list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootsError {
    #[error("no certificate given")]
    Empty,
    #[error("certificate {0} is neither PEM nor base64 DER of an X.509 certificate")]
    Invalid(usize),
}

/// Reads trusted roots: PEM blocks, or base64 DER certificates separated by commas.
pub fn parse_roots(raw: &str) -> Result<Vec<Vec<u8>>, RootsError> {
    let ders: Vec<Vec<u8>> = if raw.contains("-----BEGIN") {
        x509_parser::pem::Pem::iter_from_buffer(raw.as_bytes())
            .enumerate()
            .map(|(i, p)| p.map(|p| p.contents).map_err(|_| RootsError::Invalid(i)))
            .collect::<Result<_, _>>()?
    } else {
        raw.split(',')
            .map(|c| c.split_whitespace().collect::<String>())
            .filter(|c| !c.is_empty())
            .enumerate()
            .map(|(i, c)| STANDARD.decode(c).map_err(|_| RootsError::Invalid(i)))
            .collect::<Result<_, _>>()?
    };
    if ders.is_empty() {
        return Err(RootsError::Empty);
    }
    for (i, der) in ders.iter().enumerate() {
        match X509Certificate::from_der(der) {
            Ok(([], _)) => {}
            _ => return Err(RootsError::Invalid(i)),
        }
    }
    Ok(ders)
}
