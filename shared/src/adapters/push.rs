//! The push services' client: APNs (HTTP/2, token-based auth: an ES256 JWT in `authorization`)
//! and FCM HTTP v1 (an OAuth2 bearer got by exchanging a service-account JWT at the token
//! URL). Base URLs are settings, so the local stand-ins (`tests/src/push.rs`) take their place;
//! an `http://` APNs URL is spoken as h2c with prior knowledge (only the stand-in is so).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::service_account::{ServiceAccount, TokenError, lock};
use super::tls::{self, Alpn};
use crate::domain::device::{Platform, PushToken};
use crate::domain::push::{Answer, Notification};

/// FCM's OAuth2 scope.
pub const FCM_SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// APNs refuses a provider token older than an hour and throttles new ones more often than
/// every 20 minutes: each is used for this long.
const APNS_TOKEN_LIFE: Duration = Duration::from_secs(40 * 60);
/// How long APNs keeps a push for a phone that is off (`apns-expiration`), said rather than
/// left to APNs: a day later "your edit is ready" is still news, a week later it is noise.
const APNS_EXPIRY: Duration = Duration::from_secs(24 * 3600);

/// APNs credentials and where to send (no `Debug`: it holds the signing key).
#[derive(Clone, serde::Deserialize)]
pub struct ApnsSettings {
    /// `https://api.push.apple.com` (or the sandbox, or a stand-in): from the settings.
    #[serde(default)]
    pub base_url: String,
    pub key_id: String,
    pub team_id: String,
    /// The app's bundle id (`apns-topic`).
    pub topic: String,
    /// The `.p8` signing key (PKCS#8 PEM, P-256).
    pub key_pem: String,
}

/// FCM credentials and where to send (no `Debug`: it holds the service account's key).
#[derive(Clone, serde::Deserialize)]
pub struct FcmSettings {
    /// `https://fcm.googleapis.com` (or a stand-in): from the settings.
    #[serde(default)]
    pub base_url: String,
    /// `https://oauth2.googleapis.com/token` (or a stand-in): from the settings.
    #[serde(default)]
    pub token_url: String,
    pub project_id: String,
    pub client_email: String,
    /// The service account's RSA key (PKCS#8 PEM; `private_key` in its JSON file).
    #[serde(rename = "private_key")]
    pub private_key_pem: String,
}

