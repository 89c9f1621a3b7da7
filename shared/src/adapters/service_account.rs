//! A Google service account's OAuth2 bearer (RFC 7523 JWT-bearer grant, as Google's client
//! libraries get one): an RS256 JWT signed with the account's key, `iss` its e-mail, `aud`
//! Google's token endpoint, the scope asked for, exchanged at the token URL and cached until shortly
//! before it expires. FCM (push) and the Android Publisher API (Google Play purchases) use it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

/// The JWT's audience: Google's token endpoint, wherever the grant is posted (google-auth's
/// service-account credentials name it whatever their `token_uri`; so do we).
pub const TOKEN_AUDIENCE: &str = "https://oauth2.googleapis.com/token";
/// An access token is renewed this long before it expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(300);

/// Why no bearer was got.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("signing the service account's JWT")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("the token endpoint answered {0}")]
    Refused(u16),
    #[error("calling the token endpoint")]
    Http(#[source] reqwest::Error),
}

/// The account (no `Debug`: it holds the key) and its cached bearer.
pub struct ServiceAccount {
    token_url: String,
    client_email: String,
    private_key_pem: String,
    scope: &'static str,
    cached: Mutex<Option<(String, Instant)>>,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

#[derive(serde::Deserialize)]
struct AccessToken {
    access_token: String,
    expires_in: u64,
}

impl ServiceAccount {
    pub fn new(
        token_url: &str,
        client_email: &str,
        private_key_pem: &str,
        scope: &'static str,
    ) -> ServiceAccount {
        ServiceAccount {
            token_url: token_url.to_owned(),
            client_email: client_email.to_owned(),
            private_key_pem: private_key_pem.to_owned(),
            scope,
            cached: Mutex::new(None),
        }
    }

    /// The cached bearer, or one exchanged for a new JWT.
    pub async fn bearer(&self, http: &reqwest::Client) -> Result<String, TokenError> {
        if let Some((token, until)) = lock(&self.cached).as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let iat = crate::clock::now().unix_timestamp();
        let claims = Claims {
            iss: &self.client_email,
            scope: self.scope,
            aud: TOKEN_AUDIENCE,
            iat,
            exp: iat + 3600,
        };
        let key =
            EncodingKey::from_rsa_pem(self.private_key_pem.as_bytes()).map_err(TokenError::Sign)?;
        let assertion = crate::adapters::jwt::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map_err(TokenError::Sign)?;
        let res = http
            .post(&self.token_url)
            .form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", assertion.as_str()),
            ])
            .send()
            .await
            .map_err(TokenError::Http)?;
        if !res.status().is_success() {
            return Err(TokenError::Refused(res.status().as_u16()));
        }
        let token: AccessToken = res.json().await.map_err(TokenError::Http)?;
        let life = Duration::from_secs(token.expires_in).saturating_sub(TOKEN_MARGIN);
        *lock(&self.cached) = Some((token.access_token.clone(), Instant::now() + life));
        Ok(token.access_token)
    }

    /// Drops the cached bearer (the service answered 401: it was revoked).
    pub fn forget(&self) {
        *lock(&self.cached) = None;
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
