//! Content credentials in the tests: one signing CA per test process (as the local stack and
//! the local cloud make one per run), and the official C2PA library's reading of a result
//! (`c2pa-python`, pinned in `tests/official-c2pa/requirements.txt`, installed by
//! `cargo xtask test`). Our own code never judges its own manifests.

use std::sync::{Arc, OnceLock};

use atelier_shared::adapters::credentials::{Signing, test_ca};
use serde_json::Value;

struct Ca {
    signing: Arc<Signing>,
    anchor_pem: String,
}

fn ca() -> &'static Ca {
    static CA: OnceLock<Ca> = OnceLock::new();
    CA.get_or_init(|| {
        let ca = test_ca::generate("Atelier (tests)").unwrap_or_else(|e| panic!("test CA: {e}"));
        let signing = Signing::from_json(&ca.secret_json).unwrap_or_else(|e| panic!("{e}"));
        Ca {
            signing: Arc::new(signing),
            anchor_pem: ca.anchor_pem,
        }
    })
}

/// The signer every test processor uses.
pub fn signing() -> Arc<Signing> {
    ca().signing.clone()
}

/// The tests' deployment trust anchor: the CA that issued [`signing`]'s certificate.
pub fn anchor_pem() -> &'static str {
    &ca().anchor_pem
}

/// What the official library reads in each image (`format`: `image/png` or `image/jpeg`),
/// trusting `anchors` (PEM) only: `{"state": "Trusted" | "Valid" | "Invalid", "failures",
/// "actions", "ingredients", "issuer", "manifest"}`, or `{"error": …}` when it cannot read one.
pub async fn official_read(images: &[(&[u8], &str)], anchors: &str) -> Vec<Value> {
    let python = std::env::var("ATELIER_C2PA_PYTHON")
        .unwrap_or_else(|_| panic!("ATELIER_C2PA_PYTHON is unset: run with `cargo xtask test`"));
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("atelier-c2pa-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let mut input = String::new();
    for (i, (bytes, format)) in images.iter().enumerate() {
        let path = dir.join(format!("image-{i}"));
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        let case = serde_json::json!({"path": path, "format": format, "anchors": anchors});
        input.push_str(&case.to_string());
        input.push('\n');
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-c2pa/read.py");
    let verdicts = crate::receiver::json_lines(python, script, &input).await;
    let _ = std::fs::remove_dir_all(&dir);
    // One verdict an image, or a loop over the verdicts would pass on none.
    assert_eq!(verdicts.len(), images.len(), "{verdicts:?}");
    verdicts
}

/// Asserts what every delivered result's credentials must say (docs/api.md, "Content
/// credentials"), read by the official library: trusted under the deployment's anchor, the
/// photo opened as parent, edited by `model` with IPTC's composite source type, and nothing
/// of the user's (no thumbnail of any ingredient).
pub fn assert_result_credentials(verdict: &Value, model: &str, medium: &str) {
    assert_eq!(verdict["state"], "Trusted", "{verdict:#}");
    assert_eq!(verdict["failures"], serde_json::json!([]), "{verdict:#}");
    let actions = verdict["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("{verdict:#}"));
    assert_eq!(actions[0]["action"], "c2pa.opened", "{verdict:#}");
    let edited = actions
        .iter()
        .find(|a| a["action"] == "c2pa.edited")
        .unwrap_or_else(|| panic!("no c2pa.edited: {verdict:#}"));
    assert_eq!(
        edited["digitalSourceType"],
        "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
    );
    assert_eq!(edited["softwareAgent"]["name"], model, "{edited:#}");
    assert_eq!(
        edited["parameters"]["com.atelier.medium"], medium,
        "{edited:#}"
    );
    let ingredients = verdict["ingredients"]
        .as_array()
        .unwrap_or_else(|| panic!("{verdict:#}"));
    assert!(
        ingredients.iter().any(|i| i["relationship"] == "parentOf"),
        "no parent: {verdict:#}"
    );
    assert!(
        ingredients.iter().all(|i| i["thumbnail"] == false),
        "an ingredient carries a thumbnail: {verdict:#}"
    );
}
