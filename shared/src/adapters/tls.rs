//! One TLS client configuration for every HTTPS client of ours (reqwest: the model, payments,
//! push and webhook clients). reqwest reads and parses the system's CA store (or
//! `SSL_CERT_FILE`, which is how the local cloud's CA is trusted) for each client it builds:
//! about 5 ms of CPU per client at a cold start on this machine (docs/benchmarks.md, issue 33).
//! Here the same platform verifier reqwest uses is built once per process, on the first
//! handshake of any of these clients, so a cold start builds them without reading the store.
//! A missing store still shows at once: the AWS SDK reads it for itself at cold start and
//! every AWS call over TLS fails without it (the consumer's secret read, at cold start).

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// Which application protocols a client offers (ALPN), as reqwest would set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// HTTP/2 or HTTP/1.1, the server's choice: reqwest's default.
    Any,
    /// HTTP/2 only: a client built with `http2_prior_knowledge`.
    Http2,
}

/// `builder` with the process's shared TLS configuration (see the module's comment).
pub fn shared(builder: reqwest::ClientBuilder, alpn: Alpn) -> reqwest::ClientBuilder {
    match client_config(alpn) {
        Ok(config) => builder.tls_backend_preconfigured(config),
        // Never with aws-lc-rs's provider; reqwest then builds its own, as before.
        Err(error) => {
            tracing::warn!(%error, "tls_config_not_shared");
            builder
        }
    }
}

/// What reqwest builds itself (its crypto provider, TLS 1.2 and 1.3, SNI, the platform
/// verifier, ALPN for its HTTP versions), with the one verifier of the process.
pub fn client_config(alpn: Alpn) -> Result<ClientConfig, rustls::Error> {
    let provider = provider();
    let mut config = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(SharedVerifier { provider }))
        .with_no_client_auth();
    config.alpn_protocols = match alpn {
        Alpn::Any => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Alpn::Http2 => vec![b"h2".to_vec()],
    };
    Ok(config)
}

/// reqwest's choice: a process-wide default if one was installed, else aws-lc-rs.
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

/// The platform verifier, built (the CA store read) on the first handshake of the process.
fn verifier(provider: &Arc<CryptoProvider>) -> Result<&'static Verifier, rustls::Error> {
    static VERIFIER: OnceLock<Result<Verifier, rustls::Error>> = OnceLock::new();
    VERIFIER
        .get_or_init(|| Verifier::new(provider.clone()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Certificates are checked by the shared platform verifier; handshake signatures, which need
/// no roots, by the provider's algorithms, as that verifier does.
#[derive(Debug)]
struct SharedVerifier {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for SharedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        verifier(&self.provider)?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
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
    fn untrusted_server() -> u16 {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .unwrap_or_else(|e| panic!("{e}"));
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
        port
    }

    /// The shared configuration replaces reqwest's own verifier: it must still refuse a server
    /// no root vouches for (a verifier that accepted anything would pass every other test).
    #[tokio::test]
    async fn a_server_no_root_vouches_for_is_refused() {
        let port = untrusted_server();
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
