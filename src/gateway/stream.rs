//! A protected response too large to store, streamed to its caller.
//!
//! Role: when the origin's body passes `MAX_STORED_BODY_BYTES`, the record
//! becomes a tombstone (docs/contract.md §2.5) and the body need not be
//! kept: the caller gets the status and headers at once and the body as it
//! arrives, while the gateway holds at most the first `cap + 1` bytes and
//! one chunk. The key is completed (as a tombstone) before the first byte
//! goes out ([`Protected::streamed`], which settles the key as proxy mode
//! decided and then streams); a pump under `ctx.wait_until` then carries
//! the body.
//!
//! What must stay true here:
//! - Memory per request is bounded by the cap, not by the origin's body:
//!   the pump writes each chunk to the caller's stream and waits for it to
//!   be taken (the stream's backpressure) before reading the next.
//! - A caller that goes away does not stop the pump: it reads the origin's
//!   body to its end (dropping it).
//! - A body that breaks off changes nothing in the ledger (the key is
//!   already a tombstone); the caller's stream is aborted.

use wasm_bindgen::JsValue;
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::Response;

use super::protected::Protected;
use crate::contract::proxy::{self, AfterOrigin, Settle};
use crate::contract::{Disposition, OriginFailure};
use crate::fields;
use crate::ledger::Grant;
use crate::platform::client::LedgerClient;
use crate::platform::http::{self, read_chunk};
use crate::platform::log;

impl Protected<'_> {
    /// A response over `MAX_STORED_BODY_BYTES`, settled as `after` decided:
    /// completed as a tombstone at once — before the caller gets its first
    /// byte, so from then on no retry can run it again, whatever becomes
    /// of the stream — then streamed to the caller (see [`super::stream`]),
    /// the pump under `ctx.wait_until`; or, a 5xx under `RELEASE_ON_5XX`,
    /// released at once (as [`Self::settle`] releases) and streamed.
    pub(super) async fn streamed(
        &self,
        client: &LedgerClient,
        grant: Grant<'_>,
        after: AfterOrigin,
        rest: worker::worker_sys::web_sys::ReadableStreamDefaultReader,
    ) -> (Response, Disposition) {
        let AfterOrigin {
            settle,
            reply,
            outcome,
        } = after;
        if let Settle::Keep = settle {
            // Not a response to pass on (read_bounded answers those whole):
            // refused, the claim kept.
            return (http::app(reply), outcome);
        }
        let (response, writer) = match http::streaming(&reply) {
            Ok(pair) => pair,
            Err(e) => {
                // No stream to answer with: the claim is kept (the origin ran).
                log::error(
                    "idempotency.stream_failed",
                    fields! {"error" => e.to_string()},
                );
                let failed =
                    proxy::after_origin(Err(OriginFailure::Incomplete), false, self.config);
                return (http::app(failed.reply), failed.outcome);
            }
        };
        // The tombstone (or the release) lands before the first byte goes
        // out, as the JS middleware's captureBounded: a pump that outlives
        // waitUntil or the lease, or a body that breaks off, changes
        // nothing from here on.
        let outcome = self.settle(client, grant, settle, outcome).await;
        let key = self.key.to_string();
        let prefix = reply.body;
        self.ctx.wait_until(async move {
            if let Err(e) = pump(prefix, rest, writer).await {
                // The record stays what it was settled as (a tombstone).
                log::warn(
                    "idempotency.origin_response_incomplete",
                    fields! {"error" => e, "key" => log::short_hash(&key)},
                );
            }
        });
        (response, outcome)
    }
}

/// Writes one chunk; `false` once the caller's stream no longer takes any.
async fn write(writer: &web_sys::WritableStreamDefaultWriter, chunk: &js_sys::Uint8Array) -> bool {
    JsFuture::from(writer.write_with_chunk(chunk)).await.is_ok()
}

/// Carries `prefix` and then the rest of the origin's body to `writer`,
/// to the end. `Ok` when the whole body arrived (whether or not the caller
/// stayed), `Err` when the origin's body broke off.
pub async fn pump(
    prefix: Vec<u8>,
    rest: web_sys::ReadableStreamDefaultReader,
    writer: web_sys::WritableStreamDefaultWriter,
) -> Result<(), String> {
    // The origin's chunks go on as they came (never copied into wasm).
    let mut caller = write(&writer, &js_sys::Uint8Array::from(prefix.as_slice())).await;
    drop(prefix);
    loop {
        match read_chunk(&rest).await {
            Ok(Some(chunk)) => {
                if caller {
                    caller = write(&writer, &chunk).await;
                }
            }
            Ok(None) => {
                if caller {
                    let _ = JsFuture::from(writer.close()).await;
                }
                return Ok(());
            }
            Err(e) => {
                let _ = writer.abort_with_reason(&JsValue::from_str("the origin's body broke off"));
                return Err(format!("{e:?}"));
            }
        }
    }
}
