//! One trust store for every TLS client of the process: the AWS SDK's HTTPS client and our
//! reqwest clients (the model, payments, push and webhook clients).
//!
//! The roots are the web PKI's, compiled in (`webpki-root-certs`, Mozilla's list, the same
//! trust as the system stores derive from), so a cold start reads no file: reading and parsing
//! the system's store cost about 5 ms of CPU per read, and the SDK and reqwest each read it
//! (docs/benchmarks.md, issues 33 and 50). When `SSL_CERT_FILE` is set its certificates replace
//! them, as they replaced the system store before: that is how the local cloud trusts its CA
//! (the bundle it writes holds the system's roots and the CA). It is read once per process.
//! `SSL_CERT_DIR` is not read.

use std::sync::{Arc, OnceLock};

use aws_smithy_http_client::tls::{self as sdk_tls, TlsContext, TrustStore};
use base64::Engine as _;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

/// Which application protocols a client offers (ALPN), as reqwest would set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// HTTP/2 or HTTP/1.1, the server's choice: reqwest's default.
    Any,
    /// HTTP/2 only: a client built with `http2_prior_knowledge`.
    Http2,
}

/// Why the process has no roots to trust; every TLS client fails with it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RootsError {
    #[error("SSL_CERT_FILE {path} could not be read: {message}")]
    Unreadable { path: String, message: String },
    #[error("SSL_CERT_FILE {path} holds no certificate usable as a root")]
    Empty { path: String },
    #[error("the AWS SDK refused the roots: {0}")]
    Sdk(String),
}

/// The process's roots, as rustls takes them and as PEM (the SDK's trust store takes PEM).
#[derive(Debug)]
struct Roots {
    store: Arc<RootCertStore>,
    pem: Vec<u8>,
}

