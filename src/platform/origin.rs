//! Proxy mode: forwarding to the origin (SPEC §2.6), with the origin timeout.
//!
//! Role: one place that talks to the application behind the gateway, by
//! service binding `ORIGIN` (preferred when both are set) or `ORIGIN_URL`.
//!
//! What must stay true here:
//! - The origin receives the method, the path+query as received, the client's
//!   headers minus `Authorization`, `Host` and any client `X-Tenant-Id`, plus
//!   the server's `X-Tenant-Id`, and the exact body bytes.
//!   `Idempotency-Key` is forwarded so the origin may dedupe too.
//! - "No answer at all" (the fetch threw) and "no answer in time" are
//!   different outcomes: the first is safe to retry (the caller releases),
//!   the second is unknown (the caller must not release).

use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{Delay, Env, Fetch, Fetcher, Headers};

use crate::config::Config;
use crate::contract::OriginFailure;
use crate::platform::http::{outbound_request, read_app_response};
use crate::protocol::AppResponse;

/// Where the origin is.
pub enum Origin {
    Service(Fetcher),
    Url(String),
}

/// Why the origin produced no response.
#[derive(Debug)]
pub enum OriginError {
    /// The fetch failed without a response (throw, refused connection).
    Unreachable(String),
    /// No complete response within `ORIGIN_TIMEOUT_SECONDS`.
    Timeout,
}

/// A request as the origin should receive it.
pub struct Forward {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Headers never forwarded from the client.
const STRIPPED: &[&str] = &["authorization", "x-tenant-id", "host", "content-length"];

impl Forward {
    /// Copies the client's request headers for the origin and adds the
    /// tenant. Without an origin (`client_headers` is `None`: the embedded
    /// app reads no headers) nothing is copied.
    pub fn new(
        method: &str,
        target: &str,
        client_headers: Option<&Headers>,
        tenant: &str,
        body: Vec<u8>,
    ) -> Forward {
        let mut headers: Vec<(String, String)> = match client_headers {
            Some(h) => h
                .entries()
                .filter(|(name, _)| !STRIPPED.contains(&name.to_ascii_lowercase().as_str()))
                .collect(),
            None => Vec::new(),
        };
        headers.push(("x-tenant-id".into(), tenant.into()));
        Forward {
            method: method.to_string(),
            target: target.to_string(),
            headers,
            body,
        }
    }
}

impl OriginError {
    /// The class of failure the contract decides on.
    pub fn failure(&self) -> OriginFailure {
        match self {
            OriginError::Unreachable(_) => OriginFailure::Unreachable,
            OriginError::Timeout => OriginFailure::TimedOut,
        }
    }
}

fn unreachable(e: worker::Error) -> OriginError {
    OriginError::Unreachable(e.to_string())
}

impl Origin {
    /// The configured origin, if any (proxy mode).
    pub fn from_env(env: &Env, config: &Config) -> Option<Origin> {
        if let Ok(fetcher) = env.service("ORIGIN") {
            return Some(Origin::Service(fetcher));
        }
        config.origin_url.clone().map(Origin::Url)
    }

    fn url_for(&self, target: &str) -> String {
        match self {
            Origin::Service(_) => format!("https://origin{target}"),
            Origin::Url(base) => format!("{}{}", base.trim_end_matches('/'), target),
        }
    }

    /// Sends the request and reads the whole response within `timeout`.
    pub async fn forward(
        &self,
        fwd: &Forward,
        timeout: Duration,
    ) -> Result<AppResponse, OriginError> {
        let headers = Headers::new();
        for (name, value) in &fwd.headers {
            headers.append(name, value).map_err(unreachable)?;
        }
        let request = outbound_request(&self.url_for(&fwd.target), &fwd.method, headers, &fwd.body)
            .map_err(unreachable)?;
        let exchange = async {
            let response = match self {
                Origin::Service(fetcher) => fetcher.fetch_request(request).await,
                Origin::Url(_) => Fetch::Request(request).send().await,
            }
            .map_err(unreachable)?;
            read_app_response(response).await.map_err(unreachable)
        };
        match select(Box::pin(exchange), Box::pin(Delay::from(timeout))).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(OriginError::Timeout),
        }
    }
}
