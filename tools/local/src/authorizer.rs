//! A JWT authorizer that behaves like API Gateway's: RS256 only, the key chosen by `kid` from
//! the issuer's JWKS at `{issuer}/.well-known/jwks.json`, exact issuer, audience and expiry
//! checked. Verified claims go into the same request context API Gateway builds.

use std::collections::HashMap;
use std::sync::Arc;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::sync::RwLock;

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
}

/// Verifies bearer tokens for one issuer and audience.
#[derive(Clone, Debug)]
pub struct Authorizer {
    issuer: String,
    audience: String,
    http: reqwest::Client,
    keys: Arc<RwLock<JwkSet>>,
}

impl Authorizer {
    pub fn new(issuer: &str, audience: &str) -> Authorizer {
        Authorizer {
            issuer: issuer.trim_end_matches('/').to_owned(),
            audience: audience.to_owned(),
            http: reqwest::Client::new(),
            keys: Arc::new(RwLock::new(JwkSet { keys: Vec::new() })),
        }
    }

    async fn refresh(&self) -> Result<(), AuthError> {
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
        *self.keys.write().await = set;
        Ok(())
    }

    async fn key(&self, kid: &str) -> Result<DecodingKey, AuthError> {
        for attempt in 0..2 {
            if let Some(jwk) = self.keys.read().await.find(kid) {
                return DecodingKey::from_jwk(jwk).map_err(AuthError::Invalid);
            }
            if attempt == 0 {
                self.refresh().await?; // unknown kid: the issuer may have rotated keys
            }
        }
        Err(AuthError::UnknownKid(kid.to_owned()))
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
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 0;
        let data =
            jsonwebtoken::decode::<HashMap<String, serde_json::Value>>(token, &key, &validation)
                .map_err(AuthError::Invalid)?;
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
}
