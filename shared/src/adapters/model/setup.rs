//! Building the model client at cold start: settings from configuration, the provider key
//! read once from Secrets Manager when one is configured. A failure here stops the function
//! before it takes any message, naming what is wrong.

use super::{ModelClient, ModelConfig, ModelError};
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
/// Secrets Manager runs while the HTTP client is built (TLS roots loaded), so cold start waits
/// for the longer of the two, not their sum; a missing or unreadable secret still fails here,
/// before the first message.
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
