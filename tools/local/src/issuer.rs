//! The dev issuer: an RSA key pair made on first run and kept in the local state folder, its
//! JWKS, and tokens signed with it (RS256, with a `kid`), as an identity provider would.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};

/// Errors of the dev issuer.
#[derive(Debug, thiserror::Error)]
pub enum IssuerError {
    #[error("reading or writing the dev key at {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the dev key is not a PKCS#8 RSA key")]
    Key(#[source] rsa::pkcs8::Error),
    #[error("generating the dev key")]
    Generate(#[source] rsa::Error),
    #[error("signing a token")]
    Sign(#[source] jsonwebtoken::errors::Error),
}

/// The dev issuer's key and identity.
#[derive(Clone)]
pub struct DevIssuer {
    issuer: String,
    kid: String,
    private_pem: String,
    public: RsaPublicKey,
}

impl std::fmt::Debug for DevIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevIssuer")
            .field("issuer", &self.issuer)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// Who a token is for: the subject and, as Cognito's ID token says it, their address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub sub: String,
    pub email: String,
    pub email_verified: bool,
}

impl Subject {
    /// A dev user: `sub` as given; the address is `sub` when it is one, else
    /// `<sub>@atelier.test`; verified.
    pub fn dev(sub: &str) -> Subject {
        let email = if sub.contains('@') {
            sub.to_owned()
        } else {
            format!("{sub}@atelier.test")
        };
        Subject {
            sub: sub.to_owned(),
            email,
            email_verified: true,
        }
    }
}

/// The scope the access token carries (what the app asks for).
pub const SCOPE: &str = "openid email";

impl DevIssuer {
    /// Loads the key from `dir/dev-key.pem`, making and saving one on first run (readable by
    /// its owner only: it signs tokens for any user).
    pub fn load_or_create(dir: &Path, issuer: &str) -> Result<DevIssuer, IssuerError> {
        let path = dir.join("dev-key.pem");
        let io = |source| IssuerError::Io {
            path: path.clone(),
            source,
        };
        let key = if path.exists() {
            let pem = std::fs::read_to_string(&path).map_err(io)?;
            RsaPrivateKey::from_pkcs8_pem(&pem).map_err(IssuerError::Key)?
        } else {
            std::fs::create_dir_all(dir).map_err(io)?;
            let key = Self::generate()?;
            let pem = key.to_pkcs8_pem(LineEnding::LF).map_err(IssuerError::Key)?;
            write_private(&path, pem.as_bytes()).map_err(io)?;
            key
        };
        DevIssuer::from_key(key, issuer)
    }

    /// A fresh in-memory issuer (tests).
    pub fn ephemeral(issuer: &str) -> Result<DevIssuer, IssuerError> {
        DevIssuer::from_key(Self::generate()?, issuer)
    }

    fn generate() -> Result<RsaPrivateKey, IssuerError> {
        RsaPrivateKey::new(&mut rand::thread_rng(), 2048).map_err(IssuerError::Generate)
    }

    fn from_key(key: RsaPrivateKey, issuer: &str) -> Result<DevIssuer, IssuerError> {
        let public = RsaPublicKey::from(&key);
        let der = public
            .to_public_key_der()
            .map_err(|e| IssuerError::Key(e.into()))?;
        let kid = hex_prefix(&sha256(der.as_bytes()));
        let private_pem = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(IssuerError::Key)?
            .to_string();
        Ok(DevIssuer {
            issuer: issuer.to_owned(),
            kid,
            private_pem,
            public,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWKS document served at `{issuer}/.well-known/jwks.json`.
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [{
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
            "n": URL_SAFE_NO_PAD.encode(self.public.n().to_bytes_be()),
            "e": URL_SAFE_NO_PAD.encode(self.public.e().to_bytes_be()),
        }]})
    }

    /// An ID token for `sub` with a verified address, valid for `ttl_secs`, audience
    /// [`crate::AUDIENCE`]: what the API takes.
    pub fn token(&self, sub: &str, ttl_secs: i64) -> Result<String, IssuerError> {
        self.token_with(sub, crate::AUDIENCE, ttl_secs)
    }

    /// An ID token for `sub` whose address is not verified (`email_verified: false`): served,
    /// but without the signup grant.
    pub fn token_unverified(&self, sub: &str, ttl_secs: i64) -> Result<String, IssuerError> {
        let subject = Subject {
            email_verified: false,
            ..Subject::dev(sub)
        };
        self.id_token(&subject, crate::AUDIENCE, &Times::new(ttl_secs, None))
    }

    /// An ID token with a chosen audience and lifetime (negative: already expired).
    pub fn token_with(&self, sub: &str, aud: &str, ttl_secs: i64) -> Result<String, IssuerError> {
        self.id_token(&Subject::dev(sub), aud, &Times::new(ttl_secs, None))
    }

    /// An ID token that is valid only from `nbf_in_secs` from now (`nbf`), for `ttl_secs`.
    pub fn token_not_before(
        &self,
        sub: &str,
        nbf_in_secs: i64,
        ttl_secs: i64,
    ) -> Result<String, IssuerError> {
        let times = Times::new(ttl_secs, Some(nbf_in_secs));
        self.id_token(&Subject::dev(sub), crate::AUDIENCE, &times)
    }

    /// An access token for `sub` as Cognito mints it: `client_id`, `scope`, `username`, no
    /// `aud` and no e-mail claims.
    pub fn access_token(&self, sub: &str, ttl_secs: i64) -> Result<String, IssuerError> {
        self.access_token_for(&Subject::dev(sub), &Times::new(ttl_secs, None))
    }

    /// Cognito's ID token claims (`aud` = the app client id, `token_use: id`).
    pub(crate) fn id_token(
        &self,
        subject: &Subject,
        aud: &str,
        times: &Times,
    ) -> Result<String, IssuerError> {
        let mut claims = self.common(subject, "id", times);
        claims.insert("aud".into(), aud.into());
        claims.insert("email".into(), subject.email.clone().into());
        claims.insert("email_verified".into(), subject.email_verified.into());
        claims.insert("cognito:username".into(), subject.sub.clone().into());
        self.sign(&claims)
    }

    /// Cognito's access token claims (`client_id`, `token_use: access`, no `aud`).
    pub(crate) fn access_token_for(
        &self,
        subject: &Subject,
        times: &Times,
    ) -> Result<String, IssuerError> {
        let mut claims = self.common(subject, "access", times);
        claims.insert("client_id".into(), crate::AUDIENCE.into());
        claims.insert("scope".into(), SCOPE.into());
        claims.insert("username".into(), subject.sub.clone().into());
        self.sign(&claims)
    }

    /// The claims both kinds carry.
    fn common(&self, subject: &Subject, token_use: &str, t: &Times) -> Claims {
        let mut claims = Claims::new();
        claims.insert("iss".into(), self.issuer.clone().into());
        claims.insert("sub".into(), subject.sub.clone().into());
        claims.insert("token_use".into(), token_use.into());
        claims.insert("auth_time".into(), t.auth_time.into());
        claims.insert("iat".into(), t.now.into());
        claims.insert("exp".into(), (t.now + t.ttl_secs).into());
        claims.insert("jti".into(), random_id().into());
        claims.insert("origin_jti".into(), t.origin_jti.clone().into());
        claims.insert("event_id".into(), t.origin_jti.clone().into());
        if let Some(nbf) = t.nbf_in_secs {
            claims.insert("nbf".into(), (t.now + nbf).into());
        }
        claims
    }

    fn sign(&self, claims: &Claims) -> Result<String, IssuerError> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        let key =
            EncodingKey::from_rsa_pem(self.private_pem.as_bytes()).map_err(IssuerError::Sign)?;
        jsonwebtoken::encode(&header, claims, &key).map_err(IssuerError::Sign)
    }
}

type Claims = serde_json::Map<String, serde_json::Value>;

/// When a token is issued and for how long; `auth_time` and `origin_jti` stay those of the
/// sign-in across refreshes, as Cognito's do.
#[derive(Debug, Clone)]
pub struct Times {
    pub now: i64,
    pub ttl_secs: i64,
    pub nbf_in_secs: Option<i64>,
    pub auth_time: i64,
    pub origin_jti: String,
}

impl Times {
    /// A fresh sign-in now.
    pub fn new(ttl_secs: i64, nbf_in_secs: Option<i64>) -> Times {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        Times {
            now,
            ttl_secs,
            nbf_in_secs,
            auth_time: now,
            origin_jti: random_id(),
        }
    }
}

/// A random id in UUID form (as Cognito's `jti`, `origin_jti` and `sub`).
pub fn random_id() -> String {
    let bytes: [u8; 16] = rand::random();
    uuid_form(&bytes)
}

/// 16 bytes written as a version-4-shaped UUID.
pub fn uuid_form(bytes: &[u8; 16]) -> String {
    let h = hex_all(bytes);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn hex_all(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `path` with `bytes`, readable and writable by its owner only (0600 on Unix) from
/// the moment it exists; never overwrites.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).to_vec()
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_dev_key_file_is_written_readable_by_its_owner_only_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("atelier-dev-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let made = DevIssuer::load_or_create(&dir, "http://issuer").expect("a new dev key");

        let meta = std::fs::metadata(dir.join("dev-key.pem")).expect("the key file");
        let mode = meta.permissions().mode() & 0o777;
        let again = DevIssuer::load_or_create(&dir, "http://issuer").expect("the saved key");
        let _ = std::fs::remove_dir_all(&dir);

        assert_eq!(mode, 0o600, "mode {mode:o}");
        assert_eq!(again.kid(), made.kid(), "the same key is loaded back");
    }
}
