//! Push-notification devices of a user.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `PUT /v1/devices/{id}` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceRequest {
    /// `ios` (APNs) or `android` (FCM).
    #[schema(value_type = String, required = true, example = "ios")]
    pub platform: Option<String>,
    /// The push service's token for this install: APNs, 64-4096 hex characters; FCM, 1-4096
    /// of `A-Z a-z 0-9 - _ : .`.
    #[schema(value_type = String, required = true)]
    pub token: Option<String>,
}

/// A registered device (its token is never shown back).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceView {
    pub id: String,
    /// `ios` or `android`.
    pub platform: String,
}

/// `GET /v1/devices`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    pub items: Vec<DeviceView>,
    /// How many devices a user may register.
    pub limit: u32,
}
