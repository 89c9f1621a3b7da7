//! Buying credits: the packs, Stripe, the App Store and Google Play settings.

use super::env;
use std::collections::HashMap;

use super::read::{ConfigError, declared, http_url};
use super::stores::{
    AppleApiSettings, AppleEnvironment, AppleSettings, GooglePlaySettings, KeySource, default_url,
    parse_roots,
};

/// Where the stand-in Stripe listens by default (the port `stripe-mock` uses).
pub const STAND_IN_STRIPE_URL: &str = "http://127.0.0.1:12111";

/// Buying credits: the catalogue, where Stripe is, and how to find its keys. The keys
/// themselves are read at cold start ([`crate::adapters::payments::setup`]); the plain-value forms are
/// for local development.
#[derive(Clone, PartialEq, Eq)]
pub struct PaymentSettings {
    pub packs: crate::domain::Packs,
    /// Allowed prefixes of success and cancel URLs (no open redirect); never empty.
    pub return_urls: Vec<reqwest::Url>,
    pub stripe_base_url: String,
    pub stripe_secret_id: Option<String>,
    pub stripe_secret_key: Option<String>,
    pub stripe_webhook_secret: Option<String>,
    /// App Store purchases, when both the roots and the bundle id are configured.
    pub apple: Option<AppleSettings>,
    /// Google Play purchases, when the package name and the key's secret id are configured.
    pub google_play: Option<GooglePlaySettings>,
    /// A store purchase older than this (seconds) is checked online before it grants, or
    /// refused without the store's server API (rule 13).
    pub store_max_age_secs: i64,
    /// What becomes of a store purchase bound to no account ([`env::UNBOUND_STORE_PURCHASES`]).
    pub unbound_store_purchases: UnboundPurchases,
}

/// Whether an App Store or Google Play purchase that names no account (no `appAccountToken`,
/// no `obfuscatedAccountId`) is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnboundPurchases {
    /// Refused: only the account the app bought for can claim a purchase.
    #[default]
    Refuse,
    /// Granted to whoever posts it first.
    Accept,
}

/// `refuse` (the default) or `accept`.
fn unbound_purchases(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<UnboundPurchases, ConfigError> {
    let name = env::UNBOUND_STORE_PURCHASES;
    match opt(name)?.as_deref() {
        None | Some("refuse") => Ok(UnboundPurchases::Refuse),
        Some("accept") => Ok(UnboundPurchases::Accept),
        Some(other) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected refuse or accept, got {other:?}"),
        }),
    }
}

impl std::fmt::Debug for PaymentSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("PaymentSettings")
            .field("packs", &self.packs)
            .field("return_urls", &self.return_urls)
            .field("stripe_base_url", &self.stripe_base_url)
            .field("stripe_secret_id", &self.stripe_secret_id)
            .field("stripe_secret_key", &redacted(&self.stripe_secret_key))
            .field(
                "stripe_webhook_secret",
                &redacted(&self.stripe_webhook_secret),
            )
            .field("apple", &self.apple)
            .field("google_play", &self.google_play)
            .field("store_max_age_secs", &self.store_max_age_secs)
            .field("unbound_store_purchases", &self.unbound_store_purchases)
            .finish()
    }
}

impl PaymentSettings {
    pub const DEFAULT_RETURN_URLS: &str = "http://localhost:8787/";
    /// [`env::STORE_PURCHASE_MAX_AGE_HOURS`]'s default: three days, Google's own limit for
    /// an unacknowledged purchase, and longer than any honest delay between buying and
    /// posting.
    pub const DEFAULT_STORE_MAX_AGE_HOURS: i64 = 72;

