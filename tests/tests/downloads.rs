//! Downloads that download (issue 27): a result link makes a browser save a file with a name
//! a person recognises, also cross-origin where `<a download>` is ignored, and the job links
//! the photo it started from, so a before/after compare survives a reload or another device.

use atelier_model_server::samples;
use atelier_tests::{Harness, StandIn, sqs_event};
use serde_json::json;

/// `Content-Disposition` and `Content-Type` of a presigned link's answer, and its bytes.
async fn fetch(url: &str) -> (String, String, Vec<u8>) {
    let res = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("download: {e}"));
    assert_eq!(res.status(), 200, "download of {url}");
    let header = |name: &str| {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (disposition, content_type) = (header("content-disposition"), header("content-type"));
    let bytes = res.bytes().await.unwrap_or_default().to_vec();
    (disposition, content_type, bytes)
}

#[tokio::test]
async fn both_result_formats_download_as_named_attachments_and_the_original_is_linked() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let photo = samples::single_pet();
    let id = h
        .submit_photo(
            &user,
            "k",
            photo.clone(),
            json!({ "style": "embroidery", "target": "pet" }),
        )
        .await;
    let response = atelier_consumer::handle(&h.processor(&model), sqs_event(&id)).await;
    assert!(response.batch_item_failures.is_empty());

    let short: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    for (format, extension, content_type, magic) in [
        ("jpeg", "jpg", "image/jpeg", &[0xFF, 0xD8][..]),
        ("png", "png", "image/png", &[0x89, b'P', b'N', b'G'][..]),
    ] {
        let job = h.job_in(&user, &id, format).await;
        let url = job.body["result"]["url"].as_str().unwrap_or_default();
        let (disposition, served_as, bytes) = fetch(url).await;
        assert_eq!(
            disposition,
            format!("attachment; filename=\"atelier-embroidery-pet-{short}.{extension}\""),
            "{format}"
        );
        assert_eq!(served_as, content_type, "{format}");
        assert!(bytes.starts_with(magic), "{format}: not a {content_type}");
    }

    let job = h.job(&user, &id).await;
    let original = job.body["result"]["original_url"]
        .as_str()
        .unwrap_or_default();
    let (disposition, _, bytes) = fetch(original).await;
    assert_eq!(
        bytes, photo,
        "the before is the photo the edit was made from"
    );
    assert!(disposition.is_empty(), "the before is shown, not saved");
}
