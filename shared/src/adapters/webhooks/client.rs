//! The HTTP client every webhook POST goes through, so no caller can send one unguarded.
//!
//! - **No redirects**: a `3xx` is the attempt's answer, a failure like any non-2xx (as Svix
//!   and Stripe treat it): a receiver cannot bounce a signed POST to another address.
//! - **No proxy** from the environment: the connection goes to the address that was checked.
//! - **Public addresses only** unless [`PrivateAddresses::Allow`] (local runs): a literal IP
//!   is checked before sending; a DNS name is resolved by [`PublicOnly`], which hands the
//!   connector only the public addresses it found, so the address checked is the address
//!   connected to (no second resolution between the check and the connection).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::PrivateAddresses;
use super::address::AddressClass;
use crate::adapters::tls::{self, Alpn};
use crate::domain::webhooks::sign::SignedHeaders;

/// A send refused because its address is not public.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: {host} is {ip}, a {} address", class.as_str())]
pub struct AddressRefused {
    pub host: String,
    pub ip: IpAddr,
    pub class: AddressClass,
}

/// Why a POST got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Refused(AddressRefused),
    #[error("the URL does not parse")]
    BadUrl,
    #[error("timeout")]
    Timeout,
    #[error("connect")]
    Connect,
    #[error("{0}")]
    Other(#[source] reqwest::Error),
}

/// The webhook worker's HTTP client.
#[derive(Debug, Clone)]
pub struct WebhookClient {
    http: reqwest::Client,
    private: PrivateAddresses,
}

impl WebhookClient {
    /// Built once per process (cold start); fails only if TLS cannot be set up.
    pub fn new(private: PrivateAddresses) -> Result<WebhookClient, reqwest::Error> {
        let mut builder = tls::shared(reqwest::Client::builder(), Alpn::Any)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if private == PrivateAddresses::Refuse {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Ok(WebhookClient {
            http: builder.build()?,
            private,
        })
    }

    /// POSTs `body` signed with `headers` to `url`; the receiver's status code, whatever it is.
    pub async fn post(
        &self,
        url: &str,
        headers: &SignedHeaders,
        body: String,
        timeout: Duration,
    ) -> Result<u16, SendError> {
        let parsed = reqwest::Url::parse(url).map_err(|_| SendError::BadUrl)?;
        self.check_literal(&parsed)?;
        let mut req = self
            .http
            .post(parsed)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in headers.pairs() {
            req = req.header(name, value);
        }
        match req.send().await {
            Ok(res) => Ok(res.status().as_u16()),
            Err(e) => Err(classify(e)),
        }
    }

    /// An IP literal never reaches the resolver: it is checked here.
    fn check_literal(&self, url: &reqwest::Url) -> Result<(), SendError> {
        let Some(ip) = super::host_ip(url) else {
            return Ok(());
        };
        let class = AddressClass::of(ip);
        if self.private.permit(class) {
            return Ok(());
        }
        Err(SendError::Refused(AddressRefused {
            host: url.host_str().unwrap_or_default().to_owned(),
            ip,
            class,
        }))
    }
}

/// The refusal inside a connection error, if the resolver refused; else its kind.
fn classify(e: reqwest::Error) -> SendError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(c) = cause {
        if let Some(refused) = c.downcast_ref::<AddressRefused>() {
            return SendError::Refused(refused.clone());
        }
        cause = c.source();
    }
    if e.is_timeout() {
        SendError::Timeout
    } else if e.is_connect() {
        SendError::Connect
    } else {
        SendError::Other(e)
    }
}

/// A resolver that answers only public addresses; a name with none is refused, naming the
/// first address it had.
#[derive(Debug)]
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (public, inner): (Vec<SocketAddr>, Vec<SocketAddr>) = found
                .into_iter()
                .partition(|a| AddressClass::of(a.ip()) == AddressClass::Public);
            match (public.is_empty(), inner.first()) {
                (true, Some(first)) => Err(Box::new(AddressRefused {
                    host,
                    ip: first.ip(),
                    class: AddressClass::of(first.ip()),
                })
                    as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(public.into_iter()) as Addrs),
            }
        })
    }
}
