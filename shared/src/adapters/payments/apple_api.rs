//! The App Store Server API, for the two calls Atelier makes: Send Consumption Information
//! (`PUT /inApps/v2/transactions/consumption/{transactionId}`), the answer to a
//! `CONSUMPTION_REQUEST` notification, and Get Transaction Info
//! (`GET /inApps/v1/transactions/{transactionId}`), Apple's word now on a transaction an app
//! posted long after it was signed (rule 13). Authenticated as Apple's library does: an ES256 JWT
//! signed with an In-App Purchase key (`kid` its key id, `iss` the issuer id, `aud`
//! `appstoreconnect-v1`, `bid` the bundle id), at most an hour long.

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use crate::adapters::tls::{self, Alpn};
pub use crate::config::default_url;

/// The JWT audience Apple's API expects.
pub const AUDIENCE: &str = "appstoreconnect-v1";
/// How long a JWT lives (Apple refuses longer than 60 minutes).
const TOKEN_LIFE_SECS: i64 = 5 * 60;
/// How long one call may take: the notification waits on it, and Apple retries a failed one.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The key as the operator stores it (no `Debug`: it holds the private key).
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub key_id: String,
    pub issuer_id: String,
    /// The `.p8` file's PEM (PKCS#8, P-256).
    pub private_key: String,
}

/// `deliveryStatus`: whether the purchase reached the customer working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryStatus {
    Delivered,
}

/// The request body (ConsumptionRequest): what the account did with the purchase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumptionInfo {
    /// Always true: it is sent only for accounts that consented (Apple refuses `false`).
    pub customer_consented: bool,
    /// The share of the purchase consumed, in thousandths of a percent (0-100000).
    pub consumption_percentage: u32,
    pub delivery_status: DeliveryStatus,
    /// Every account gets free credits at signup: a sample before any purchase.
    pub sample_content_provided: bool,
}

/// Why Apple did not take the answer.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("signing the App Store Server API token")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("calling the App Store Server API")]
    Http(#[source] reqwest::Error),
    /// 429 or 5xx: worth sending again later.
    #[error("the App Store Server API answered {0}; retryable")]
    Unavailable(u16),
    /// Any other status: sending the same again will not help.
    #[error("the App Store Server API refused the answer ({0})")]
    Refused(u16),
}

impl ApiError {
    /// Whether Apple's notification should be refused so that Apple sends it again.
    pub fn retryable(&self) -> bool {
        matches!(self, ApiError::Http(_) | ApiError::Unavailable(_))
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: i64,
    exp: i64,
    aud: &'static str,
    bid: &'a str,
}

/// The client (no `Debug` of the key).
pub struct AppStoreApi {
    http: reqwest::Client,
    url: String,
    bundle_id: String,
    key_id: String,
    issuer_id: String,
    key: EncodingKey,
}

impl std::fmt::Debug for AppStoreApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppStoreApi")
            .field("url", &self.url)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the private key is not a P-256 PKCS#8 PEM")]
    Key(#[source] jsonwebtoken::errors::Error),
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
}

impl AppStoreApi {
    pub fn new(url: &str, bundle_id: &str, key: &ApiKey) -> Result<AppStoreApi, BuildError> {
        let signing =
            EncodingKey::from_ec_pem(key.private_key.as_bytes()).map_err(BuildError::Key)?;
        let http = tls::shared(reqwest::Client::builder(), Alpn::Any)
            .timeout(TIMEOUT)
            .build()
            .map_err(BuildError::Client)?;
        Ok(AppStoreApi {
            http,
            url: url.trim_end_matches('/').to_owned(),
            bundle_id: bundle_id.to_owned(),
            key_id: key.key_id.clone(),
            issuer_id: key.issuer_id.clone(),
            key: signing,
        })
    }

    fn token(&self) -> Result<String, ApiError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        let iat = crate::clock::now().unix_timestamp();
        let claims = Claims {
            iss: &self.issuer_id,
            iat,
            exp: iat + TOKEN_LIFE_SECS,
            aud: AUDIENCE,
            bid: &self.bundle_id,
        };
        crate::adapters::jwt::encode(&header, &claims, &self.key).map_err(ApiError::Sign)
    }

    /// Sends the consumption information of `transaction_id` (digits: checked by the caller).
    pub async fn send_consumption(
        &self,
        transaction_id: &str,
        info: &ConsumptionInfo,
    ) -> Result<(), ApiError> {
        let url = format!(
            "{}/inApps/v2/transactions/consumption/{transaction_id}",
            self.url
        );
        let res = self
            .http
            .put(url)
            .bearer_auth(self.token()?)
            .json(info)
            .send()
            .await
            .map_err(ApiError::Http)?;
        let status = res.status();
        if status.is_success() {
            Ok(())
        } else if status.is_server_error() || status.as_u16() == 429 {
            Err(ApiError::Unavailable(status.as_u16()))
        } else {
            Err(ApiError::Refused(status.as_u16()))
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TransactionInfo {
    signed_transaction_info: String,
}

impl AppStoreApi {
    /// Get Transaction Info of `transaction_id` (digits: checked by the caller): the
    /// transaction freshly signed by Apple (verify it as any), or `None` when Apple knows no
    /// such transaction (404).
    pub async fn transaction_info(&self, transaction_id: &str) -> Result<Option<String>, ApiError> {
        let url = format!("{}/inApps/v1/transactions/{transaction_id}", self.url);
        let res = self
            .http
            .get(url)
            .bearer_auth(self.token()?)
            .send()
            .await
            .map_err(ApiError::Http)?;
        let status = res.status();
        if status.as_u16() == 404 {
            return Ok(None);
        }
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(ApiError::Unavailable(status.as_u16()));
        }
        if !status.is_success() {
            return Err(ApiError::Refused(status.as_u16()));
        }
        let info: TransactionInfo = res.json().await.map_err(ApiError::Http)?;
        Ok(Some(info.signed_transaction_info))
    }
}

/// Thousandths of a percent of `granted` no longer in `balance`: the purchase is taken as the
/// last credits spent (what remains of the balance is counted as this purchase's first), the
/// reading most favourable to the customer.
pub fn consumed_share(granted: i64, balance: i64) -> u32 {
    if granted <= 0 {
        return 0;
    }
    let left = balance.clamp(0, granted);
    let consumed = i128::from(granted - left) * 100_000 / i128::from(granted);
    u32::try_from(consumed).unwrap_or(100_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consumed_share_counts_only_what_the_balance_no_longer_holds() {
        assert_eq!(consumed_share(50, 50), 0);
        assert_eq!(consumed_share(50, 120), 0);
        assert_eq!(consumed_share(50, 0), 100_000);
        assert_eq!(consumed_share(50, 10), 80_000);
        assert_eq!(consumed_share(3, 1), 66_666);
        assert_eq!(consumed_share(50, -4), 100_000);
        assert_eq!(consumed_share(0, 7), 0);
    }

    #[test]
    fn the_answer_is_the_json_apple_documents() {
        let info = ConsumptionInfo {
            customer_consented: true,
            consumption_percentage: 25_000,
            delivery_status: DeliveryStatus::Delivered,
            sample_content_provided: true,
        };
        let json = serde_json::to_value(&info).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"customerConsented": true, "consumptionPercentage": 25000,
                "deliveryStatus": "DELIVERED", "sampleContentProvided": true})
        );
    }
}
