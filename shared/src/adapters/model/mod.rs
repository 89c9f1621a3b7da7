//! The model client: the OpenAI image-edit and chat-completions API over HTTPS, which many
//! providers offer. The stand-in model server speaks the same wire, so tests exercise this
//! very client with another base URL (not a second implementation, so no trait).
//!
//! Money rules this module keeps:
//! - **No automatic retry.** Every method sends exactly one request. reqwest 0.13 would by
//!   default retry protocol-level refusals; the client is built with `retry::never()`. (The
//!   connection pool may still resend a request that provably never left on a connection the
//!   server had already closed; that cannot reach the model twice.)
//! - **Timeouts on every call**, shorter for the vision calls than for the edit.
//! - **The provider's usage is returned typed** ([`Usage`]), or `None` when the provider sent
//!   none ("unknown cost": the caller keeps its reservation booked). A malformed answer that
//!   came with usage still reports it ([`ModelError::usage`]), since the call was paid.
//! - **Every request carries `X-Client-Request-Id: <job id>`**, which the provider logs and
//!   the stand-in server counts calls by.

pub mod call;
pub mod catalogue;
pub mod client;
pub mod cost;
pub mod error;
pub mod gemini;
pub mod setup;
pub mod vision;
mod wire;

pub use crate::domain::prompts::{EditPrompt, ImageRole, VisionPrompt};
pub use call::{
    CLIENT_REQUEST_ID_HEADER, CallKind, DEFINITE_ERRORS, EditCall, EditReply, EditSize, ImageInput,
    MODEL_NOT_FOUND_CODES, ModelConfig, Quality, Usage, VisionReply,
};
pub use client::ModelClient;
pub use error::{Billing, Malformed, ModelError};
pub use vision::{Candidate, Comparison, Outcome, Readiness, Review, TargetBox, Verdict};

#[cfg(test)]
mod tests {
    use super::error::http_error;
    use super::wire::{chat_usage, image_usage};
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_follow_the_aspect() {
        assert_eq!(EditSize::for_dimensions(4032, 3024), EditSize::Landscape);
        assert_eq!(EditSize::for_dimensions(3024, 4032), EditSize::Portrait);
        assert_eq!(EditSize::for_dimensions(1000, 1100), EditSize::Square);
    }

    #[test]
    fn only_a_no_such_model_answer_is_an_outage_of_the_model() {
        let http = |status, code: Option<&str>| ModelError::Http {
            call: CallKind::Edit,
            status,
            code: code.map(str::to_owned),
            message: None,
        };
        let cases = [
            (
                "404 model_not_found",
                http(404, Some("model_not_found")),
                true,
            ),
            (
                "400 model_not_found",
                http(400, Some("model_not_found")),
                true,
            ),
            ("400 invalid_model", http(400, Some("invalid_model")), true),
            ("404 without a code", http(404, None), false),
            (
                "429 rate limit",
                http(429, Some("rate_limit_exceeded")),
                false,
            ),
            (
                "500 with the code",
                http(500, Some("model_not_found")),
                false,
            ),
        ];
        for (why, error, outage) in cases {
            assert_eq!(error.is_model_unavailable(), outage, "{why}");
            assert_eq!(error.code() == "model_unavailable", outage, "{why}");
        }
        // Refused before processing: free, as any 4xx.
        assert_eq!(
            http(404, Some("model_not_found")).billing(),
            Billing::NotBilled
        );
    }

    #[test]
    fn only_the_providers_own_error_for_overload_rate_limit_or_no_model_is_definite() {
        let html_502 =
            "<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>";
        let cases: [(&str, u16, &str, bool); 14] = [
            (
                "OpenAI 503 overloaded",
                503,
                r#"{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}"#,
                true,
            ),
            (
                "OpenAI 429 rate limit",
                429,
                r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
                true,
            ),
            (
                "OpenAI 429 quota",
                429,
                r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#,
                true,
            ),
            (
                "OpenAI 404 no such model",
                404,
                r#"{"error":{"type":"invalid_request_error","code":"model_not_found"}}"#,
                true,
            ),
            (
                "Gemini 503",
                503,
                r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
                true,
            ),
            (
                "Gemini 429",
                429,
                r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#,
                true,
            ),
            (
                "Gemini 404",
                404,
                r#"{"error":{"code":404,"status":"NOT_FOUND"}}"#,
                true,
            ),
            (
                "OpenAI 500 server error",
                500,
                r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#,
                false,
            ),
            (
                "Gemini 500",
                500,
                r#"{"error":{"code":500,"status":"INTERNAL"}}"#,
                false,
            ),
            ("a CDN's HTML 502", 502, html_502, false),
            ("a CDN's 524", 524, "<html>A timeout occurred</html>", false),
            ("an empty 500", 500, "", false),
            (
                "a 503 without the provider's body",
                503,
                "Service Unavailable",
                false,
            ),
            (
                "Gemini's status on the wrong HTTP status",
                502,
                r#"{"error":{"code":502,"status":"UNAVAILABLE"}}"#,
                false,
            ),
        ];
        for (why, status, body, definite) in cases {
            let error = http_error(CallKind::Edit, status, body.as_bytes());
            assert_eq!(error.is_definite(), definite, "{why}: {error:?}");
            let billing = if definite || status < 500 {
                Billing::NotBilled
            } else {
                Billing::MayHaveBilled
            };
            assert_eq!(error.billing(), billing, "{why}");
        }
    }

    #[test]
    fn the_key_is_never_in_debug_output() {
        let mut config = ModelConfig::new("http://127.0.0.1:1");
        config.api_key = Some("sk-secret".to_owned());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn usage_is_read_from_both_shapes() {
        let image = json!({"usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
            "input_tokens_details": {"text_tokens": 4, "image_tokens": 6}}});
        assert_eq!(
            image_usage(&image),
            Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(20),
                total_tokens: Some(30),
                input_text_tokens: Some(4),
                input_image_tokens: Some(6),
            })
        );
        let chat =
            json!({"usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}});
        assert_eq!(chat_usage(&chat).and_then(|u| u.output_tokens), Some(3));
        assert_eq!(chat_usage(&json!({"choices": []})), None);
    }
}
