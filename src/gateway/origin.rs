//! Proxy mode: forwarding to the origin (docs/contract.md §2.6), with the origin timeout.
//!
//! Role: one place that talks to the application behind the gateway, by
//! service binding `ORIGIN` (preferred when both are set) or `ORIGIN_URL`.
//!
//! What must stay true here:
//! - The origin receives the method, the path+query as received, the client's
//!   headers minus `Authorization`, `Host` and any client `X-Tenant-Id`, plus
//!   the server's `X-Tenant-Id`, and the exact body bytes.
//!   `Idempotency-Key` is forwarded so the origin may dedupe too.
//! - Hop-by-hop headers (`Connection`, `Upgrade`, `Keep-Alive`, `TE`,
//!   `Transfer-Encoding`, `Trailer`, `Proxy-*`) are never forwarded, either
//!   way (`contract::proxy::is_hop_by_hop`).
//! - The method is forwarded verbatim; a request that cannot be built (a
//!   method the Fetch API refuses) is known *before* anything is claimed.
//! - "No answer at all" (the fetch threw), "headers but a broken body" and
//!   "no answer in time" are different outcomes: only the first is safe to
//!   retry (the caller releases); the origin ran in the other two.

use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{Delay, Env, Fetch, Fetcher, Headers, Request, Response};

use crate::config::Config;
use crate::contract::signature::{origin_signature, SIGNATURE_HEADER};
use crate::contract::OriginFailure;
use crate::platform::http::{
    outbound_request, outbound_streaming, pass_through, read_bounded, Bounded,
};
use crate::protocol::is_hop_by_hop;

/// Where the origin is.
pub enum Origin {
    Service(Fetcher),
    Url(String),
}

/// Why the origin produced no (complete) response.
#[derive(Debug)]
pub enum OriginError {
    /// The fetch failed without a response (throw, refused connection).
    Unreachable(String),
    /// The status and headers arrived, then reading the body failed.
    Incomplete(String),
    /// No complete response within `ORIGIN_TIMEOUT_SECONDS`.
    Timeout,
}

/// A request as the origin should receive it.
pub struct Forward {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// An unprotected, unsigned request's body, passed to the origin as it
    /// arrives instead of `body` (nothing needs to hold it).
    pub stream: Option<worker::worker_sys::web_sys::ReadableStream>,
}

/// Headers never forwarded from the client (hop-by-hop ones aside); a
/// client's own signature header would pass for the gateway's.
const STRIPPED: &[&str] = &[
    "authorization",
    "x-tenant-id",
    "host",
    "content-length",
    SIGNATURE_HEADER,
];

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
                .filter(|(name, _)| {
                    let name = name.to_ascii_lowercase();
                    !STRIPPED.contains(&name.as_str()) && !is_hop_by_hop(&name)
                })
                .collect(),
            None => Vec::new(),
        };
        headers.push(("x-tenant-id".into(), tenant.into()));
        Forward {
            method: method.to_string(),
            target: target.to_string(),
            headers,
            body,
            stream: None,
        }
    }
}

/// What signs forwarded requests (`ORIGIN_SIGNING_SECRET`): the secret and
/// the request's tenant.
pub struct Signer<'a> {
    pub secret: &'a str,
    pub tenant: &'a str,
    /// The header that carries the key (`IDEMPOTENCY_KEY_HEADER`, lowercased).
    pub key_header: &'a str,
}

impl Forward {
    /// Signs a prepared request right before it is sent (after any claim or
    /// wait, so `t` is the send time): sets `X-Idempotency-Signature:
    /// t=<unix seconds>,v1=<hex HMAC-SHA256>`.
    pub fn sign(
        &self,
        request: &Request,
        signer: &Signer<'_>,
        unix_seconds: u64,
    ) -> Result<(), String> {
        // The key's field (`Idempotency-Key`, or IDEMPOTENCY_KEY_HEADER's) as
        // the origin receives it ("" when absent).
        let key = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(signer.key_header))
            .map_or("", |(_, v)| v.as_str());
        let value = origin_signature(
            signer.secret,
            unix_seconds,
            signer.tenant,
            &self.method,
            &self.target,
            key,
            &self.body,
        );
        request
            .headers()
            .set(SIGNATURE_HEADER, &value)
            .map_err(|e| e.to_string())
    }
}

