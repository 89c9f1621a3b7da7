//! A JWT authorizer that behaves like API Gateway's: RS256 only, the key chosen by `kid` from
//! the issuer's JWKS at `{issuer}/.well-known/jwks.json`, exact issuer, the audience in `aud`
//! or, only when a token has no `aud` (a Cognito access token), in `client_id`; expiry and
//! not-before checked with no leeway. Verified claims go into the same request context
//! API Gateway builds.
//!
//! The JWKS is cached; a `kid` not in the cache refetches it (the issuer may have rotated
//! keys), but at most once per [`JWKS_MIN_REFRESH`] and one fetch at a time, so a stream of
//! tokens with made-up `kid`s cannot turn each request into a fetch from the issuer. Until a
//! fetch has given keys (the issuer may still be starting) every try fetches. A key rotated
//! in within a minute of the last fetch is refused until the minute is over.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::sync::{Mutex, RwLock};

/// Least time between two JWKS fetches (the first fetch is never delayed).
pub const JWKS_MIN_REFRESH: Duration = Duration::from_secs(60);

/// The issuer's keys as last fetched, and when that fetch was tried.
#[derive(Debug)]
struct Keys {
    set: JwkSet,
    tried_at: Option<Instant>,
}

/// Why a token was refused (the client only sees 401).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no bearer token")]
    Missing,
    #[error("token is malformed or not RS256 with a kid")]
    Header,
    #[error("no key {0} in the issuer's JWKS")]
    UnknownKid(String),
    #[error("fetching the issuer's JWKS")]
    Jwks(#[source] reqwest::Error),
    #[error("token rejected")]
    Invalid(#[source] jsonwebtoken::errors::Error),
    #[error("neither aud nor (without aud) client_id is the audience")]
    Audience,
}

/// Verifies bearer tokens for one issuer and audience.
#[derive(Clone, Debug)]
pub struct Authorizer {
    issuer: String,
    audience: String,
    http: reqwest::Client,
    keys: Arc<RwLock<Keys>>,
    /// Held while fetching, so concurrent requests with unknown `kid`s fetch once.
    fetching: Arc<Mutex<()>>,
}

impl Authorizer {
    pub fn new(issuer: &str, audience: &str) -> Authorizer {
        Authorizer {
            issuer: issuer.trim_end_matches('/').to_owned(),
            audience: audience.to_owned(),
            http: reqwest::Client::new(),
            keys: Arc::new(RwLock::new(Keys {
                set: JwkSet { keys: Vec::new() },
                tried_at: None,
            })),
            fetching: Arc::new(Mutex::new(())),
        }
    }

    /// Fetches the JWKS (the caller holds `fetching` and has recorded the try).
    async fn fetch(&self) -> Result<(), AuthError> {
        let url = format!("{}/.well-known/jwks.json", self.issuer);
        let set: JwkSet = self
            .http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(AuthError::Jwks)?
            .json()
            .await
            .map_err(AuthError::Jwks)?;
        self.keys.write().await.set = set;
        Ok(())
    }

    /// The cached key named `kid`.
    async fn cached(&self, kid: &str) -> Option<Result<DecodingKey, AuthError>> {
        let keys = self.keys.read().await;
        keys.set
            .find(kid)
            .map(|jwk| DecodingKey::from_jwk(jwk).map_err(AuthError::Invalid))
    }

    async fn key(&self, kid: &str) -> Result<DecodingKey, AuthError> {
        if let Some(key) = self.cached(kid).await {
            return key;
        }
        // Unknown kid: the issuer may have rotated keys. One fetch at a time; whoever waited
        // looks again, and nobody fetches again within the minimum interval.
        let _fetching = self.fetching.lock().await;
        if let Some(key) = self.cached(kid).await {
            return key;
        }
        let due = {
            let mut keys = self.keys.write().await;
            // Until a fetch has given keys (the issuer starting beside us), every try fetches.
            let due = keys.set.keys.is_empty()
                || keys
                    .tried_at
                    .is_none_or(|t| t.elapsed() >= JWKS_MIN_REFRESH);
            if due {
                keys.tried_at = Some(Instant::now()); // a failed fetch waits its turn too
            }
            due
        };
        if due {
            self.fetch().await?;
        }
        match self.cached(kid).await {
            Some(key) => key,
            None => Err(AuthError::UnknownKid(kid.to_owned())),
        }
    }

    /// Verifies an `Authorization` header value; returns the claims as API Gateway presents
    /// them (every value a string).
    pub async fn verify(
        &self,
        authorization: Option<&str>,
    ) -> Result<HashMap<String, String>, AuthError> {
        let token = authorization
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Missing)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Header)?;
        let kid = match (header.alg, header.kid) {
            (Algorithm::RS256, Some(kid)) => kid,
            _ => return Err(AuthError::Header),
        };
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        // API Gateway: `aud`, or `client_id` when there is no `aud`; checked below.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        // API Gateway refuses a token before its `nbf`, with the same (no) leeway as `exp`.
        validation.validate_nbf = true;
        validation.leeway = 0;
        let data =
            jsonwebtoken::decode::<HashMap<String, serde_json::Value>>(token, &key, &validation)
                .map_err(AuthError::Invalid)?;
        if !self.audience_matches(&data.claims) {
            return Err(AuthError::Audience);
        }
        Ok(data
            .claims
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect())
    }

    /// API Gateway's audience rule: `aud` (a string or a list) names the audience; a token
    /// without `aud` is checked by its `client_id`.
    fn audience_matches(&self, claims: &HashMap<String, serde_json::Value>) -> bool {
        use serde_json::Value;
        let is_ours = |v: &Value| v.as_str() == Some(self.audience.as_str());
        match (claims.get("aud"), claims.get("client_id")) {
            (Some(Value::Array(list)), _) => list.iter().any(is_ours),
            (Some(aud), _) => is_ours(aud),
            (None, Some(client_id)) => is_ours(client_id),
            (None, None) => false,
        }
    }
}
