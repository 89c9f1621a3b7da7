//! Google Play: the Android Publisher API's one-time products (`purchases.products.get` and
//! `consume`, as a service account with the `androidpublisher` scope) and the Real-time
//! Developer Notifications Pub/Sub pushes, believed only with Pub/Sub's OIDC token: RS256
//! signed by a key of Google's certs (a JWKS), issued by `accounts.google.com`, for the
//! configured audience and service account, not expired; as Google's own `google-auth`
//! (`id_token.verify_oauth2_token` and the e-mail check of Pub/Sub's sample) judges it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

pub use crate::config::{GooglePlaySettings, KeySource, Redacted};

use crate::adapters::service_account::{ServiceAccount, TokenError, lock};
use crate::adapters::tls::{self, Alpn};
use crate::domain::validation::{FieldCode, FieldErrors};

/// The Android Publisher API's OAuth2 scope.
pub const PUBLISHER_SCOPE: &str = "https://www.googleapis.com/auth/androidpublisher";
/// The issuers Google's ID tokens carry (`google.oauth2.id_token._GOOGLE_ISSUERS`).
pub const ISSUERS: [&str; 2] = ["accounts.google.com", "https://accounts.google.com"];
/// Longest purchase token accepted (Google's are about 150 characters).
pub const MAX_PURCHASE_TOKEN_LEN: usize = 1024;
/// Longest product id accepted (Google Play allows 139 characters).
pub const MAX_PRODUCT_ID_LEN: usize = 139;

/// The product id and token, present, bounded, and of the characters Google uses (so they
/// go into the Publisher URL as they are).
pub fn purchase_ids<'a>(
    product_id: Option<&'a str>,
    purchase_token: Option<&'a str>,
) -> Result<(&'a str, &'a str), FieldErrors> {
    let mut errors = FieldErrors::default();
    let product = field(&mut errors, product_id, "productId", MAX_PRODUCT_ID_LEN);
    let token = field(
        &mut errors,
        purchase_token,
        "purchaseToken",
        MAX_PURCHASE_TOKEN_LEN,
    );
    match (product, token) {
        (Some(p), Some(t)) => Ok((p, t)),
        _ => Err(errors),
    }
}

fn field<'a>(
    errors: &mut FieldErrors,
    value: Option<&'a str>,
    name: &'static str,
    max: usize,
) -> Option<&'a str> {
    match value {
        None | Some("") => {
            errors.push(name, FieldCode::Required, "as Google Play Billing gave it");
            None
        }
        Some(v) if v.len() > max => {
            errors.push(
                name,
                FieldCode::TooLong,
                format!("at most {max} characters"),
            );
            None
        }
        Some(v)
            if !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) =>
        {
            errors.push(
                name,
                FieldCode::Invalid,
                "letters, digits, '.', '_' and '-' only",
            );
            None
        }
        Some(v) => Some(v),
    }
}

/// Longest `Authorization` header of a push accepted (an ID token is about 1 KiB).
const MAX_PUSH_TOKEN_LEN: usize = 8 * 1024;
/// Google's certs are fetched again after this long (they rotate over days).
const CERTS_LIFE: Duration = Duration::from_secs(3600);
/// An unknown `kid` fetches the certs again, at most this often (a forged `kid` cannot make
/// every push fetch).
const CERTS_REFETCH: Duration = Duration::from_secs(30);

/// The service account's key, as in the JSON key file Google hands out (no `Debug`).
#[derive(Clone, Deserialize)]
pub struct ServiceAccountKey {
    pub client_email: String,
    #[serde(rename = "private_key")]
    pub private_key_pem: String,
}

/// A one-time product purchase (`ProductPurchase`; the fields Atelier uses).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProductPurchase {
    /// 0 purchased, 1 canceled, 2 pending.
    pub purchase_state: i32,
    /// 0 yet to be consumed, 1 consumed.
    #[serde(default)]
    pub consumption_state: i32,
    #[serde(default)]
    pub order_id: Option<String>,
    #[serde(default = "one")]
    pub quantity: i64,
    #[serde(default)]
    pub obfuscated_external_account_id: Option<String>,
    /// Absent when the purchase was not a test (license tester) purchase or promo.
    #[serde(default)]
    pub purchase_type: Option<i32>,
    /// When it was bought (milliseconds since the epoch; Google writes an int64 as a string).
    #[serde(default, deserialize_with = "int64")]
    pub purchase_time_millis: Option<i64>,
}

/// Google's JSON int64: a string of digits (a number is taken too).
fn int64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(i64),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::Number(n)) => Some(n),
        Some(Raw::Text(t)) => Some(t.parse().map_err(serde::de::Error::custom)?),
    })
}

