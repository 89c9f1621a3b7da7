//! Building the model client at cold start: settings from configuration, the provider key
//! read once from Secrets Manager when one is configured. A failure here stops the function
//! before it takes any message, naming what is wrong.

use super::{ModelClient, ModelConfig, ModelError};
use crate::aws::Clients;
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
}

/// The client as the consumer Lambda builds it, from the environment.
pub async fn client_from_env(clients: &Clients) -> Result<ModelClient, SetupError> {
    let settings = ModelSettings::from_env()?;
    let mut config = ModelConfig::new(settings.base_url.clone());
    config.api_key = match &settings.api_key_secret_id {
        Some(id) => {
            let out = clients
                .secrets
                .get_secret_value()
                .secret_id(id)
                .send()
                .await
                .map_err(|e| SetupError::Secret {
                    secret_id: id.clone(),
                    source: Box::new(e),
                })?;
            out.secret_string().map(str::to_owned)
        }
        None => settings.api_key.clone(),
    };
    if let Some(m) = &settings.vision_model {
        config.vision_model = m.clone();
    }
    if let Some(m) = &settings.image_model {
        config.image_model = m.clone();
    }
    tracing::info!(base_url = %config.base_url, keyed = config.api_key.is_some(), "model_configured");
    ModelClient::new(config).map_err(SetupError::Model)
}
