//! Content credentials: a C2PA manifest signed into every delivered image (the PNG master and
//! the JPEG download), with the Content Authenticity Initiative's SDK and the deployment's own
//! key (docs/design.md, "Results say what made them"). What the manifest says is decided in
//! `domain::credentials`; this module writes it.
//!
//! The manifest: a `c2pa.opened` action on the parent ingredient (the user's photo by its
//! hash only — no pixels, no thumbnail, no metadata of it; for a repair, the version it
//! repaired, with that version's own manifest), then `c2pa.edited` with the IPTC digital
//! source type `compositeWithTrainedAlgorithmicMedia`, the model as software agent, the medium
//! and target as parameters and the redrawn box as the changed region. When the provider's
//! output carried its own manifest, that output is a `componentOf` ingredient, so the chain
//! back to the model is kept.

use std::io::Cursor;
use std::sync::Arc;

use c2pa::{BoxedSigner, Builder, Context, Ingredient, Reader, Relationship, SigningAlg};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::adapters::aws::Clients;
use crate::config::{SigningSettings, env};
use crate::domain::credentials::{
    ACTION_EDITED, ACTION_OPENED, ContentCredentials, DIGITAL_SOURCE_TYPE, PARAM_MEDIUM,
    PARAM_PHOTO_SHA256, PARAM_PROVIDER, PARAM_TARGET,
};
use crate::domain::{AreaBox, ResultFormat};

/// The signing key's secret, as CDK and Terraform document it.
#[derive(Deserialize)]
struct SigningSecret {
    /// PEM, the signing certificate first, then its intermediates.
    certificate_chain: String,
    /// PKCS #8 PEM of a P-256 key (ES256).
    private_key: String,
}

