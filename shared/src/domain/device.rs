//! A phone registered for push: its id (the app's own, stable per install), its platform and
//! the push service's token. Each is checked here, at the edge, so a value that exists fits
//! the key it becomes and the URL it is put into.

use serde::{Deserialize, Serialize};

use super::validation::{FieldCode, FieldErrors};

/// At most this many devices per user: a new one beyond it is refused (`DEVICE_LIMIT_REACHED`),
/// never silently replacing another.
pub const MAX_DEVICES: u32 = 5;
/// The longest device id (the app picks it, e.g. a UUID).
pub const MAX_DEVICE_ID_LEN: usize = 64;
/// The longest push token: APNs tokens are 64 hex characters today (Apple allows for longer),
/// FCM registration tokens about 160; 4096 leaves room without admitting a large body.
pub const MAX_TOKEN_LEN: usize = 4096;
/// The shortest APNs token (32 bytes, hex).
const MIN_APNS_TOKEN_LEN: usize = 64;

/// A device id: 1..=64 of `A-Z a-z 0-9 - _`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeviceId(String);

impl DeviceId {
    pub fn parse(raw: &str) -> Option<DeviceId> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_DEVICE_ID_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        ok.then(|| DeviceId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which push service reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// APNs.
    Ios,
    /// FCM.
    Android,
}

impl Platform {
    pub fn parse(raw: &str) -> Option<Platform> {
        match raw {
            "ios" => Some(Platform::Ios),
            "android" => Some(Platform::Android),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
        }
    }
}

/// A push token: for iOS 64..=4096 hex characters (APNs puts it in the path); for Android
/// 1..=4096 of `A-Z a-z 0-9 - _ : .` (FCM's registration tokens).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PushToken(String);

impl PushToken {
    pub fn parse(platform: Platform, raw: &str) -> Option<PushToken> {
        let charset = |b: u8| match platform {
            Platform::Ios => b.is_ascii_hexdigit(),
            Platform::Android => {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.')
            }
        };
        let min = match platform {
            Platform::Ios => MIN_APNS_TOKEN_LEN,
            Platform::Android => 1,
        };
        let ok = (min..=MAX_TOKEN_LEN).contains(&raw.len()) && raw.bytes().all(charset);
        ok.then(|| PushToken(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A registration as the app sends it, checked: platform and token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub platform: Platform,
    pub token: PushToken,
}

impl Registration {
    /// Both fields checked; every problem reported at once.
    pub fn parse(platform: Option<&str>, token: Option<&str>) -> Result<Registration, FieldErrors> {
        let mut errors = FieldErrors::default();
        let platform = match platform.map(Platform::parse) {
            None => {
                errors.push("platform", FieldCode::Required, "ios or android");
                None
            }
            Some(None) => {
                errors.push("platform", FieldCode::Invalid, "must be ios or android");
                None
            }
            Some(p) => p,
        };
        let token = match (platform, token) {
            (_, None) => {
                errors.push(
                    "token",
                    FieldCode::Required,
                    "the push service's device token",
                );
                None
            }
            (Some(p), Some(t)) => {
                let parsed = PushToken::parse(p, t);
                if parsed.is_none() {
                    errors.push("token", FieldCode::Invalid, token_rule(p));
                }
                parsed
            }
            (None, Some(_)) => None,
        };
        match (platform, token) {
            (Some(platform), Some(token)) => errors.finish(Registration { platform, token }),
            _ => Err(errors),
        }
    }
}

fn token_rule(p: Platform) -> String {
    match p {
        Platform::Ios => {
            format!("an APNs token: {MIN_APNS_TOKEN_LEN} to {MAX_TOKEN_LEN} hex characters")
        }
        Platform::Android => {
            format!("an FCM token: 1 to {MAX_TOKEN_LEN} characters of A-Z a-z 0-9 - _ : .")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_id_is_short_and_plain() {
        assert!(DeviceId::parse("3f2a-11_AB").is_some());
        assert!(DeviceId::parse("").is_none());
        assert!(DeviceId::parse(&"a".repeat(65)).is_none());
        assert!(DeviceId::parse("a/b").is_none());
        assert!(DeviceId::parse("a#b").is_none());
    }

    #[test]
    fn an_apns_token_is_hex_and_an_fcm_token_has_its_own_charset() {
        let apns = "ab".repeat(32);
        assert!(PushToken::parse(Platform::Ios, &apns).is_some());
        assert!(PushToken::parse(Platform::Ios, "abc").is_none());
        assert!(PushToken::parse(Platform::Ios, &format!("{apns}/x")).is_none());
        assert!(PushToken::parse(Platform::Android, "fcm:APA91b_x-y.z").is_some());
        assert!(PushToken::parse(Platform::Android, "a b").is_none());
        assert!(PushToken::parse(Platform::Android, &"a".repeat(4097)).is_none());
    }

    #[test]
    fn a_registration_reports_every_problem() {
        let e = Registration::parse(Some("windows"), None).unwrap_err();
        let fields: Vec<_> = e.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["platform", "token"]);
        assert!(Registration::parse(Some("android"), Some("tok")).is_ok());
    }
}