/// Why a push got no answer (a push service's answer, whatever it is, is an [`Answer`]).
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("no {0} credentials configured")]
    NotConfigured(&'static str),
    #[error("signing the provider token")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("getting FCM's bearer")]
    Token(#[from] TokenError),
    #[error("sending")]
    Http(#[source] reqwest::Error),
    #[error("reading the push credentials from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl PushError {
    /// Google's token endpoint refused the service account's assertion (a 4xx: a wrong or
    /// revoked key, an unknown account), as FCM refusing our credentials would.
    pub fn refuses_credentials(&self) -> bool {
        matches!(self, PushError::Token(TokenError::Refused(status)) if (400..500).contains(status))
    }
}

/// The push credentials secret (`ATELIER_PUSH_SECRET_ID`): either part may be absent.
#[derive(serde::Deserialize)]
struct Credentials {
    apns: Option<ApnsSettings>,
    fcm: Option<FcmSettings>,
}

/// The process's push client: `None` when no secret is configured (push is off); the URLs
/// from the settings, the credentials from the secret, read once at cold start.
pub async fn load(
    settings: &crate::config::PushSettings,
    clients: &crate::adapters::aws::Clients,
    timeout: Duration,
) -> Result<Option<Pusher>, PushError> {
    let Some(id) = &settings.secret_id else {
        return Ok(None);
    };
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| PushError::Secret {
        secret_id: id.clone(),
        source,
    };
    let text = clients.secret_string(id).await.map_err(failed)?;
    let creds: Credentials =
        serde_json::from_str(text.as_deref().unwrap_or_default()).map_err(|e| failed(e.into()))?;
    // The deployed secret holds no credentials until the operator stores them: push is off.
    if creds.apns.is_none() && creds.fcm.is_none() {
        return Ok(None);
    }
    let apns = creds.apns.map(|a| ApnsSettings {
        base_url: settings.apns_url.clone(),
        ..a
    });
    let fcm = creds.fcm.map(|f| FcmSettings {
        base_url: settings.fcm_url.clone(),
        token_url: settings.fcm_token_url.clone(),
        ..f
    });
    Pusher::new(apns, fcm, timeout).map(Some)
}

/// The client, built once per process; tokens are cached in it.
pub struct Pusher {
    http: reqwest::Client,
    /// h2c with prior knowledge, for an `http://` APNs (the stand-in).
    h2c: reqwest::Client,
    apns: Option<ApnsSettings>,
    fcm: Option<FcmSettings>,
    apns_jwt: Mutex<Option<(String, Instant)>>,
    /// FCM's service account and its cached bearer.
    fcm_account: Option<ServiceAccount>,
}

#[derive(Serialize)]
struct ApnsClaims<'a> {
    iss: &'a str,
    iat: i64,
}

impl Pusher {
    pub fn new(
        apns: Option<ApnsSettings>,
        fcm: Option<FcmSettings>,
        timeout: Duration,
    ) -> Result<Pusher, PushError> {
        let base = |alpn| {
            tls::shared(reqwest::Client::builder(), alpn)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(timeout)
        };
        Ok(Pusher {
            http: base(Alpn::Any).build().map_err(PushError::Http)?,
            h2c: base(Alpn::Http2)
                .http2_prior_knowledge()
                .build()
                .map_err(PushError::Http)?,
            fcm_account: fcm.as_ref().map(|f| {
                ServiceAccount::new(&f.token_url, &f.client_email, &f.private_key_pem, FCM_SCOPE)
            }),
            apns,
            fcm,
            apns_jwt: Mutex::new(None),
        })
    }

    /// Sends `n` to one device; the push service's answer.
    pub async fn send(
        &self,
        platform: Platform,
        token: &PushToken,
        n: &Notification,
    ) -> Result<Answer, PushError> {
        match platform {
            Platform::Ios => self.send_apns(token, n).await,
            Platform::Android => self.send_fcm(token, n).await,
        }
    }

    async fn send_apns(&self, token: &PushToken, n: &Notification) -> Result<Answer, PushError> {
        let s = self.apns.as_ref().ok_or(PushError::NotConfigured("APNs"))?;
        let jwt = self.apns_jwt(s)?;
        let client = if s.base_url.starts_with("http://") {
            &self.h2c
        } else {
            &self.http
        };
        let url = format!(
            "{}/3/device/{}",
            s.base_url.trim_end_matches('/'),
            token.as_str()
        );
        let res = client
            .post(url)
            .bearer_auth(jwt)
            .header("apns-topic", &s.topic)
            .header("apns-push-type", "alert")
            .header("apns-priority", "10")
            .header("apns-expiration", apns_expiration().to_string())
            // The event id is a ULID-like id; APNs wants a UUID for apns-id, so it is derived.
            .header("apns-id", apns_id(&n.event_id))
            .header("apns-collapse-id", &n.event_id)
            .json(&n.apns_body())
            .send()
            .await
            .map_err(PushError::Http)?;
        let status = res.status().as_u16();
        let body = res.text().await.unwrap_or_default();
        Ok(Answer::apns(status, &body))
    }

    async fn send_fcm(&self, token: &PushToken, n: &Notification) -> Result<Answer, PushError> {
        let (Some(s), Some(account)) = (&self.fcm, &self.fcm_account) else {
            return Err(PushError::NotConfigured("FCM"));
        };
        let access = account.bearer(&self.http).await?;
        let url = format!(
            "{}/v1/projects/{}/messages:send",
            s.base_url.trim_end_matches('/'),
            s.project_id
        );
        let res = self
            .http
            .post(url)
            .bearer_auth(access)
            .json(&n.fcm_body(token.as_str()))
            .send()
            .await
            .map_err(PushError::Http)?;
        let status = res.status().as_u16();
        let body = res.text().await.unwrap_or_default();
        if status == 401 {
            // A revoked access token: the next attempt gets a new one.
            account.forget();
        }
        Ok(Answer::fcm(status, &body))
    }

    /// The cached APNs provider token, or a new one.
    fn apns_jwt(&self, s: &ApnsSettings) -> Result<String, PushError> {
        if let Some((jwt, at)) = lock(&self.apns_jwt).as_ref()
            && at.elapsed() < APNS_TOKEN_LIFE
        {
            return Ok(jwt.clone());
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(s.key_id.clone());
        let key = EncodingKey::from_ec_pem(s.key_pem.as_bytes()).map_err(PushError::Sign)?;
        let claims = ApnsClaims {
            iss: &s.team_id,
            iat: crate::clock::now().unix_timestamp(),
        };
        let jwt = crate::adapters::jwt::encode(&header, &claims, &key).map_err(PushError::Sign)?;
        *lock(&self.apns_jwt) = Some((jwt.clone(), Instant::now()));
        Ok(jwt)
    }
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("apns", &self.apns.as_ref().map(|a| &a.base_url))
            .field("fcm", &self.fcm.as_ref().map(|f| &f.base_url))
            .finish_non_exhaustive()
    }
}

/// `apns-expiration`: the UNIX time after which APNs drops the push undelivered.
fn apns_expiration() -> i64 {
    (crate::clock::now() + APNS_EXPIRY).unix_timestamp()
}

/// A UUID (8-4-4-4-12 hex) derived from the event id, the same for every attempt of it.
pub fn apns_id(event_id: &str) -> String {
    use sha2::Digest;
    let h = hex::encode(sha2::Sha256::digest(event_id.as_bytes()));
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
