//! The JWTs' signatures with ring, the one crypto library every function links already (the
//! TLS of each client): jsonwebtoken's own backends are aws-lc-rs, which the functions no
//! longer carry, or RustCrypto, a second library in the api's and the sweeper's zips
//! (docs/benchmarks.md, issue 50). Only what we sign and verify: ES256 (APNs, the App Store
//! Server API) and RS256 (Google's service accounts and Pub/Sub push tokens). This mirrors
//! jsonwebtoken's aws-lc-rs backend, whose API is ring's.

use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{self as sig, KeyPair};

/// Makes ring jsonwebtoken's provider for this process, before [`encode`] and [`decode`]. A
/// provider installed before (a test process's RustCrypto) is left in place.
fn install() {
    let _ = RING.install_default();
}

/// `jsonwebtoken::encode` with ring: every JWT the functions sign goes through here.
pub fn encode<T: serde::Serialize>(
    header: &jsonwebtoken::Header,
    claims: &T,
    key: &EncodingKey,
) -> Result<String> {
    install();
    jsonwebtoken::encode(header, claims, key)
}

/// `jsonwebtoken::decode` with ring: every JWT the functions verify goes through here.
pub fn decode<T: serde::de::DeserializeOwned>(
    token: &str,
    key: &DecodingKey,
    validation: &jsonwebtoken::Validation,
) -> Result<jsonwebtoken::TokenData<T>> {
    install();
    jsonwebtoken::decode(token, key, validation)
}

static RING: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    jwk_utils: JwkUtils {
        extract_rsa_public_key_components: rsa_components,
        extract_ec_public_key_coordinates: ec_coordinates,
        compute_digest: digest,
    },
};

fn unsupported() -> Error {
    ErrorKind::InvalidAlgorithm.into()
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    match (algorithm, key.family()) {
        (Algorithm::ES256, AlgorithmFamily::Ec) => {
            let pair = sig::EcdsaKeyPair::from_pkcs8(
                &sig::ECDSA_P256_SHA256_FIXED_SIGNING,
                key.inner(),
                &SystemRandom::new(),
            )
            .map_err(|_| Error::from(ErrorKind::InvalidEcdsaKey))?;
            Ok(Box::new(Es256Signer(pair)))
        }
        (Algorithm::RS256, AlgorithmFamily::Rsa) => {
            let pair = sig::RsaKeyPair::from_der(key.inner())
                .map_err(|e| Error::from(ErrorKind::InvalidRsaKey(e.to_string())))?;
            Ok(Box::new(Rs256Signer(pair)))
        }
        (Algorithm::ES256 | Algorithm::RS256, _) => Err(ErrorKind::InvalidKeyFormat.into()),
        _ => Err(unsupported()),
    }
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    match (algorithm, key.family()) {
        (Algorithm::ES256, AlgorithmFamily::Ec) | (Algorithm::RS256, AlgorithmFamily::Rsa) => {
            Ok(Box::new(Verifier(*algorithm, key.clone())))
        }
        (Algorithm::ES256 | Algorithm::RS256, _) => Err(ErrorKind::InvalidKeyFormat.into()),
        _ => Err(unsupported()),
    }
}

struct Es256Signer(sig::EcdsaKeyPair);

impl signature::Signer<Vec<u8>> for Es256Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let signed = self.0.sign(&SystemRandom::new(), msg);
        Ok(signed
            .map_err(|_| signature::Error::new())?
            .as_ref()
            .to_vec())
    }
}

impl JwtSigner for Es256Signer {
    fn algorithm(&self) -> Algorithm {
        Algorithm::ES256
    }
}

struct Rs256Signer(sig::RsaKeyPair);

impl signature::Signer<Vec<u8>> for Rs256Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let mut out = vec![0; self.0.public().modulus_len()];
        let rng = SystemRandom::new();
        (self.0.sign(&sig::RSA_PKCS1_SHA256, &rng, msg, &mut out))
            .map_err(|_| signature::Error::new())?;
        Ok(out)
    }
}

impl JwtSigner for Rs256Signer {
    fn algorithm(&self) -> Algorithm {
        Algorithm::RS256
    }
}

/// ES256 or RS256 (the factory refuses the rest) with the key's public part.
struct Verifier(Algorithm, DecodingKey);

impl signature::Verifier<Vec<u8>> for Verifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let verified = match (self.0, self.1.kind()) {
            (Algorithm::ES256, DecodingKeyKind::SecretOrDer(key)) => {
                sig::UnparsedPublicKey::new(&sig::ECDSA_P256_SHA256_FIXED, key)
                    .verify(msg, signature)
            }
            (Algorithm::RS256, DecodingKeyKind::SecretOrDer(key)) => {
                sig::UnparsedPublicKey::new(&sig::RSA_PKCS1_2048_8192_SHA256, key)
                    .verify(msg, signature)
            }
            (Algorithm::RS256, DecodingKeyKind::RsaModulusExponent { n, e }) => {
                sig::RsaPublicKeyComponents { n, e }.verify(
                    &sig::RSA_PKCS1_2048_8192_SHA256,
                    msg,
                    signature,
                )
            }
            _ => Err(ring::error::Unspecified),
        };
        verified.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Verifier {
    fn algorithm(&self) -> Algorithm {
        self.0
    }
}