/// One entry of `purchases.voidedpurchases.list` (`VoidedPurchase`; the fields Atelier uses).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VoidedEntry {
    #[serde(default)]
    pub order_id: Option<String>,
    #[serde(default)]
    pub purchase_token: Option<String>,
    #[serde(default, deserialize_with = "int64")]
    pub voided_time_millis: Option<i64>,
    /// 0 user, 1 developer, 2 Google.
    #[serde(default)]
    pub voided_source: Option<i32>,
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental, 5 fraud, 6 friendly
    /// fraud, 7 chargeback.
    #[serde(default)]
    pub voided_reason: Option<i32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VoidedPage {
    #[serde(default)]
    voided_purchases: Vec<VoidedEntry>,
    #[serde(default)]
    token_pagination: Option<TokenPagination>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenPagination {
    #[serde(default)]
    next_page_token: Option<String>,
}

/// How far back `purchases.voidedpurchases.list` reaches (Google keeps 30 days), less a
/// minute so that a start at the edge is never refused.
pub const VOIDED_WINDOW_MILLIS: i64 = 30 * 86_400_000 - 60_000;
/// Entries per page asked for (Google's most).
const VOIDED_PAGE: u32 = 1000;
/// Pages followed at most for one order (a million voids in the window).
const VOIDED_PAGES: usize = 1000;

fn one() -> i64 {
    1
}

/// Why the Android Publisher API gave no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum PublisherError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("calling the Android Publisher API")]
    Http(#[source] reqwest::Error),
    /// 400, 404 or 410: Google knows no such purchase of this product for this app.
    #[error("Google Play knows no such purchase (HTTP {0})")]
    NoSuchPurchase(u16),
    #[error("the Android Publisher API answered {0}")]
    Refused(u16),
    #[error("the Android Publisher API's answer is not a ProductPurchase")]
    Answer(#[source] reqwest::Error),
    #[error("the publisher URL {0:?} cannot take a path")]
    Url(String),
    #[error("the voided purchases list ran past {VOIDED_PAGES} pages")]
    TooManyPages,
}

/// Why a Pub/Sub push was not believed. Every case means "not Pub/Sub's push for us".
#[derive(Debug, thiserror::Error)]
pub enum PushAuthError {
    #[error("no bearer token")]
    Missing,
    #[error("the token's header is not RS256 with a kid")]
    Header,
    #[error("no key of Google's certs has kid {0:?}")]
    UnknownKey(String),
    #[error("the token was refused: {0}")]
    Token(#[source] jsonwebtoken::errors::Error),
    #[error("the issuer {0:?} is not Google's")]
    Issuer(String),
    #[error("the e-mail {0:?} is not the push service account's, or is not verified")]
    Email(Option<String>),
    #[error("fetching Google's certs")]
    Certs(#[source] reqwest::Error),
}

#[derive(Deserialize)]
struct PushClaims {
    iss: String,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    email_verified: bool,
}

/// Google Play, configured: the Publisher client with its service account, and the cached
/// certs that push tokens are checked with.
pub struct GooglePlay {
    pub settings: GooglePlaySettings,
    http: reqwest::Client,
    account: ServiceAccount,
    certs: Mutex<Option<(JwkSet, Instant)>>,
}

impl std::fmt::Debug for GooglePlay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GooglePlay")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl GooglePlay {
    pub fn new(
        settings: GooglePlaySettings,
        key: &ServiceAccountKey,
        timeout: Duration,
    ) -> Result<GooglePlay, reqwest::Error> {
        let http = tls::shared(reqwest::Client::builder(), Alpn::Any)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()?;
        let account = ServiceAccount::new(
            &settings.token_url,
            &key.client_email,
            &key.private_key_pem,
            PUBLISHER_SCOPE,
        );
        Ok(GooglePlay {
            settings,
            http,
            account,
            certs: Mutex::new(None),
        })
    }

    /// `…/applications/{package}/purchases/{rest…}`, each part path-encoded.
    fn purchases_url(&self, rest: &[&str]) -> Result<reqwest::Url, PublisherError> {
        let bad = || PublisherError::Url(self.settings.publisher_url.clone());
        let mut url = reqwest::Url::parse(&self.settings.publisher_url).map_err(|_| bad())?;
        url.path_segments_mut()
            .map_err(|()| bad())?
            .pop_if_empty()
            .extend([
                "androidpublisher",
                "v3",
                "applications",
                &self.settings.package_name,
                "purchases",
            ])
            .extend(rest);
        Ok(url)
    }

    /// `…/purchases/products/{productId}/tokens/{token}`, each part path-encoded.
    fn purchase_url(&self, product_id: &str, token: &str) -> Result<reqwest::Url, PublisherError> {
        self.purchases_url(&["products", product_id, "tokens", token])
    }

    /// `purchases.products.get`.
    pub async fn product_purchase(
        &self,
        product_id: &str,
        token: &str,
    ) -> Result<ProductPurchase, PublisherError> {
        let url = self.purchase_url(product_id, token)?;
        let res = self.send(self.http.get(url)).await?;
        res.json().await.map_err(PublisherError::Answer)
    }

    /// `purchases.voidedpurchases.list` from `start_ms` (clamped into Google's 30 days before
    /// `now_ms`), one-time products only, searched for `order_id`: Google's entry when it
    /// reports that order voided.
    pub async fn voided_order(
        &self,
        order_id: &str,
        start_ms: i64,
        now_ms: i64,
    ) -> Result<Option<VoidedEntry>, PublisherError> {
        let start = start_ms.clamp(now_ms - VOIDED_WINDOW_MILLIS, now_ms);
        let mut page_token: Option<String> = None;
        for _ in 0..VOIDED_PAGES {
            let mut url = self.purchases_url(&["voidedpurchases"])?;
            url.query_pairs_mut()
                .append_pair("startTime", &start.to_string())
                .append_pair("maxResults", &VOIDED_PAGE.to_string())
                .append_pair("type", "0");
            if let Some(t) = &page_token {
                url.query_pairs_mut().append_pair("token", t);
            }
            let page: VoidedPage = self
                .send(self.http.get(url))
                .await?
                .json()
                .await
                .map_err(PublisherError::Answer)?;
            let found = page
                .voided_purchases
                .into_iter()
                .find(|v| v.order_id.as_deref() == Some(order_id));
            if found.is_some() {
                return Ok(found);
            }
            page_token = page.token_pagination.and_then(|p| p.next_page_token);
            if page_token.is_none() {
                return Ok(None);
            }
        }
        Err(PublisherError::TooManyPages)
    }

    /// `purchases.products.consume` (which also acknowledges): the item can be bought again.
    pub async fn consume(&self, product_id: &str, token: &str) -> Result<(), PublisherError> {
        let mut url = self.purchase_url(product_id, token)?;
        let path = format!("{}:consume", url.path());
        url.set_path(&path);
        self.send(self.http.post(url).body("")).await.map(drop)
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, PublisherError> {
        let bearer = self.account.bearer(&self.http).await?;
        let res = req
            .bearer_auth(bearer)
            .send()
            .await
            .map_err(PublisherError::Http)?;
        match res.status().as_u16() {
            200..=299 => Ok(res),
            s @ (400 | 404 | 410) => Err(PublisherError::NoSuchPurchase(s)),
            s => {
                if s == 401 {
                    // A revoked bearer: the next call gets a new one.
                    self.account.forget();
                }
                Err(PublisherError::Refused(s))
            }
        }
    }

    /// Checks a push's `Authorization` header (`exp` against the system clock).
    pub async fn verify_push(&self, authorization: Option<&str>) -> Result<(), PushAuthError> {
        let token = authorization
            .filter(|h| h.len() <= MAX_PUSH_TOKEN_LEN)
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .ok_or(PushAuthError::Missing)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| PushAuthError::Header)?;
        let kid = match (header.alg, header.kid) {
            (Algorithm::RS256, Some(kid)) => kid,
            _ => return Err(PushAuthError::Header),
        };
        let key = self.key(&kid).await?;
        let mut v = Validation::new(Algorithm::RS256);
        v.set_audience(&[&self.settings.push_audience]);
        v.set_required_spec_claims(&["exp", "aud", "iss"]);
        // google-auth allows no clock skew by default; neither do we.
        v.leeway = 0;
        let claims = crate::adapters::jwt::decode::<PushClaims>(token, &key, &v)
            .map_err(PushAuthError::Token)?
            .claims;
        if !ISSUERS.contains(&claims.iss.as_str()) {
            return Err(PushAuthError::Issuer(claims.iss));
        }
        if claims.email.as_deref() != Some(self.settings.push_service_account.as_str())
            || !claims.email_verified
        {
            return Err(PushAuthError::Email(claims.email));
        }
        Ok(())
    }

    /// Google's key `kid`, from the cached certs or fetched ones.
    async fn key(&self, kid: &str) -> Result<DecodingKey, PushAuthError> {
        let cached = lock(&self.certs).clone();
        let fresh = |at: &Instant, life| at.elapsed() < life;
        if let Some((set, at)) = &cached
            && fresh(at, CERTS_LIFE)
        {
            if let Some(key) = set.find(kid) {
                return DecodingKey::from_jwk(key).map_err(PushAuthError::Token);
            }
            if fresh(at, CERTS_REFETCH) {
                return Err(PushAuthError::UnknownKey(kid.to_owned()));
            }
        }
        let set: JwkSet = self
            .http
            .get(&self.settings.certs_url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(PushAuthError::Certs)?
            .json()
            .await
            .map_err(PushAuthError::Certs)?;
        *lock(&self.certs) = Some((set.clone(), Instant::now()));
        let key = set
            .find(kid)
            .ok_or_else(|| PushAuthError::UnknownKey(kid.to_owned()))?;
        DecodingKey::from_jwk(key).map_err(PushAuthError::Token)
    }
}

/// A Pub/Sub push body (`PushRequest`) carrying a Real-time Developer Notification.
#[derive(Debug, Deserialize)]
pub struct PushRequest {
    pub message: PushMessage,
    #[serde(default)]
    pub subscription: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushMessage {
    /// The notification's JSON, base64.
    #[serde(default)]
    pub data: Option<String>,
    /// (Pub/Sub also writes it as `message_id`, ignored.)
    pub message_id: String,
}

/// A Real-time Developer Notification (`DeveloperNotification`; the parts Atelier uses).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeveloperNotification {
    pub package_name: String,
    #[serde(default, deserialize_with = "int64")]
    pub event_time_millis: Option<i64>,
    #[serde(default)]
    pub voided_purchase_notification: Option<VoidedPurchase>,
    #[serde(default)]
    pub one_time_product_notification: Option<serde_json::Value>,
    #[serde(default)]
    pub test_notification: Option<serde_json::Value>,
}

/// A purchase Google voided (refunded, charged back, cancelled).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoidedPurchase {
    pub order_id: String,
    #[serde(default)]
    pub purchase_token: Option<String>,
    /// 1 subscription, 2 one-time product.
    pub product_type: i32,
}

/// The voided purchase's product type of a one-time product.
pub const ONE_TIME_PRODUCT: i32 = 2;

/// Why a push body is not a notification for this app.
#[derive(Debug, thiserror::Error)]
pub enum NotificationError {
    #[error("the message's data is not base64 JSON of a DeveloperNotification")]
    Data,
    #[error("the package {0:?} is not this app's")]
    Package(String),
}

impl PushMessage {
    /// The notification inside, for `package_name`.
    pub fn notification(
        &self,
        package_name: &str,
    ) -> Result<DeveloperNotification, NotificationError> {
        let raw = self.data.as_deref().ok_or(NotificationError::Data)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map_err(|_| NotificationError::Data)?;
        let n: DeveloperNotification =
            serde_json::from_slice(&bytes).map_err(|_| NotificationError::Data)?;
        if n.package_name != package_name {
            return Err(NotificationError::Package(n.package_name));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn purchase_ids_take_googles_characters_and_refuse_missing_long_or_odd_ones() {
        assert_eq!(
            purchase_ids(Some("starter_pack"), Some("tok.en-1_2")),
            Ok(("starter_pack", "tok.en-1_2"))
        );
        let long = "a".repeat(MAX_PURCHASE_TOKEN_LEN + 1);
        for (product, token) in [
            (None, Some("t")),
            (Some("p"), Some("")),
            (Some("p/../x"), Some("t")),
            (Some("p"), Some(long.as_str())),
        ] {
            assert!(
                purchase_ids(product, token).is_err(),
                "{product:?} {token:?}"
            );
        }
    }

    use super::*;

    fn push(notification: &serde_json::Value) -> PushRequest {
        let data = base64::engine::general_purpose::STANDARD.encode(notification.to_string());
        let body = serde_json::json!({ "message": { "data": data, "messageId": "1", "message_id": "1",
            "publishTime": "2026-12-02T10:00:00Z", "publish_time": "2026-12-02T10:00:00Z" },
            "subscription": "projects/p/subscriptions/s" });
        serde_json::from_value(body).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_push_in_pubsubs_shape_yields_its_voided_purchase_for_this_package_only() {
        let n = serde_json::json!({ "version": "1.0", "packageName": "com.example.app",
            "eventTimeMillis": "1", "voidedPurchaseNotification":
            { "purchaseToken": "t", "orderId": "GPA.1", "productType": 2, "refundType": 1 } });
        let p = push(&n);

        let voided = p
            .message
            .notification("com.example.app")
            .map(|n| n.voided_purchase_notification);
        let other = p.message.notification("com.example.other");

        assert_eq!(p.message.message_id, "1");
        let voided = voided
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("voided"));
        assert_eq!(
            (voided.order_id.as_str(), voided.product_type),
            ("GPA.1", ONE_TIME_PRODUCT)
        );
        assert!(matches!(other, Err(NotificationError::Package(p)) if p == "com.example.app"));
    }

    #[test]
    fn data_that_is_not_base64_json_of_a_notification_is_refused() {
        for data in [None, Some("%%%".to_owned()), Some("e30=".to_owned())] {
            let m = PushMessage {
                data,
                message_id: "1".to_owned(),
            };
            assert!(matches!(
                m.notification("com.example.app"),
                Err(NotificationError::Data)
            ));
        }
    }
}
