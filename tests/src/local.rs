//! Servers on local ports: a free listener for a stand-in, and the local API over HTTP.

use atelier_shared::services::App;
use serde_json::Value;

/// A listener on a free port of 127.0.0.1, for a stand-in, and its base URL.
pub async fn local_listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    (listener, format!("http://{addr}"))
}

/// The local API over HTTP on an ephemeral port, as `atelier-local serve` fronts it: the dev
/// issuer (its JWKS and OpenID Connect flow) beside the router, the authorizer in front.
pub struct LocalApi {
    pub base: String,
    pub issuer: atelier_local::issuer::DevIssuer,
    pub http: reqwest::Client,
}

impl LocalApi {
    pub async fn start(app: App) -> LocalApi {
        use atelier_local::serve::ISSUER_PATH;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let base = format!("http://{addr}");
        let issuer_url = format!("{base}{ISSUER_PATH}");
        let issuer = atelier_local::issuer::DevIssuer::ephemeral(&issuer_url)
            .unwrap_or_else(|e| panic!("{e}"));
        let router = atelier_local::serve::app(
            app,
            atelier_local::authorizer::Authorizer::new(&issuer_url, atelier_local::AUDIENCE),
            Some(issuer.clone()),
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        LocalApi {
            base,
            issuer,
            http: reqwest::Client::new(),
        }
    }

    /// `GET /v1/account` with this bearer token (`None`: none); the status and the body.
    pub async fn account(&self, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.get(format!("{}/v1/account", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }
}
