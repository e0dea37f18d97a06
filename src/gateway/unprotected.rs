//! A request run without the ledger (no key and `IDEMPOTENCY_REQUIRED=false`,
//! a method not protected, or `FAILURE_POLICY=open` with the object
//! certainly not reached): on the origin in proxy mode, streamed through
//! since nothing is stored, else on the embedded application.

use std::time::Duration;

use worker::Response;

use super::origin::{Forward, Origin};
use super::reads::store_unavailable;
use super::settings::Tenancy;
use crate::config::Config;
use crate::contract::proxy;
use crate::platform::client::LedgerClient;
use crate::platform::http;

/// Runs a request without the ledger: on the origin in proxy mode, else on
/// the embedded application.
pub(super) async fn run_unprotected(who: &Tenancy, fwd: &Forward) -> Response {
    match &who.origin {
        Some(origin) => forward_unprotected(origin, who.config(), &who.tenant, fwd).await,
        None => match who.base() {
            Ok(client) => embedded_unprotected(client, fwd).await,
            // The embedded application lives in the object itself.
            Err(e) => store_unavailable(e),
        },
    }
}

async fn forward_unprotected(
    origin: &Origin,
    config: &Config,
    tenant: &str,
    fwd: &Forward,
) -> Response {
    let Ok(request) = origin.prepare(fwd) else {
        return http::app(proxy::not_forwardable(&fwd.method).0);
    };
    let timeout = Duration::from_secs(config.origin_timeout_seconds);
    let signer = super::origin::signer(config, tenant);
    // Unprotected: nothing is stored, so the answer streams through.
    match origin
        .send_streaming(request, fwd, signer.as_ref(), timeout)
        .await
    {
        Ok(Ok(response)) => response,
        Ok(Err(status)) => http::app(proxy::not_passable(status)),
        Err(e) => http::app(proxy::unprotected_answer(e.failure())),
    }
}

async fn embedded_unprotected(client: &LedgerClient, fwd: &Forward) -> Response {
    match client.app(&fwd.method, &fwd.target, &fwd.body).await {
        Ok(r) => r,
        Err(e) => store_unavailable(&e),
    }
}
