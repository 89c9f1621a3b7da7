//! lambda_runtime's hello world: echo the event. What a Rust function's cold start costs
//! before any of our own work (configuration, telemetry, the SDK's clients, the secret read).

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