    pub fn from_env() -> Result<PaymentSettings, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        PaymentSettings::from_lookup(|k| vars.get(k).cloned())
    }

    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<PaymentSettings, ConfigError> {
        let opt = |name: &'static str| -> Result<Option<String>, ConfigError> {
            Ok(declared(&get, name)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()))
        };
        let packs = crate::domain::Packs::parse(
            &opt(env::CREDIT_PACKS)?.unwrap_or_else(|| crate::domain::Packs::DEFAULT.to_owned()),
        )
        .map_err(|e| ConfigError::Invalid {
            name: env::CREDIT_PACKS,
            reason: e.to_string(),
        })?;
        let return_urls = opt(env::CHECKOUT_RETURN_URLS)?
            .unwrap_or_else(|| Self::DEFAULT_RETURN_URLS.to_owned())
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| {
                reqwest::Url::parse(u)
                    .ok()
                    .filter(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some())
                    .ok_or_else(|| ConfigError::Invalid {
                        name: env::CHECKOUT_RETURN_URLS,
                        reason: format!("not an http(s) URL: {u:?}"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if return_urls.is_empty() {
            return Err(ConfigError::Invalid {
                name: env::CHECKOUT_RETURN_URLS,
                reason: "no URL given".to_owned(),
            });
        }
        let stripe_secret_id = opt(env::STRIPE_SECRET_ID)?;
        let stripe_base_url = opt(env::STRIPE_BASE_URL)?.unwrap_or_else(|| {
            if stripe_secret_id.is_some() {
                "https://api.stripe.com".to_owned()
            } else {
                STAND_IN_STRIPE_URL.to_owned()
            }
        });
        let stripe_base_url = http_url(env::STRIPE_BASE_URL, stripe_base_url)?;
        Ok(PaymentSettings {
            packs,
            return_urls,
            stripe_base_url,
            stripe_secret_id,
            stripe_secret_key: opt(env::STRIPE_SECRET_KEY)?,
            stripe_webhook_secret: opt(env::STRIPE_WEBHOOK_SECRET)?,
            apple: apple_settings(&opt)?,
            google_play: google_play_settings(&opt)?,
            store_max_age_secs: store_max_age_hours(&opt)? * 3600,
            unbound_store_purchases: unbound_purchases(&opt)?,
        })
    }
}

/// [`env::STORE_PURCHASE_MAX_AGE_HOURS`], 1-720.
fn store_max_age_hours(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<i64, ConfigError> {
    let name = env::STORE_PURCHASE_MAX_AGE_HOURS;
    match opt(name)? {
        None => Ok(PaymentSettings::DEFAULT_STORE_MAX_AGE_HOURS),
        Some(v) => match v.parse::<i64>() {
            Ok(h) if (1..=720).contains(&h) => Ok(h),
            _ => Err(ConfigError::Invalid {
                name,
                reason: format!("expected hours in 1..=720, got {v:?}"),
            }),
        },
    }
}

/// Google Play purchases: on when the package name and the key (its secret id, or locally the
/// key itself) are set; then the push subscription's audience and service account must be set
/// too.
fn google_play_settings(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<Option<GooglePlaySettings>, ConfigError> {
    let or = |name, default: &str| -> Result<String, ConfigError> {
        http_url(name, opt(name)?.unwrap_or_else(|| default.to_owned()))
    };
    // Every name is read whatever is set, so the table's test sees them all.
    let (package, secret_id, key) = (
        opt(env::GOOGLE_PLAY_PACKAGE_NAME)?,
        opt(env::GOOGLE_PLAY_SECRET_ID)?,
        opt(env::GOOGLE_PLAY_KEY)?,
    );
    let publisher_url = or(
        env::GOOGLE_PLAY_PUBLISHER_URL,
        "https://androidpublisher.googleapis.com",
    )?;
    let token_url = or(
        env::GOOGLE_PLAY_TOKEN_URL,
        "https://oauth2.googleapis.com/token",
    )?;
    let certs_url = or(
        env::GOOGLE_CERTS_URL,
        "https://www.googleapis.com/oauth2/v3/certs",
    )?;
    let (audience, account) = (
        opt(env::GOOGLE_PLAY_PUSH_AUDIENCE)?,
        opt(env::GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT)?,
    );
    let source = match (secret_id, key) {
        (Some(id), _) => KeySource::Secret(id),
        (None, Some(key)) => KeySource::Plain(key.into()),
        (None, None) => return Ok(None),
    };
    let Some(package_name) = package else {
        return Ok(None);
    };
    let required = |v: Option<String>, name| {
        v.ok_or_else(|| ConfigError::Invalid {
            name,
            reason: format!("required with {}", env::GOOGLE_PLAY_PACKAGE_NAME),
        })
    };
    Ok(Some(GooglePlaySettings {
        package_name,
        publisher_url,
        token_url,
        push_audience: required(audience, env::GOOGLE_PLAY_PUSH_AUDIENCE)?,
        push_service_account: required(account, env::GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT)?,
        certs_url,
        key: source,
    }))
}

/// App Store purchases: on when the roots and the bundle id are set, each checked here.
fn apple_settings(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<Option<AppleSettings>, ConfigError> {
    let invalid = |name: &'static str, reason: String| ConfigError::Invalid { name, reason };
    // Every name is read whatever is set, so the table's test sees them all.
    let (roots, bundle_id) = (opt(env::APPLE_ROOT_CERTS)?, opt(env::APPLE_BUNDLE_ID)?);
    let (environment, app_apple_id) = (opt(env::APPLE_ENVIRONMENT)?, opt(env::APPLE_APP_APPLE_ID)?);
    let (api_secret, api_key, api_url) = (
        opt(env::APPLE_API_SECRET_ID)?,
        opt(env::APPLE_API_KEY)?,
        opt(env::APPLE_API_URL)?,
    );
    let (Some(roots), Some(bundle_id)) = (roots, bundle_id) else {
        return Ok(None);
    };
    let roots = parse_roots(&roots).map_err(|e| invalid(env::APPLE_ROOT_CERTS, e.to_string()))?;
    let environment = match environment {
        None => AppleEnvironment::Production,
        Some(e) => AppleEnvironment::parse(&e).ok_or_else(|| {
            invalid(
                env::APPLE_ENVIRONMENT,
                format!("{e:?}: expected Production or Sandbox"),
            )
        })?,
    };
    let app_apple_id = app_apple_id
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| invalid(env::APPLE_APP_APPLE_ID, format!("{v:?}: not an integer")))
        })
        .transpose()?;
    let api = apple_api_settings(environment, api_secret, api_key, api_url)?;
    Ok(Some(AppleSettings {
        roots,
        bundle_id,
        environment,
        app_apple_id,
        api,
    }))
}

/// The App Store Server API (consumption answers): on when its key's secret or the key is set.
fn apple_api_settings(
    environment: AppleEnvironment,
    secret_id: Option<String>,
    key: Option<String>,
    url: Option<String>,
) -> Result<Option<AppleApiSettings>, ConfigError> {
    use AppleApiSettings;
    let key = match (secret_id, key) {
        (Some(id), _) => KeySource::Secret(id),
        (None, Some(key)) => KeySource::Plain(key.into()),
        (None, None) => return Ok(None),
    };
    let url = url.unwrap_or_else(|| default_url(environment).to_owned());
    Ok(Some(AppleApiSettings {
        url: http_url(env::APPLE_API_URL, url)?,
        key,
    }))
}