impl OriginError {
    /// The class of failure the contract decides on.
    pub fn failure(&self) -> OriginFailure {
        match self {
            OriginError::Unreachable(_) => OriginFailure::Unreachable,
            OriginError::Incomplete(_) => OriginFailure::Incomplete,
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

    /// Builds the outbound request, method verbatim. An `Err` (a method
    /// the Fetch API refuses, a header it will not carry) means nothing can
    /// be sent: callers answer `501 method-not-supported` before claiming.
    pub fn prepare(&self, fwd: &Forward) -> Result<Request, String> {
        let headers = Headers::new();
        for (name, value) in &fwd.headers {
            headers.append(name, value).map_err(|e| e.to_string())?;
        }
        let url = self.url_for(&fwd.target);
        match &fwd.stream {
            Some(stream) => outbound_streaming(&url, &fwd.method, headers, stream),
            None => outbound_request(&url, &fwd.method, headers, &fwd.body),
        }
        .map_err(|e| e.to_string())
    }

    /// Signs (when a signer is given) and sends a prepared request; the
    /// origin's response headers must arrive within `timeout`. A signature
    /// that cannot be set is a request that cannot be sent: no response at
    /// all.
    async fn exchange(
        &self,
        request: Request,
        fwd: &Forward,
        signer: Option<&Signer<'_>>,
    ) -> Result<Response, OriginError> {
        if let Some(signer) = signer {
            let now = (crate::platform::now_ms() / 1000).max(0) as u64;
            fwd.sign(&request, signer, now)
                .map_err(OriginError::Unreachable)?;
        }
        match self {
            Origin::Service(fetcher) => fetcher.fetch_request(request).await,
            Origin::Url(_) => Fetch::Request(request).send().await,
        }
        .map_err(unreachable)
    }

    /// A protected request: the response read within `timeout` up to
    /// `bound + 1` body bytes (the whole response when it ends within the
    /// bound; else its head, those bytes and the rest, to stream).
    pub async fn send(
        &self,
        request: Request,
        fwd: &Forward,
        signer: Option<&Signer<'_>>,
        timeout: Duration,
        bound: usize,
    ) -> Result<Bounded, OriginError> {
        let exchange = async {
            let response = self.exchange(request, fwd, signer).await?;
            read_bounded(response, bound)
                .await
                .map_err(|e| OriginError::Incomplete(format!("{e:?}")))
        };
        match select(Box::pin(exchange), Box::pin(Delay::from(timeout))).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(OriginError::Timeout),
        }
    }

    /// An unprotected request: the response passed on as a stream once its
    /// headers arrived within `timeout` (the body is never read here).
    /// `Ok(Err(status))`: a status that cannot be passed on.
    pub async fn send_streaming(
        &self,
        request: Request,
        fwd: &Forward,
        signer: Option<&Signer<'_>>,
        timeout: Duration,
    ) -> Result<Result<Response, u16>, OriginError> {
        let exchange = self.exchange(request, fwd, signer);
        match select(Box::pin(exchange), Box::pin(Delay::from(timeout))).await {
            Either::Left((result, _)) => result.map(pass_through),
            Either::Right(_) => Err(OriginError::Timeout),
        }
    }
}

/// What signs a forwarded request, when `ORIGIN_SIGNING_SECRET` is set.
pub(crate) fn signer<'a>(config: &'a crate::config::Config, tenant: &'a str) -> Option<Signer<'a>> {
    config.origin_signing_secret.as_ref().map(|secret| Signer {
        secret: secret.expose(),
        tenant,
        key_header: &config.idempotency_key_header,
    })
}
