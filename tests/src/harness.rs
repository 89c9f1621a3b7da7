//! The system under test on the local AWS: a harness per test (or on a stack of its own), its
//! users, and requests through the real router as API Gateway delivers them.

use std::collections::HashMap;

use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::domain::UserId;
use atelier_shared::services::App;
use axum::body::Body;
use http::Request;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::OnceCell;
use tower::ServiceExt;

use crate::reply::Reply;

static PROVISIONED: OnceCell<()> = OnceCell::const_new();

/// The system under test, built the way the Lambda builds it.
#[derive(Clone)]
pub struct Harness {
    pub app: App,
    pub clients: Clients,
}

impl Harness {
    /// The configuration from the environment (set by `cargo xtask test`).
    pub fn config() -> Config {
        Config::from_env().unwrap_or_else(|e| panic!("{e}: run the tests with `cargo xtask test`"))
    }

    /// A harness with the standard configuration.
    pub async fn new() -> Harness {
        Harness::with_config(Harness::config()).await
    }

    /// A harness with a changed configuration (limits, a broken queue URL, ...).
    pub async fn with_config(config: Config) -> Harness {
        // Logs go to the test's captured output (shown for failing tests only).
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_target(false)
            .try_init();
        // Clients are per test: a pooled connection must not outlive the test's runtime.
        let clients = Clients::from_env().await.unwrap_or_else(|e| panic!("{e}"));
        PROVISIONED
            .get_or_init(|| async {
                atelier_shared::store::provision::ensure(&clients, &Harness::config().resources)
                    .await
                    .unwrap_or_else(|e| panic!("provisioning: {e:?}"));
            })
            .await;
        Harness {
            app: App::new(config, &clients),
            clients,
        }
    }

    /// A harness on a stack of its own (tables, queue, bucket made from the same definition
    /// under a fresh prefix): for tests that halt the budget or read the whole queue.
    pub async fn isolated(limits: impl FnOnce(&mut atelier_shared::config::Limits)) -> Harness {
        Harness::isolated_with(|c| limits(&mut c.limits)).await
    }

    /// [`Harness::isolated`] with any change to the configuration (App Store settings, packs).
    pub async fn isolated_with(change: impl FnOnce(&mut Config)) -> Harness {
        let base = Harness::config();
        let endpoint = base
            .resources
            .queue_url
            .split("/000000000000/")
            .next()
            .unwrap_or_default()
            .to_owned();
        let prefix = format!("iso-{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut config = base.clone();
        config.resources = atelier_shared::config::Resources::local(&prefix, &endpoint);
        change(&mut config);
        let h = Harness::with_config(config.clone()).await;
        atelier_shared::store::provision::ensure(&h.clients, &config.resources)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        h
    }

    /// This harness's AWS endpoint (the emulator's, from the queue's URL).
    pub fn endpoint(&self) -> String {
        self.app
            .config
            .resources
            .queue_url
            .split("/000000000000/")
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// The same configuration with its clients through a wire proxy (`tools/wire-proxy`)
    /// in front of this harness's emulator, injecting `plan`'s faults (none: it only counts).
    pub async fn through_wire(
        &self,
        plan: Option<atelier_wire_proxy::FaultPlan>,
    ) -> (Harness, atelier_wire_proxy::Proxy) {
        let proxy = atelier_wire_proxy::Proxy::start(&self.endpoint(), plan)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(proxy.url())
            .load()
            .await;
        let clients = Clients::new(&sdk);
        let h = Harness {
            app: App::new(self.app.config.clone(), &clients),
            clients,
        };
        (h, proxy)
    }

    /// A fresh user id for this test.
    pub fn user(&self) -> UserId {
        let id = format!("t-{}", ulid::Ulid::new().to_string().to_lowercase());
        UserId::parse(&id).unwrap_or_else(|| panic!("user id {id}"))
    }

    /// Sends a request through the router as API Gateway would deliver it for `user`
    /// (`None`: no authorizer context).
    /// The user's e-mail counts as verified (`email_verified` is `"true"`), as for every user
    /// who signed up through the identity provider.
    pub async fn call(&self, user: Option<&UserId>, req: Request<Body>) -> Reply {
        self.call_with_claims(user.map(|u| Harness::claims(u, Some("true"))), req)
            .await
    }

    /// The claims API Gateway's authorizer puts in the context for `user`'s ID token (its
    /// own address, `<user>@example.test`), with `email_verified` as the context carries it
    /// (`None`: the token has no such claim, nor an address).
    pub fn claims(user: &UserId, email_verified: Option<&str>) -> HashMap<String, String> {
        match email_verified {
            Some(v) => Harness::id_claims(user, &format!("{user}@example.test"), v),
            None => HashMap::from([("sub".to_owned(), user.to_string())]),
        }
    }

    /// The claims of an ID token for `user` with this address and `email_verified` value.
    pub fn id_claims(user: &UserId, email: &str, email_verified: &str) -> HashMap<String, String> {
        HashMap::from([
            ("sub".to_owned(), user.to_string()),
            ("token_use".to_owned(), "id".to_owned()),
            ("email".to_owned(), email.to_owned()),
            ("email_verified".to_owned(), email_verified.to_owned()),
        ])
    }

    /// Sends a request with exactly these authorizer claims (`None`: no authorizer context).
    pub async fn call_with_claims(
        &self,
        claims: Option<HashMap<String, String>>,
        req: Request<Body>,
    ) -> Reply {
        let mut req = req;
        if let Some(claims) = claims {
            req.extensions_mut()
                .insert(atelier_api::auth::jwt_request_context(claims));
        }
        let res = atelier_api::router(self.app.clone())
            .oneshot(req)
            .await
            .unwrap_or_else(|e| match e {});
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_else(|e| panic!("reading the response body: {e}"));
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub fn json_request(method: &str, uri: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
    }

    pub async fn get(&self, user: &UserId, uri: &str) -> Reply {
        self.call(
            Some(user),
            Request::get(uri)
                .body(Body::empty())
                .unwrap_or_else(|e| panic!("request: {e}")),
        )
        .await
    }

    /// A DELETE of `uri` as `user`.
    pub async fn delete(&self, user: &UserId, uri: &str) -> Reply {
        let req = Request::delete(uri)
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }
}
