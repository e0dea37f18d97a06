//! A protected response too large to store, streamed to its caller.
//!
//! Role: when the origin's body passes `MAX_STORED_BODY_BYTES`, the record
//! becomes a tombstone (docs/contract.md §2.5) and the body need not be
//! kept: the caller gets the status and headers at once and the body as it
//! arrives, while the gateway holds at most the first `cap + 1` bytes and
//! one chunk. The key is completed (as a tombstone) before the first byte
//! goes out (`super::protected`); a pump under `ctx.wait_until` then
//! carries the body.
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

use crate::platform::http::read_chunk;

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