/// Why signing could not be set up or a manifest not made.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("the signing key's JSON is not {{certificate_chain, private_key}}")]
    Secret(#[source] serde_json::Error),
    #[error("the signing key or certificate chain is unusable")]
    Key(#[source] Box<c2pa::Error>),
    #[error("the signing certificate cannot be read")]
    Certificate(String),
    #[error("the C2PA settings")]
    Settings(#[source] Box<c2pa::Error>),
    #[error("making the manifest")]
    Manifest(#[source] Box<c2pa::Error>),
    #[error("signing the {0} image")]
    Sign(&'static str, #[source] Box<c2pa::Error>),
}

/// The deployment's signer, built once at cold start.
pub struct Signing {
    signer: BoxedSigner,
    issuer: String,
    context: Arc<Context>,
}

impl std::fmt::Debug for Signing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signing")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// What a result's manifest is made from, beyond what the job records.
pub struct Claim<'a> {
    pub credentials: &'a ContentCredentials,
    /// The redrawn box, in thousandths of the width and height, when one was measured.
    pub region: Option<AreaBox>,
    pub parent: Parent<'a>,
    /// The provider's image as it answered (its manifest, if any, is kept).
    pub provider_output: &'a [u8],
}

/// The signed master and rendition.
pub struct Signed {
    pub png: Vec<u8>,
    pub jpeg: Vec<u8>,
    /// The provider's own manifest is kept as an ingredient.
    pub provider_manifest: bool,
}

/// What the result was made from.
#[derive(Clone, Copy)]
pub enum Parent<'a> {
    /// The user's photo, by the SHA-256 of its bytes only.
    Photo { sha256: [u8; 32] },
    /// A repair: the delivered version it started from (our PNG, with its manifest).
    Version { png: &'a [u8] },
}

impl Signing {
    /// From the secret's JSON (`{"certificate_chain": …, "private_key": …}`).
    pub fn from_json(json: &str) -> Result<Signing, CredentialsError> {
        let secret: SigningSecret = serde_json::from_str(json).map_err(CredentialsError::Secret)?;
        Signing::from_pem(&secret.certificate_chain, &secret.private_key)
    }

    pub fn from_pem(chain: &str, key: &str) -> Result<Signing, CredentialsError> {
        let signer = c2pa::create_signer::from_keys(
            chain.as_bytes(),
            key.as_bytes(),
            SigningAlg::Es256,
            None,
        )
        .map_err(|e| CredentialsError::Key(Box::new(e)))?;
        // Reading a provider's manifest never fetches anything: no remote manifest, no OCSP.
        let settings = c2pa::Settings::new()
            .with_json(r#"{"verify": {"remote_manifest_fetch": false, "ocsp_fetch": false}}"#)
            .map_err(|e| CredentialsError::Settings(Box::new(e)))?;
        let context = Context::new()
            .with_settings(settings)
            .map_err(|e| CredentialsError::Settings(Box::new(e)))?
            .into_shared();
        Ok(Signing {
            signer,
            issuer: issuer_of(chain)?,
            context,
        })
    }

    /// Who vouches for the claims: the signing certificate's organisation (else its name).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The master and the rendition, each with the same manifest signed in.
    pub fn sign_both(
        &self,
        claim: &Claim<'_>,
        png: &[u8],
        jpeg: &[u8],
    ) -> Result<Signed, CredentialsError> {
        let (mut builder, provider_manifest) = self.builder(claim)?;
        Ok(Signed {
            png: self.sign(&mut builder, ResultFormat::Png, png)?,
            jpeg: self.sign(&mut builder, ResultFormat::Jpeg, jpeg)?,
            provider_manifest,
        })
    }

    fn sign(
        &self,
        builder: &mut Builder,
        format: ResultFormat,
        image: &[u8],
    ) -> Result<Vec<u8>, CredentialsError> {
        let mime = format.content_type();
        let mut out = Cursor::new(Vec::with_capacity(image.len() + 64 * 1024));
        let mut source = Cursor::new(image);
        builder
            .sign(self.signer.as_ref(), mime, &mut source, &mut out)
            .map_err(|e| CredentialsError::Sign(format.extension(), Box::new(e)))?;
        Ok(out.into_inner())
    }

    /// The manifest's builder, and whether the provider's manifest is in it as an ingredient.
    fn builder(&self, claim: &Claim<'_>) -> Result<(Builder, bool), CredentialsError> {
        let definition = json!({
            "title": "Atelier result",
            "claim_generator_info": [{"name": "Atelier", "version": env!("CARGO_PKG_VERSION")}],
        });
        let mut builder = Builder::from_shared_context(&self.context)
            .with_definition(definition.to_string())
            .map_err(|e| CredentialsError::Manifest(Box::new(e)))?;
        add_parent(&mut builder, claim.parent)?;
        let kept = self.add_provider_output(&mut builder, claim.provider_output);
        let opened = opened_action(claim.parent);
        builder
            .add_action(opened)
            .map_err(|e| CredentialsError::Manifest(Box::new(e)))?;
        let output: &[&str] = if kept { &["model_output"] } else { &[] };
        builder
            .add_action(edited_action(claim, output))
            .map_err(|e| CredentialsError::Manifest(Box::new(e)))?;
        Ok((builder, kept))
    }

    /// The provider's output as a `componentOf` ingredient when it carries a manifest (read,
    /// not trusted: its validation is recorded with the ingredient). One the SDK cannot take
    /// is left out, logged: a provider's broken manifest never fails a job whose edit is paid.
    fn add_provider_output(&self, builder: &mut Builder, output: &[u8]) -> bool {
        let Some(mime) = sniff(output) else {
            return false;
        };
        let carries = Reader::from_shared_context(&self.context)
            .with_stream(mime, Cursor::new(output))
            .is_ok();
        if !carries {
            return false;
        }
        let ingredient = json!({"title": "The model's output", "relationship": "componentOf", "label": "model_output"});
        let mut stream = Cursor::new(output);
        match builder.add_ingredient_from_stream(ingredient.to_string(), mime, &mut stream) {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "provider_manifest_unreadable");
                false
            }
        }
    }
}

/// `c2pa.opened` on the parent; for a photo, its SHA-256 (the only trace of it in the manifest).
fn opened_action(parent: Parent<'_>) -> Value {
    let mut action = json!({"action": ACTION_OPENED, "parameters": {"ingredientIds": ["parent"]}});
    if let Parent::Photo { sha256 } = parent {
        action["parameters"][PARAM_PHOTO_SHA256] = json!(hex::encode(sha256));
    }
    action
}

/// The parent ingredient: the photo by its hash only, or the version a repair started from.
fn add_parent(builder: &mut Builder, parent: Parent<'_>) -> Result<(), CredentialsError> {
    match parent {
        Parent::Photo { .. } => {
            let mut photo = Ingredient::new_v2("The photo edited", "application/octet-stream");
            // The SDK's v3 ingredient keeps no hash of an asset it did not read: the photo's
            // SHA-256 is a parameter of the `c2pa.opened` action instead (`opened_action`).
            photo
                .set_relationship(Relationship::ParentOf)
                .set_label("parent");
            builder.add_ingredient(photo);
        }
        Parent::Version { png } => {
            let ingredient = json!({"title": "The version repaired", "relationship": "parentOf", "label": "parent"});
            builder
                .add_ingredient_from_stream(
                    ingredient.to_string(),
                    "image/png",
                    &mut Cursor::new(png),
                )
                .map_err(|e| CredentialsError::Manifest(Box::new(e)))?;
        }
    }
    Ok(())
}

/// The `c2pa.edited` action: what changed, by which model, where.
fn edited_action(claim: &Claim<'_>, ingredients: &[&str]) -> Value {
    let c = claim.credentials;
    let mut action = json!({
        "action": ACTION_EDITED,
        "when": c.signed_at,
        "digitalSourceType": DIGITAL_SOURCE_TYPE,
        "softwareAgent": {"name": c.model},
        "description": c.action_description(),
        "parameters": {
            PARAM_MEDIUM: c.medium,
            PARAM_TARGET: c.target.as_str(),
            PARAM_PROVIDER: c.provider,
        },
    });
    if !ingredients.is_empty() {
        action["parameters"]["ingredientIds"] = json!(ingredients);
    }
    if let Some(b) = claim.region {
        // Thousandths to the spec's percent: the box the readiness check found.
        let pct = |v: u16| f64::from(v) / 10.0;
        action["changes"] = json!([{
            "description": format!("the {} redrawn", c.target.as_str()),
            "region": [{"type": "spatial", "shape": {
                "type": "rectangle", "unit": "percent",
                "origin": {"x": pct(b.x0), "y": pct(b.y0)},
                "width": pct(b.x1.saturating_sub(b.x0)),
                "height": pct(b.y1.saturating_sub(b.y0)),
            }}],
        }]);
    }
    action
}

/// The media type of an image the SDK can read a manifest from, by its first bytes.
fn sniff(image: &[u8]) -> Option<&'static str> {
    match image {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// The signing certificate's organisation, else its common name.
fn issuer_of(chain: &str) -> Result<String, CredentialsError> {
    let bad = |e: String| CredentialsError::Certificate(e);
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(chain.as_bytes()).map_err(|e| bad(e.to_string()))?;
    let cert = pem.parse_x509().map_err(|e| bad(e.to_string()))?;
    let subject = cert.subject();
    let name = subject
        .iter_organization()
        .chain(subject.iter_common_name())
        .find_map(|a| a.as_str().ok().map(str::to_owned));
    name.ok_or_else(|| bad("the signing certificate names no organisation".into()))
}

/// Why the consumer could not get its signer at cold start: it then takes no message, since
/// a result it delivered would say nothing of what made it.
#[derive(Debug, thiserror::Error)]
pub enum SigningSetupError {
    #[error(
        "no signing key: set {} (or {} for local runs)",
        env::SIGNING_SECRET_ID,
        env::SIGNING_CREDENTIALS
    )]
    Unset,
    #[error("reading the signing key from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("the signing key")]
    Key(#[from] CredentialsError),
}

/// The signer as the consumer builds it at cold start: the secret's value when a secret is
/// configured, else the key's JSON itself (local runs and tests).
pub async fn from_env(clients: &Clients) -> Result<Signing, SigningSetupError> {
    let settings = SigningSettings::from_env();
    let json = match (settings.secret_id, settings.credentials) {
        (Some(id), _) => clients
            .secret_string(&id)
            .await
            .map_err(|source| SigningSetupError::Secret {
                secret_id: id.clone(),
                source,
            })?
            .ok_or(SigningSetupError::Unset)?,
        (None, Some(json)) => json,
        (None, None) => return Err(SigningSetupError::Unset),
    };
    let signing = Signing::from_json(&json)?;
    tracing::info!(issuer = signing.issuer(), "signing_configured");
    Ok(signing)
}

/// A signing CA made per run, and a signing certificate it issued, as a deployment's would be
/// (an ES256 end-entity certificate for document signing under a CA): for the tests, the local
/// stack and the stand-in model's provider-style manifests.
#[cfg(feature = "test-ca")]
pub mod test_ca {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256,
    };

    /// The CA's certificate (the verifier's trust anchor) and the signing key's secret JSON.
    pub struct TestCa {
        pub anchor_pem: String,
        pub secret_json: String,
    }

    /// A CA named `organisation` and its signing certificate.
    pub fn generate(organisation: &str) -> Result<TestCa, rcgen::Error> {
        let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name.push(
            DnType::CommonName,
            format!("{organisation} test signing CA"),
        );
        ca.distinguished_name
            .push(DnType::OrganizationName, organisation);
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key)?;
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut leaf = CertificateParams::new(Vec::<String>::new())?;
        leaf.distinguished_name.push(
            DnType::CommonName,
            format!("{organisation} content credentials"),
        );
        leaf.distinguished_name
            .push(DnType::OrganizationName, organisation);
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // C2PA's signer profile: an end-entity key for e-mail protection or document signing.
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::EmailProtection];
        leaf.use_authority_key_identifier_extension = true;
        let leaf = leaf.signed_by(&key, &Issuer::new(ca, ca_key))?;
        let secret = serde_json::json!({
            "certificate_chain": format!("{}{}", leaf.pem(), ca_cert.pem()),
            "private_key": key.serialize_pem(),
        });
        Ok(TestCa {
            anchor_pem: ca_cert.pem(),
            secret_json: secret.to_string(),
        })
    }
}
