//! SDK clients, built once per process from the standard AWS configuration chain (which
//! honours `AWS_ENDPOINT_URL`, so the same code talks to ministack and to AWS).

use aws_config::{BehaviorVersion, SdkConfig};

/// The three clients every function uses.
#[derive(Clone, Debug)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    /// Only the consumer reads a secret (the provider key, once at cold start).
    pub secrets: aws_sdk_secretsmanager::Client,
}

impl Clients {
    /// Loads the shared configuration from the environment.
    pub async fn from_env() -> Clients {
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Clients::new(&sdk)
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
