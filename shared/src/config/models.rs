//! The model provider settings (the consumer only): which catalogue rows, which providers in
//! which order, where they are and where their keys are.

use super::env;
use std::collections::HashMap;

use super::read::{ConfigError, declared, http_url};
use crate::domain::catalogue::{self, Model, Provider, Serves};

/// The model provider settings (the consumer only).
#[derive(Clone, PartialEq, Eq)]
pub struct ModelSettings {
    pub base_url: String,
    pub api_key_secret_id: Option<String>,
    pub api_key: Option<String>,
    /// The catalogue row of the vision model (configured or the default).
    pub vision_model: &'static Model,
    /// The catalogue row of the edit model (configured or the default).
    pub image_model: &'static Model,
    /// The providers of the edit, in failover order (never empty, no repeats).
    pub edit_providers: Vec<Provider>,
    /// The providers of the vision calls, in failover order (never empty, no repeats).
    pub vision_providers: Vec<Provider>,
    /// Gemini's base URL, key secret and key (used only when a list names gemini).
    pub gemini_base_url: String,
    pub gemini_api_key_secret_id: Option<String>,
    pub gemini_api_key: Option<String>,
}

impl ModelSettings {
    /// Whether a provider list names `provider`.
    pub fn uses(&self, provider: Provider) -> bool {
        self.edit_providers.contains(&provider) || self.vision_providers.contains(&provider)
    }
}

/// Where Google serves the Gemini API.
pub const GEMINI_URL: &str = "https://generativelanguage.googleapis.com";

/// A provider list: known names, comma-separated, at least one, none twice.
fn providers(name: &'static str, value: Option<String>) -> Result<Vec<Provider>, ConfigError> {
    let raw = value.unwrap_or_else(|| Provider::OpenAi.as_str().to_owned());
    let invalid = |reason: String| ConfigError::Invalid { name, reason };
    let mut out = Vec::new();
    for part in raw.split(',').map(str::trim) {
        let provider = Provider::parse(part)
            .ok_or_else(|| invalid(format!("{part:?} is not a provider; known: openai, gemini")))?;
        if out.contains(&provider) {
            return Err(invalid(format!("{part} is listed twice")));
        }
        out.push(provider);
    }
    Ok(out)
}

impl std::fmt::Debug for ModelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSettings")
            .field("base_url", &self.base_url)
            .field("api_key_secret_id", &self.api_key_secret_id)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("vision_model", &self.vision_model.id)
            .field("image_model", &self.image_model.id)
            .field("edit_providers", &self.edit_providers)
            .field("vision_providers", &self.vision_providers)
            .field("gemini_base_url", &self.gemini_base_url)
            .field("gemini_api_key_secret_id", &self.gemini_api_key_secret_id)
            .field(
                "gemini_api_key",
                &self.gemini_api_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Where the stand-in model server listens by default.
pub const STAND_IN_MODEL_URL: &str = "http://127.0.0.1:8788";

impl ModelSettings {
    pub fn from_env() -> Result<ModelSettings, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        ModelSettings::from_lookup(|k| vars.get(k).cloned())
    }

    /// Reads the settings on today's UTC date: a model past its shutdown is refused here, at
    /// cold start, naming the variable, the date and the models to use instead.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ModelSettings, ConfigError> {
        ModelSettings::from_lookup_on(get, crate::clock::now().date())
    }

    /// [`ModelSettings::from_lookup`] as of `today`.
    pub fn from_lookup_on(
        get: impl Fn(&str) -> Option<String>,
        today: time::Date,
    ) -> Result<ModelSettings, ConfigError> {
        let opt = |name: &'static str| -> Result<Option<String>, ConfigError> {
            Ok(declared(&get, name)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()))
        };
        let api_key_secret_id = opt(env::MODEL_API_KEY_SECRET_ID)?;
        let api_key = opt(env::MODEL_API_KEY)?;
        let keyed = api_key_secret_id.is_some() || api_key.is_some();
        let base_url = opt(env::MODEL_BASE_URL)?.unwrap_or_else(|| {
            if keyed {
                "https://api.openai.com".to_owned()
            } else {
                STAND_IN_MODEL_URL.to_owned()
            }
        });
        let gemini_api_key_secret_id = opt(env::GEMINI_API_KEY_SECRET_ID)?;
        let gemini_api_key = opt(env::GEMINI_API_KEY)?;
        let gemini_keyed = gemini_api_key_secret_id.is_some() || gemini_api_key.is_some();
        let gemini_base_url = opt(env::GEMINI_BASE_URL)?.unwrap_or_else(|| {
            if gemini_keyed {
                GEMINI_URL.to_owned()
            } else {
                STAND_IN_MODEL_URL.to_owned()
            }
        });
        Ok(ModelSettings {
            base_url: http_url(env::MODEL_BASE_URL, base_url)?,
            edit_providers: providers(env::EDIT_PROVIDERS, opt(env::EDIT_PROVIDERS)?)?,
            vision_providers: providers(env::VISION_PROVIDERS, opt(env::VISION_PROVIDERS)?)?,
            gemini_base_url: http_url(env::GEMINI_BASE_URL, gemini_base_url)?,
            gemini_api_key_secret_id,
            gemini_api_key,
            api_key_secret_id,
            api_key,
            vision_model: model(
                env::VISION_MODEL,
                opt(env::VISION_MODEL)?,
                Serves::Vision,
                today,
            )?,
            image_model: model(
                env::IMAGE_MODEL,
                opt(env::IMAGE_MODEL)?,
                Serves::Edit,
                today,
            )?,
        })
    }
}

/// The catalogue row a model variable names (or the default), refused when unknown, of the
/// wrong kind, or shut down on `today`.
fn model(
    name: &'static str,
    value: Option<String>,
    serves: Serves,
    today: time::Date,
) -> Result<&'static Model, ConfigError> {
    let id = value.unwrap_or_else(|| {
        match serves {
            Serves::Edit => catalogue::DEFAULT_IMAGE_MODEL,
            Serves::Vision => catalogue::DEFAULT_VISION_MODEL,
        }
        .to_owned()
    });
    catalogue::check_configured(&id, serves, today).map_err(|e| ConfigError::Invalid {
        name,
        reason: e.to_string(),
    })
}

/// The configured model ids (or the defaults), as written and unchecked: the sweeper's daily
/// lifecycle check reads them, and must keep running (and refunding) when one is shut down.
pub fn configured_model_ids() -> [String; 2] {
    let read = |name: &'static str, default: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    [
        read(env::IMAGE_MODEL, catalogue::DEFAULT_IMAGE_MODEL),
        read(env::VISION_MODEL, catalogue::DEFAULT_VISION_MODEL),
    ]
}

/// Where the consumer's content credentials' signing key is: a Secrets Manager secret, or
/// (local runs and tests) the key's JSON itself.
#[derive(Clone, Default)]
pub struct SigningSettings {
    pub secret_id: Option<String>,
    pub credentials: Option<String>,
}

impl SigningSettings {
    pub fn from_env() -> SigningSettings {
        let vars: HashMap<String, String> = std::env::vars().collect();
        SigningSettings::from_lookup(|k| vars.get(k).cloned())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> SigningSettings {
        let opt = |name: &'static str| get(name).filter(|v| !v.trim().is_empty());
        SigningSettings {
            secret_id: opt(env::SIGNING_SECRET_ID).map(|v| v.trim().to_owned()),
            credentials: opt(env::SIGNING_CREDENTIALS),
        }
    }
}

impl std::fmt::Debug for SigningSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningSettings")
            .field("secret_id", &self.secret_id)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}