/// The roots, loaded on first use (see the module's comment).
fn roots() -> Result<&'static Roots, RootsError> {
    static ROOTS: OnceLock<Result<Roots, RootsError>> = OnceLock::new();
    ROOTS
        .get_or_init(|| match std::env::var_os("SSL_CERT_FILE") {
            Some(path) => from_file(&path.to_string_lossy()),
            None => Ok(from_certs(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
            )),
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn from_file(path: &str) -> Result<Roots, RootsError> {
    let bytes = std::fs::read(path).map_err(|e| RootsError::Unreadable {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    // A block that is not a certificate is skipped, as rustls-native-certs skipped it.
    let certs = CertificateDer::pem_slice_iter(&bytes).filter_map(Result::ok);
    let roots = from_certs(certs);
    if roots.store.is_empty() {
        return Err(RootsError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(roots)
}

/// Keeps the certificates rustls can use as roots (the SDK panics on one it cannot parse).
fn from_certs<'a>(certs: impl Iterator<Item = CertificateDer<'a>>) -> Roots {
    let mut store = RootCertStore::empty();
    let mut pem = Vec::new();
    for cert in certs {
        if store.add(cert.clone()).is_ok() {
            push_pem(&mut pem, &cert);
        }
    }
    Roots {
        store: Arc::new(store),
        pem,
    }
}

fn push_pem(out: &mut Vec<u8>, cert: &[u8]) {
    let body = base64::engine::general_purpose::STANDARD.encode(cert);
    out.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
    for line in body.as_bytes().chunks(64) {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(b"-----END CERTIFICATE-----\n");
}

/// The AWS SDK's HTTPS client (its own rustls with ring, its cipher suites and HTTP
/// settings), trusting only the process's roots instead of reading the system store.
pub fn sdk_http_client()
-> Result<aws_smithy_runtime_api::client::http::SharedHttpClient, RootsError> {
    sdk_client_trusting(roots()?)
}

fn sdk_client_trusting(
    roots: &Roots,
) -> Result<aws_smithy_runtime_api::client::http::SharedHttpClient, RootsError> {
    let trust = TrustStore::empty().with_pem_certificate(roots.pem.clone());
    let context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .map_err(|e| RootsError::Sdk(e.to_string()))?;
    Ok(aws_smithy_http_client::Builder::new()
        .tls_provider(sdk_tls::Provider::Rustls(
            sdk_tls::rustls_provider::CryptoMode::Ring,
        ))
        .tls_context(context)
        .build_https())
}

/// `builder` with the process's TLS configuration (see the module's comment).
pub fn shared(builder: reqwest::ClientBuilder, alpn: Alpn) -> reqwest::ClientBuilder {
    let config = client_config(alpn).or_else(|error| {
        // Fails closed: a client that trusts no server (reqwest has no crypto library of its
        // own to build another, `rustls-no-provider`). The functions never get here: their
        // AWS clients need the same roots first and stop the cold start without them.
        tracing::warn!(%error, "tls_config_not_shared");
        config_with(Arc::new(RootCertStore::empty()), alpn)
    });
    match config {
        Ok(config) => builder.tls_backend_preconfigured(config),
        Err(_) => builder, // unreachable: ring has every protocol version rustls has
    }
}

/// What reqwest builds itself (its crypto provider, TLS 1.2 and 1.3, SNI, ALPN for its HTTP
/// versions), verifying against the process's roots.
pub fn client_config(alpn: Alpn) -> Result<ClientConfig, TlsError> {
    Ok(config_with(roots()?.store.clone(), alpn)?)
}

fn config_with(roots: Arc<RootCertStore>, alpn: Alpn) -> Result<ClientConfig, rustls::Error> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match alpn {
        Alpn::Any => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Alpn::Http2 => vec![b"h2".to_vec()],
    };
    Ok(config)
}

/// Why a client configuration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Roots(#[from] RootsError),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// ring, the process's one crypto library (the SDK's client is given the same).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use rustls::{ServerConfig, ServerConnection, StreamOwned};

    use super::*;

    /// A TLS server on localhost whose certificate (self-signed, made here) no CA store holds;
    /// it answers any request that gets through the handshake with `200 ok`.
    fn untrusted_server() -> (u16, CertificateDer<'static>) {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .unwrap_or_else(|e| panic!("{e}"));
        let cert = made.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .and_then(|b| {
                b.with_no_client_auth()
                    .with_single_cert(vec![made.cert.der().clone()], key)
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let Ok(conn) = ServerConnection::new(config.clone()) else {
                    continue;
                };
                let mut tls = StreamOwned::new(conn, stream);
                let mut buf = [0u8; 1024];
                if tls.read(&mut buf).is_ok() {
                    let _ = tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                }
            }
        });
        (port, cert)
    }

    /// The shared configuration replaces reqwest's own verifier: it must still refuse a server
    /// no root vouches for (a verifier that accepted anything would pass every other test).
    #[tokio::test]
    async fn a_server_no_root_vouches_for_is_refused() {
        let (port, _) = untrusted_server();
        let client = shared(reqwest::Client::builder(), Alpn::Any)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let refused = client
            .get(format!("https://localhost:{port}/"))
            .send()
            .await
            .err()
            .unwrap_or_else(|| panic!("a self-signed certificate was accepted"));
        let why = crate::error::chain(&refused);
        assert!(why.contains("UnknownIssuer"), "{why}");
    }

    /// One DynamoDB call through the SDK's HTTPS client trusting `roots`, to the server on
    /// `port`; the error's chain, if any.
    async fn sdk_call(roots: &Roots, port: u16) -> Option<String> {
        use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
        let http = sdk_client_trusting(roots).unwrap_or_else(|e| panic!("{e}"));
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::for_tests())
            .endpoint_url(format!("https://localhost:{port}"))
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .http_client(http)
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(config);
        let answer = client.list_tables().send().await;
        answer.err().map(|e| crate::error::chain(&e))
    }

    /// The SDK's client trusts the process's roots only: the compiled-in roots refuse a
    /// self-signed server (the SDK no longer reads the system store, so this is the check
    /// that it still checks), and the same server is reached once its certificate is a root.
    #[tokio::test]
    async fn the_sdk_refuses_a_server_no_root_vouches_for_and_reaches_it_once_trusted() {
        let (port, cert) = untrusted_server();
        let compiled_in = from_certs(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
        assert!(compiled_in.store.len() > 100, "{}", compiled_in.store.len());
        let refused = sdk_call(&compiled_in, port)
            .await
            .unwrap_or_else(|| panic!("a self-signed certificate was accepted"));
        assert!(refused.contains("UnknownIssuer"), "{refused}");

        let trusted = from_certs(std::iter::once(cert));
        // The server answers `ok`, not DynamoDB's JSON: an error after the handshake.
        let answered = sdk_call(&trusted, port).await.unwrap_or_default();
        assert!(!answered.contains("UnknownIssuer"), "{answered}");
        assert!(!answered.contains("dispatch failure"), "{answered}");
    }

    /// The application protocols reqwest itself offers for each kind of client.
    #[test]
    fn alpn_is_what_reqwest_would_offer() {
        let protocols = |alpn| client_config(alpn).map(|c| c.alpn_protocols).ok();
        assert_eq!(
            protocols(Alpn::Any),
            Some(vec![b"h2".to_vec(), b"http/1.1".to_vec()])
        );
        assert_eq!(protocols(Alpn::Http2), Some(vec![b"h2".to_vec()]));
    }
}
