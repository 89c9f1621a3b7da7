//! App Store signed data (StoreKit 2 `signedTransactionInfo` and App Store Server
//! Notifications v2 `signedPayload`), verified the way Apple's `app-store-server-library`
//! verifies it offline: a compact JWS whose header says `alg: ES256` and carries `x5c`, three
//! certificates (leaf, intermediate, root). The intermediate must be signed by one of the
//! configured roots and the leaf by the intermediate, each valid at the payload's `signedDate`
//! (the library's effective date without online checks), the intermediate a CA carrying Apple's
//! OID 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1; then the JWS signature
//! with the leaf's key; then bundle id and environment against the configuration. Nothing in
//! the header is trusted before the chain is: the `x5c` root is ignored, as Apple's is.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::{ASN1Time, FromDer};

pub use crate::config::{
    AppleApiSettings, AppleEnvironment, AppleSettings, RootsError, parse_roots,
};

/// Apple's marker extension on the certificate that signs App Store data.
pub const LEAF_OID: &str = "1.2.840.113635.100.6.11.1";
/// Apple's marker extension on the intermediate (Apple Worldwide Developer Relations).
pub const INTERMEDIATE_OID: &str = "1.2.840.113635.100.6.2.1";
/// Longest signed datum accepted (a transaction is ~3 KiB, a notification ~6 KiB).
pub const MAX_JWS_LEN: usize = 32 * 1024;
/// Longest signed transaction the app may post (it fits the API's 16 KiB JSON bodies).
pub const MAX_TRANSACTION_LEN: usize = 12 * 1024;

/// Why signed App Store data was refused. Every case means "not from Apple for this app".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("longer than {MAX_JWS_LEN} bytes")]
    TooLong,
    #[error("not a compact JWS: {0}")]
    Format(&'static str),
    #[error("the algorithm is {0:?}, not ES256")]
    Algorithm(String),
    #[error("x5c must hold 3 certificates, it holds {0}")]
    ChainLength(usize),
    #[error("certificate {0} of x5c is not X.509 DER")]
    Certificate(usize),
    #[error("the intermediate is not signed by a trusted root")]
    UntrustedRoot,
    #[error("the leaf is not signed by the intermediate")]
    LeafSignature,
    #[error("a certificate of the chain is not valid at {0} (unix seconds)")]
    Expired(i64),
    #[error("the intermediate is not a CA carrying Apple's OID {INTERMEDIATE_OID}")]
    IntermediateOid,
    #[error("the leaf does not carry Apple's OID {LEAF_OID}")]
    LeafOid,
    #[error("the JWS signature does not match the leaf's key")]
    Signature,
    #[error("the payload is not the expected JSON: {0}")]
    Payload(String),
    #[error("the bundle id {0:?} is not this app's")]
    BundleId(String),
    #[error("the environment {0:?} is not this deployment's")]
    Environment(String),
    #[error("the app id {0:?} is not this app's")]
    AppAppleId(Option<i64>),
}

/// A verified StoreKit 2 transaction (the fields Atelier uses).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transaction {
    pub transaction_id: String,
    #[serde(default)]
    pub original_transaction_id: Option<String>,
    pub bundle_id: String,
    pub product_id: String,
    #[serde(default)]
    pub app_account_token: Option<String>,
    pub environment: String,
    #[serde(default = "one")]
    pub quantity: i64,
    #[serde(default)]
    pub revocation_date: Option<i64>,
    pub signed_date: i64,
}

fn one() -> i64 {
    1
}

/// A verified App Store Server Notification v2, with its transaction verified too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub notification_type: String,
    pub subtype: Option<String>,
    pub notification_uuid: String,
    pub transaction: Option<Transaction>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotificationPayload {
    notification_type: String,
    #[serde(default)]
    subtype: Option<String>,
    #[serde(rename = "notificationUUID")]
    notification_uuid: String,
    #[serde(default)]
    data: Option<NotificationData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotificationData {
    bundle_id: String,
    environment: String,
    #[serde(default)]
    app_apple_id: Option<i64>,
    #[serde(default)]
    signed_transaction_info: Option<String>,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    x5c: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dated {
    #[serde(default)]
    signed_date: Option<i64>,
}

impl AppleSettings {
    /// Verifies a `signedTransactionInfo`; `now` (unix seconds) is the effective date when the
    /// payload has no `signedDate`.
    pub fn verify_transaction(&self, jws: &str, now: i64) -> Result<Transaction, VerifyError> {
        let payload = verify_jws(&self.roots, jws, now)?;
        let tx: Transaction =
            serde_json::from_slice(&payload).map_err(|e| VerifyError::Payload(e.to_string()))?;
        self.check_app(&tx.bundle_id, &tx.environment)?;
        Ok(tx)
    }

    /// Verifies a notification's `signedPayload`, and the transaction it carries.
    pub fn verify_notification(&self, jws: &str, now: i64) -> Result<Notification, VerifyError> {
        let payload = verify_jws(&self.roots, jws, now)?;
        let n: NotificationPayload =
            serde_json::from_slice(&payload).map_err(|e| VerifyError::Payload(e.to_string()))?;
        let mut transaction = None;
        if let Some(data) = &n.data {
            self.check_app(&data.bundle_id, &data.environment)?;
            if self.environment == AppleEnvironment::Production
                && self.app_apple_id.is_some()
                && data.app_apple_id != self.app_apple_id
            {
                return Err(VerifyError::AppAppleId(data.app_apple_id));
            }
            if let Some(signed) = &data.signed_transaction_info {
                transaction = Some(self.verify_transaction(signed, now)?);
            }
        }
        Ok(Notification {
            notification_type: n.notification_type,
            subtype: n.subtype,
            notification_uuid: n.notification_uuid,
            transaction,
        })
    }

    fn check_app(&self, bundle_id: &str, environment: &str) -> Result<(), VerifyError> {
        if bundle_id != self.bundle_id {
            return Err(VerifyError::BundleId(bundle_id.to_owned()));
        }
        if environment != self.environment.as_str() {
            return Err(VerifyError::Environment(environment.to_owned()));
        }
        Ok(())
    }
}

/// The payload of a JWS whose chain and signature check out (nothing about the app yet).
fn verify_jws(roots: &[Vec<u8>], jws: &str, now: i64) -> Result<Vec<u8>, VerifyError> {
    if jws.len() > MAX_JWS_LEN {
        return Err(VerifyError::TooLong);
    }
    let mut parts = jws.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(VerifyError::Format("expected three dot-separated parts"));
    };
    let b64 = |part: &str, what: &'static str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| VerifyError::Format(what))
    };
    let header: Header = serde_json::from_slice(&b64(h, "the header is not base64url")?)
        .map_err(|_| VerifyError::Format("the header is not JSON with alg and x5c"))?;
    if header.alg != "ES256" {
        return Err(VerifyError::Algorithm(header.alg));
    }
    let payload = b64(p, "the payload is not base64url")?;
    let signature = b64(s, "the signature is not base64url")?;
    // The effective date, as Apple's library takes it without online checks.
    let dated: Dated =
        serde_json::from_slice(&payload).map_err(|e| VerifyError::Payload(e.to_string()))?;
    let at = dated.signed_date.map_or(now, |ms| ms.div_euclid(1000));
    let leaf_key = verify_chain(roots, &header.x5c, at)?;
    let signed = &jws[..h.len() + 1 + p.len()];
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, leaf_key)
        .verify(signed.as_bytes(), &signature)
        .map_err(|_| VerifyError::Signature)?;
    Ok(payload)
}

