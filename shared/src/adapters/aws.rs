//! SDK clients, built once per process from the standard AWS configuration chain (which
//! honours `AWS_ENDPOINT_URL`, so the same code talks to ministack and to AWS).

use aws_config::{BehaviorVersion, SdkConfig};

use crate::adapters::tls::{self, RootsError};

/// The standard configuration chain with the process's one trust store for HTTPS
/// (`adapters::tls`): the SDK then reads no CA store of its own.
pub async fn sdk_config() -> Result<SdkConfig, RootsError> {
    Ok(aws_config::defaults(BehaviorVersion::latest())
        .http_client(tls::sdk_http_client()?)
        .load()
        .await)
}

/// The three clients every function uses.
#[derive(Clone, Debug)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    /// Secrets, read once at cold start: the consumer's provider key, the API's Stripe keys
    /// and address key.
    pub secrets: aws_sdk_secretsmanager::Client,
}

impl Clients {
    /// Loads the shared configuration from the environment.
    pub async fn from_env() -> Result<Clients, RootsError> {
        Ok(Clients::new(&sdk_config().await?))
    }

    /// The string value of a Secrets Manager secret (`None`: it has a binary value only);
    /// read once at a cold start.
    pub async fn secret_string(
        &self,
        id: &str,
    ) -> Result<Option<String>, Box<dyn std::error::Error + Send + Sync>> {
        let out = self.secrets.get_secret_value().secret_id(id).send().await?;
        Ok(out.secret_string().map(str::to_owned))
    }

    pub fn new(sdk: &SdkConfig) -> Clients {
        // Path-style addressing works with S3 and with local endpoints alike.
        let s3_config = aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(true)
            .build();
        Clients {
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            s3: aws_sdk_s3::Client::from_conf(s3_config),
            secrets: aws_sdk_secretsmanager::Client::new(sdk),
        }
    }
}

/// The Lambda function's name, set by the Lambda runtime (not our configuration); `None`
/// outside Lambda. Read once.
pub fn lambda_function_name() -> Option<&'static str> {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::env::var("AWS_LAMBDA_FUNCTION_NAME")
            .ok()
            .filter(|v| !v.is_empty())
    })
    .as_deref()
}
