//! Provider-style content credentials on the stand-in's edit output (fault
//! `content_credentials`): a C2PA manifest saying the image was created by a trained model,
//! signed with the same SDK (`c2pa`) under a CA made for this process, as OpenAI signs every
//! image its API returns. The consumer must keep it as an ingredient of its own result; the
//! CA is served at `GET /_stand-in/content-credentials-anchor` for a verifier to trust.

use std::io::Cursor;
use std::sync::OnceLock;

use atelier_shared::adapters::credentials::test_ca;
use c2pa::{Builder, Context, SigningAlg};
use serde_json::json;

/// The provider's key: made once per process.
struct Provider {
    signer: c2pa::BoxedSigner,
    anchor_pem: String,
}

fn provider() -> Result<&'static Provider, String> {
    static PROVIDER: OnceLock<Result<Provider, String>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            let ca = test_ca::generate("Stand-in provider").map_err(|e| e.to_string())?;
            let secret: serde_json::Value =
                serde_json::from_str(&ca.secret_json).map_err(|e| e.to_string())?;
            let pem = |k: &str| secret[k].as_str().unwrap_or_default().as_bytes().to_vec();
            let signer = c2pa::create_signer::from_keys(
                &pem("certificate_chain"),
                &pem("private_key"),
                SigningAlg::Es256,
                None,
            )
            .map_err(|e| e.to_string())?;
            Ok(Provider {
                signer,
                anchor_pem: ca.anchor_pem,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The provider's CA, PEM.
pub fn anchor_pem() -> Result<String, String> {
    provider().map(|p| p.anchor_pem.clone())
}

/// `png` with a provider-style manifest signed in.
pub fn signed(png: &[u8]) -> Result<Vec<u8>, String> {
    let provider = provider()?;
    let definition = json!({
        "title": "image.png",
        "claim_generator_info": [{"name": "Stand-in image model", "version": "1"}],
    });
    let mut builder = Builder::from_context(Context::new())
        .with_definition(definition.to_string())
        .map_err(|e| e.to_string())?;
    builder
        .add_action(json!({
            "action": "c2pa.created",
            "digitalSourceType": "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia",
            "softwareAgent": {"name": "Stand-in image model"},
        }))
        .map_err(|e| e.to_string())?;
    let mut out = Cursor::new(Vec::new());
    builder
        .sign(
            provider.signer.as_ref(),
            "image/png",
            &mut Cursor::new(png),
            &mut out,
        )
        .map_err(|e| e.to_string())?;
    Ok(out.into_inner())
}