fn rsa_components(der: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let pair = sig::RsaKeyPair::from_der(der)
        .map_err(|e| Error::from(ErrorKind::InvalidRsaKey(e.to_string())))?;
    let public = sig::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    Ok((public.n, public.e))
}

fn ec_coordinates(der: &[u8], alg: Algorithm) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>)> {
    if alg != Algorithm::ES256 {
        return Err(ErrorKind::InvalidEcdsaKey.into());
    }
    let signing = &sig::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pair = sig::EcdsaKeyPair::from_pkcs8(signing, der, &SystemRandom::new())
        .map_err(|_| Error::from(ErrorKind::InvalidEcdsaKey))?;
    // An uncompressed point: 0x04, then x and y of 32 bytes each.
    match pair.public_key().as_ref() {
        [4, xy @ ..] if xy.len() == 64 => {
            let (x, y) = xy.split_at(32);
            Ok((EllipticCurve::P256, x.to_vec(), y.to_vec()))
        }
        _ => Err(ErrorKind::InvalidEcdsaKey.into()),
    }
}

fn digest(data: &[u8], hash: ThumbprintHash) -> Vec<u8> {
    let algorithm = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
    };
    ring::digest::digest(algorithm, data).as_ref().to_vec()
}

#[cfg(test)]
mod tests {
    //! Our signatures checked by RustCrypto's verifiers and RustCrypto's by ours (the other
    //! backend jsonwebtoken ships, built in for tests), with keys rcgen makes.

    use jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER as RUST_CRYPTO;

    use super::*;

    fn ec_keys() -> (EncodingKey, DecodingKey) {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .unwrap_or_else(|e| panic!("{e}"));
        let private = EncodingKey::from_ec_der(&pair.serialize_der());
        (private, DecodingKey::from_ec_der(pair.public_key_raw()))
    }

    /// A 2048-bit key as PKCS#1 DER, private and public, as jsonwebtoken's DER keys take it.
    fn rsa_keys() -> (EncodingKey, DecodingKey) {
        use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
        let key = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048)
            .unwrap_or_else(|e| panic!("{e}"));
        let private = key.to_pkcs1_der().unwrap_or_else(|e| panic!("{e}"));
        let public = rsa::RsaPublicKey::from(&key)
            .to_pkcs1_der()
            .unwrap_or_else(|e| panic!("{e}"));
        (
            EncodingKey::from_rsa_der(private.as_bytes()),
            DecodingKey::from_rsa_der(public.as_bytes()),
        )
    }

    fn round_trip(
        alg: Algorithm,
        sign: &CryptoProvider,
        check: &CryptoProvider,
        keys: &(EncodingKey, DecodingKey),
    ) -> bool {
        let message = b"header.claims";
        let signer = (sign.signer_factory)(&alg, &keys.0).unwrap_or_else(|e| panic!("{e}"));
        let signed =
            signature::Signer::try_sign(&*signer, message).unwrap_or_else(|e| panic!("{e}"));
        let verifier = (check.verifier_factory)(&alg, &keys.1).unwrap_or_else(|e| panic!("{e}"));
        let good = signature::Verifier::verify(&*verifier, message, &signed).is_ok();
        let bad = signature::Verifier::verify(&*verifier, b"header.claimz", &signed).is_ok();
        good && !bad
    }

    #[test]
    fn es256_signed_by_ring_verifies_with_rust_crypto_and_back() {
        let k = ec_keys();
        assert!(round_trip(Algorithm::ES256, &RING, &RUST_CRYPTO, &k));
        assert!(round_trip(Algorithm::ES256, &RUST_CRYPTO, &RING, &k));
    }

    #[test]
    fn rs256_signed_by_ring_verifies_with_rust_crypto_and_back() {
        let k = rsa_keys();
        assert!(round_trip(Algorithm::RS256, &RING, &RUST_CRYPTO, &k));
        assert!(round_trip(Algorithm::RS256, &RUST_CRYPTO, &RING, &k));
    }

    #[test]
    fn an_algorithm_we_do_not_use_is_refused_not_panicked_on() {
        let k = ec_keys();
        assert!((RING.signer_factory)(&Algorithm::ES384, &k.0).is_err());
        assert!((RING.verifier_factory)(&Algorithm::HS256, &k.1).is_err());
        assert!((RING.signer_factory)(&Algorithm::RS256, &k.0).is_err());
    }
}
