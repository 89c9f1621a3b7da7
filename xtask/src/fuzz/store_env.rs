//! The App Store and Google Play settings of the fuzzed stack: purchases on, every one the
//! fuzzer makes up refused.

/// App Store purchases are on in the fuzzed stack, trusting a root whose key was never kept:
/// every JWS the fuzzer makes up is refused (`400`), none is `503 PAYMENTS_NOT_CONFIGURED`.
const FUZZ_APPLE_ROOT: &str = include_str!("../../../tests/official-app-store/fuzz-root.pem");

/// The App Store settings of the fuzzed stack.
pub(super) fn fuzz_apple_env() -> [(String, String); 3] {
    [
        ("ATELIER_APPLE_ROOT_CERTS".into(), FUZZ_APPLE_ROOT.into()),
        (
            "ATELIER_APPLE_BUNDLE_ID".into(),
            "com.example.atelier".into(),
        ),
        ("ATELIER_APPLE_ENVIRONMENT".into(), "Sandbox".into()),
    ]
}

/// Google Play purchases are on in the fuzzed stack too, with a test key and every Google URL
/// a closed local port: no pack is sold in Google Play, so every purchase the fuzzer makes up
/// is refused before Google is asked (`422`), and no push carries Pub/Sub's token (`401`).
pub(super) fn fuzz_google_env() -> [(String, String); 7] {
    let key = serde_json::json!({
        "client_email": "fuzz@atelier-fuzz.iam.gserviceaccount.com",
        "private_key": include_str!("../../../tests/fixtures/google/play-service-account.pem"),
    });
    let nowhere = "http://127.0.0.1:9";
    [
        (
            "ATELIER_GOOGLE_PLAY_PACKAGE_NAME".into(),
            "com.example.atelier".into(),
        ),
        ("ATELIER_GOOGLE_PLAY_KEY".into(), key.to_string()),
        (
            "ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE".into(),
            "atelier-fuzz".into(),
        ),
        (
            "ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT".into(),
            "push@atelier-fuzz.iam.gserviceaccount.com".into(),
        ),
        ("ATELIER_GOOGLE_PLAY_PUBLISHER_URL".into(), nowhere.into()),
        (
            "ATELIER_GOOGLE_PLAY_TOKEN_URL".into(),
            format!("{nowhere}/token"),
        ),
        (
            "ATELIER_GOOGLE_CERTS_URL".into(),
            format!("{nowhere}/certs"),
        ),
    ]
}
