//! Building the model client at cold start: settings from configuration, the provider key
//! read once from Secrets Manager when one is configured. A failure here stops the function
//! before it takes any message, naming what is wrong.

use super::call::ModelConfig;
use super::catalogue::{self, Provider, Serves};
use super::client::ModelClient;
use super::error::ModelError;
use crate::adapters::aws::Clients;
use crate::config::{ConfigError, ModelSettings};

/// Why the model client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("reading the provider key from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("building the model client")]
    Model(#[source] ModelError),
    #[error("the provider key's read stopped")]
    KeyTask(#[source] tokio::task::JoinError),
}

/// The client as the consumer Lambda builds it, from the environment. The key's round trip to
/// Secrets Manager runs while the HTTP client is built (its TLS roots are read on its first
/// handshake: `adapters::tls`), so cold start waits for the longer of the two, not their sum;
/// a missing or unreadable secret still fails here, before the first message.
pub async fn client_from_env(clients: &Clients) -> Result<ModelClient, SetupError> {
    let settings = ModelSettings::from_env()?;
    let key = tokio::spawn(provider_key(
        clients.secrets.clone(),
        settings.api_key_secret_id.clone(),
        settings.api_key.clone(),
    ));
    let mut config = ModelConfig::new(settings.base_url.clone());
    config.vision_model = settings.vision_model;
    config.image_model = settings.image_model;
    let client = ModelClient::new(config).map_err(SetupError::Model)?;
    let api_key = key.await.map_err(SetupError::KeyTask)??;
    let client = client.with_api_key(api_key);
    let config = client.config();
    tracing::info!(base_url = %config.base_url, keyed = config.api_key.is_some(), image_model = config.image_model.id, vision_model = config.vision_model.id, "model_configured");
    Ok(client)
}

/// The clients of a deployment's provider lists, in order (`ATELIER_EDIT_PROVIDERS`,
/// `ATELIER_VISION_PROVIDERS`; OpenAI alone by default): the edit's and the vision calls'. A
/// provider no list names is not built and its key not read.
pub async fn clients_from_env(
    clients: &Clients,
) -> Result<(Vec<ModelClient>, Vec<ModelClient>), SetupError> {
    let settings = ModelSettings::from_env()?;
    let openai = match settings.uses(Provider::OpenAi) {
        true => Some(client_from_env(clients).await?),
        false => None,
    };
    let gemini = match settings.uses(Provider::Gemini) {
        true => Some(gemini_client(clients, &settings).await?),
        false => None,
    };
    let pick = |list: &[Provider]| -> Vec<ModelClient> {
        list.iter()
            .filter_map(|p| match p {
                Provider::OpenAi => openai.clone(),
                Provider::Gemini => gemini.clone(),
            })
            .collect()
    };
    let order = (
        pick(&settings.edit_providers),
        pick(&settings.vision_providers),
    );
    tracing::info!(edit = ?settings.edit_providers, vision = ?settings.vision_providers, "model_providers_configured");
    Ok(order)
}

/// The Gemini client: the catalogue's Gemini defaults, its own base URL and key.
async fn gemini_client(
    clients: &Clients,
    settings: &ModelSettings,
) -> Result<ModelClient, SetupError> {
    let today = crate::clock::now().date();
    let row = |id: &str, serves| {
        catalogue::check_configured(id, serves, today).map_err(|e| {
            SetupError::Config(crate::config::ConfigError::Invalid {
                name: crate::config::env::EDIT_PROVIDERS,
                reason: format!("the Gemini default model cannot be used: {e}"),
            })
        })
    };
    let mut config = ModelConfig::new(settings.gemini_base_url.clone());
    config.image_model = row(catalogue::DEFAULT_GEMINI_IMAGE_MODEL, Serves::Edit)?;
    config.vision_model = row(catalogue::DEFAULT_GEMINI_VISION_MODEL, Serves::Vision)?;
    let key = provider_key(
        clients.secrets.clone(),
        settings.gemini_api_key_secret_id.clone(),
        settings.gemini_api_key.clone(),
    )
    .await?;
    let client = ModelClient::new(config)
        .map_err(SetupError::Model)?
        .with_api_key(key);
    tracing::info!(base_url = %client.config().base_url, keyed = client.config().api_key.is_some(), image_model = client.config().image_model.id, vision_model = client.config().vision_model.id, "gemini_configured");
    Ok(client)
}

/// The provider key: read from Secrets Manager when a secret is configured, else the
/// configured value (local runs), else none (the stand-in needs none).
async fn provider_key(
    secrets: aws_sdk_secretsmanager::Client,
    secret_id: Option<String>,
    fallback: Option<String>,
) -> Result<Option<String>, SetupError> {
    let Some(id) = secret_id else {
        return Ok(fallback);
    };
    let out = secrets
        .get_secret_value()
        .secret_id(&id)
        .send()
        .await
        .map_err(|e| SetupError::Secret {
            secret_id: id,
            source: Box::new(e),
        })?;
    Ok(out.secret_string().map(str::to_owned))
}