/// Checks leaf → intermediate → a configured root at `at`; the leaf's public key.
fn verify_chain(roots: &[Vec<u8>], x5c: &[String], at: i64) -> Result<Vec<u8>, VerifyError> {
    let [leaf, intermediate, _root] = x5c else {
        return Err(VerifyError::ChainLength(x5c.len()));
    };
    let der = |i: usize, b: &str| STANDARD.decode(b).map_err(|_| VerifyError::Certificate(i));
    let (leaf_der, inter_der) = (der(0, leaf)?, der(1, intermediate)?);
    let leaf = parse(&leaf_der).ok_or(VerifyError::Certificate(0))?;
    let inter = parse(&inter_der).ok_or(VerifyError::Certificate(1))?;
    let time = ASN1Time::from_timestamp(at).map_err(|_| VerifyError::Expired(at))?;
    let trusted = roots
        .iter()
        .filter_map(|r| parse(r))
        .find(|root| signed_by(&inter, root));
    let root = trusted.ok_or(VerifyError::UntrustedRoot)?;
    if !signed_by(&leaf, &inter) {
        return Err(VerifyError::LeafSignature);
    }
    if ![&leaf, &inter, &root]
        .iter()
        .all(|c| c.validity().is_valid_at(time))
    {
        return Err(VerifyError::Expired(at));
    }
    if !inter.is_ca() || !has_extension(&inter, INTERMEDIATE_OID) {
        return Err(VerifyError::IntermediateOid);
    }
    if !has_extension(&leaf, LEAF_OID) {
        return Err(VerifyError::LeafOid);
    }
    Ok(leaf.public_key().subject_public_key.data.to_vec())
}

/// Whether `issuer` names and signed `cert` (ECDSA on P-256 or P-384, SHA-256 or SHA-384: what
/// Apple's chain uses; anything else is refused).
fn signed_by(cert: &X509Certificate<'_>, issuer: &X509Certificate<'_>) -> bool {
    use ring::signature as sig;
    let curve = issuer
        .public_key()
        .algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.as_oid().ok())
        .map(|o| o.to_id_string());
    let algorithm: &dyn sig::VerificationAlgorithm = match (
        cert.signature_algorithm.algorithm.to_id_string().as_str(),
        curve.as_deref(),
    ) {
        (ECDSA_SHA256, Some(P256)) => &sig::ECDSA_P256_SHA256_ASN1,
        (ECDSA_SHA384, Some(P256)) => &sig::ECDSA_P256_SHA384_ASN1,
        (ECDSA_SHA256, Some(P384)) => &sig::ECDSA_P384_SHA256_ASN1,
        (ECDSA_SHA384, Some(P384)) => &sig::ECDSA_P384_SHA384_ASN1,
        _ => return false,
    };
    cert.issuer() == issuer.subject()
        && sig::UnparsedPublicKey::new(algorithm, &issuer.public_key().subject_public_key.data)
            .verify(cert.tbs_certificate.as_ref(), &cert.signature_value.data)
            .is_ok()
}

const ECDSA_SHA256: &str = "1.2.840.10045.4.3.2";
const ECDSA_SHA384: &str = "1.2.840.10045.4.3.3";
const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";

fn parse(der: &[u8]) -> Option<X509Certificate<'_>> {
    match X509Certificate::from_der(der) {
        Ok(([], cert)) => Some(cert),
        _ => None,
    }
}

fn has_extension(cert: &X509Certificate<'_>, oid: &str) -> bool {
    cert.extensions()
        .iter()
        .any(|e| e.oid.to_id_string() == oid)
}
