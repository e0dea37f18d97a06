//! Translating between the core's response values and workers-rs responses.
//!
//! Role: the only place that builds `worker::Response`s. It renders
//! [`AppResponse`] values that the contract decided; it decides nothing
//! (no status, no header, no problem is chosen here).
//!
//! What must stay true here: nothing here panics; a failure to build a
//! response degrades to a plain 500 rather than an `Err` on a request path.

use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::worker_sys::web_sys;
use worker::{Headers, Request, Response};

use crate::protocol::{is_null_body_status, AppResponse, Problem};

fn build(status: u16, headers: &[(String, String)], body: Vec<u8>) -> Response {
    // A status the Fetch API cannot carry (1xx, outside 200–599) must never
    // reach the runtime's Response constructor.
    if !(200..=599).contains(&status) {
        return last_resort();
    }
    let h = Headers::new();
    for (name, value) in headers {
        // Invalid header values are dropped rather than failing the response.
        let _ = h.append(name, value);
    }
    let response = if is_null_body_status(status) {
        Response::empty()
    } else {
        Response::from_bytes(body)
    };
    match response {
        Ok(r) => r.with_status(status).with_headers(h),
        Err(_) => last_resort(),
    }
}

/// A 500 with no body, for a response the runtime refused to build.
fn last_resort() -> Response {
    Response::builder().with_status(500).empty()
}

/// An application response, exactly as produced. Takes the response by
/// value so its body (up to the request limits) is moved, not copied.
pub fn app(response: AppResponse) -> Response {
    build(response.status, &response.headers, response.body)
}

/// A problem document.
pub fn problem(p: &Problem) -> Response {
    app(AppResponse::from(p))
}

/// A JSON document.
pub fn json<T: Serialize>(status: u16, value: &T) -> Response {
    app(AppResponse::json(status, value))
}

/// Builds an outbound request that carries `method` **verbatim** and,
/// unless the method is GET or HEAD (which the Fetch API forbids a body
/// on), the exact `body` bytes. Built on `web_sys` directly: worker 0.8.7's
/// `Method::from` maps every method it does not know (`PROPFIND`, `PURGE`,
/// …) to GET. A method the Fetch API refuses (`CONNECT`, `TRACE`, `TRACK`)
/// is an `Err`, which callers answer with `501 method-not-supported`.
pub fn outbound_request(
    url: &str,
    method: &str,
    headers: Headers,
    body: &[u8],
) -> worker::Result<Request> {
    outbound(url, method, headers, &js_sys::Uint8Array::from(body).into())
}

/// As [`outbound_request`], with the body a stream passed on as it arrives
/// (never read here).
pub fn outbound_streaming(
    url: &str,
    method: &str,
    headers: Headers,
    body: &web_sys::ReadableStream,
) -> worker::Result<Request> {
    outbound(url, method, headers, body.as_ref())
}

fn outbound(url: &str, method: &str, headers: Headers, body: &JsValue) -> worker::Result<Request> {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_headers(&headers.0);
    if method != "GET" && method != "HEAD" {
        init.set_body(body);
    }
    let request = web_sys::Request::new_with_str_and_init(url, &init)
        .map_err(|e| worker::Error::JsError(format!("{e:?}")))?;
    Ok(Request::from(request))
}

/// One request header, if present and readable.
pub fn header(req: &web_sys::Request, name: &str) -> Option<String> {
    req.headers().get(name).ok().flatten()
}

/// A request body, read with a bound.
pub enum Body {
    /// The whole body, at most the bound.
    Read(Vec<u8>),
    /// The body passed the bound; reading stopped there (the rest was
    /// never buffered). The reader, still open, for the caller to drain
    /// (see [`drain`]).
    TooLarge(web_sys::ReadableStreamDefaultReader),
}

/// Reads the request body. Without a `Content-Length` (`declared` is
/// `None`: chunked, or an unparsable value) the stream is read chunk by
/// chunk and given up as soon as it passes `max` (the reader is handed
/// back, for [`drain`]), so a client cannot make the isolate buffer more
/// than the limit. With one (already checked
/// against the limit by `contract::admission::admit`; workerd holds the
/// body to it), one `arrayBuffer()` and one copy into wasm. Either way the
/// caller still applies `contract::admission::check_body_length` to what
/// was read: the limit's rule lives there.
pub async fn body_within(
    req: &web_sys::Request,
    declared: Option<u64>,
    max: usize,
) -> Result<Body, JsValue> {
    if declared.is_some() {
        let buffer = JsFuture::from(req.array_buffer()?).await?;
        return Ok(Body::Read(js_sys::Uint8Array::new(&buffer).to_vec()));
    }
    let Some(stream) = req.body() else {
        return Ok(Body::Read(Vec::new()));
    };
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut bytes = Vec::new();
    while let Some(chunk) = read_chunk(&reader).await? {
        if bytes.len() + chunk.length() as usize > max {
            // Stop keeping it; the rest of the body is never buffered.
            return Ok(Body::TooLarge(reader));
        }
        append(&mut bytes, &chunk);
    }
    Ok(Body::Read(bytes))
}

/// The reader of a request body nobody has read yet (a `Content-Length`
/// refused before the body), to drain.
pub fn body_reader(req: &web_sys::Request) -> Option<web_sys::ReadableStreamDefaultReader> {
    let stream = req.body()?;
    if stream.locked() {
        return None;
    }
    Some(stream.get_reader().unchecked_into())
}

/// Reads and discards a refused request's body until it ends, `bound`
/// bytes have come, or `within` has passed, whichever is first, then
/// cancels what is left; the bytes read. Run while (or after) the refusal
/// is answered, it keeps the client's connection readable: a runtime that
/// stops reading a request body mid-upload resets the connection, and a
/// client still sending then never reads its answer.
pub async fn drain(
    reader: web_sys::ReadableStreamDefaultReader,
    bound: usize,
    within: std::time::Duration,
) -> (usize, bool) {
    use futures_util::future::{select, Either};
    let read = std::cell::Cell::new(0usize);
    let reading = async {
        while read.get() < bound {
            match read_chunk(&reader).await {
                Ok(Some(chunk)) => read.set(read.get() + chunk.length() as usize),
                Ok(None) => return true,
                Err(_) => break,
            }
        }
        false
    };
    let ended = match select(Box::pin(reading), Box::pin(worker::Delay::from(within))).await {
        Either::Left((ended, _)) => ended,
        Either::Right(_) => false,
    };
    let drained = (read.get(), ended);
    let _ = reader.cancel();
    drained
}

/// The runtime's `FixedLengthStream(length)`: a pipe whose readable side
/// makes a response carry `Content-Length: length` (a plain stream goes
/// out chunked, and a `Content-Length` header set on it is dropped).
fn fixed_length_stream(length: usize) -> Option<web_sys::TransformStream> {
    let class =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("FixedLengthStream")).ok()?;
    let class: js_sys::Function = class.dyn_into().ok()?;
    let args = js_sys::Array::of1(&JsValue::from_f64(length as f64));
    js_sys::Reflect::construct(&class, &args)
        .ok()
        .map(JsCast::unchecked_into)
}

/// `answer` (a small, whole answer) as a response whose body stays open
/// until the returned future ends it: status and headers — its
/// `Content-Length` among them, so the client knows the body is whole as
/// soon as it arrived — then the body, written at once, then `hold`
/// awaited, and only then the stream closed. `None` when no stream could
/// be made.
pub fn held_open(
    answer: &AppResponse,
    hold: impl std::future::Future<Output = ()>,
) -> Option<(Response, impl std::future::Future<Output = ()>)> {
    let pipe = fixed_length_stream(answer.body.len())?;
    let writer = pipe.writable().get_writer().ok()?;
    let headers = Headers::new();
    for (name, value) in &answer.headers {
        let _ = headers.append(name, value);
    }
    let response = Response::builder()
        .with_status(answer.status)
        .with_headers(headers)
        .stream(pipe.readable());
    let body = js_sys::Uint8Array::from(answer.body.as_slice());
    let finish = async move {
        let written = JsFuture::from(writer.write_with_chunk(&body));
        let (_, ()) = futures_util::future::join(written, hold).await;
        let _ = JsFuture::from(writer.close()).await;
    };
    Some((response, finish))
}

/// The headers of a response as the gateway passes them on: names
/// lowercased, hop-by-hop headers (which describe the origin's connection,
/// not the answer) dropped.
fn passed_headers(response: &Response) -> Vec<(String, String)> {
    response
        .headers()
        .entries()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .filter(|(n, _)| !crate::protocol::is_hop_by_hop(n))
        .collect()
}

/// A response body read with a bound.
pub enum Bounded {
    /// The whole response: its body was at most the bound.
    Whole(AppResponse),
    /// The body passed the bound: its status and headers, the first
    /// `bound + 1` bytes, and the rest of the body still to be read.
    Over {
        head: AppResponse,
        rest: web_sys::ReadableStreamDefaultReader,
    },
}

/// Reads a response's body up to `bound + 1` bytes: the whole response if
/// it ends within the bound, else what was read and a reader for the rest
/// (never buffered here). An `Err` is a body that broke off.
pub async fn read_bounded(response: Response, bound: usize) -> Result<Bounded, JsValue> {
    let status = response.status_code();
    let headers = passed_headers(&response);
    // A status the Fetch API cannot carry (a 101) must not be rebuilt into
    // a Response (workers-rs would panic): its answer is decided by status.
    if !crate::protocol::is_passable_status(status) || is_null_body_status(status) {
        return Ok(Bounded::Whole(AppResponse {
            status,
            headers,
            body: Vec::new(),
        }));
    }
    let raw: web_sys::Response = response.into();
    let stream = match raw.body() {
        Some(stream) => stream,
        _ => {
            return Ok(Bounded::Whole(AppResponse {
                status,
                headers,
                body: Vec::new(),
            }))
        }
    };
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut body = Vec::new();
    while body.len() <= bound {
        match read_chunk(&reader).await? {
            Some(chunk) => append(&mut body, &chunk),
            None => {
                return Ok(Bounded::Whole(AppResponse {
                    status,
                    headers,
                    body,
                }))
            }
        }
    }
    Ok(Bounded::Over {
        head: AppResponse {
            status,
            headers,
            body,
        },
        rest: reader,
    })
}

/// The next chunk of a stream (still in JS memory), or `None` at its end.
pub async fn read_chunk(
    reader: &web_sys::ReadableStreamDefaultReader,
) -> Result<Option<js_sys::Uint8Array>, JsValue> {
    let step = JsFuture::from(reader.read()).await?;
    let done = js_sys::Reflect::get(&step, &JsValue::from_str("done"))?
        .as_bool()
        .unwrap_or(true);
    if done {
        return Ok(None);
    }
    let value = js_sys::Reflect::get(&step, &JsValue::from_str("value"))?;
    Ok(Some(js_sys::Uint8Array::new(&value)))
}

/// Copies a chunk onto the end of `bytes` (one copy, out of JS memory).
fn append(bytes: &mut Vec<u8>, chunk: &js_sys::Uint8Array) {
    let start = bytes.len();
    bytes.resize(start + chunk.length() as usize, 0);
    chunk.copy_to(&mut bytes[start..]);
}

/// Passes a response on as it arrives: its status, its headers less the
/// hop-by-hop ones, and its body as a stream (never read here). `Err`:
/// the status, which the Fetch API cannot carry (1xx, outside 200–599).
pub fn pass_through(response: Response) -> Result<Response, u16> {
    let status = response.status_code();
    if !crate::protocol::is_passable_status(status) {
        return Err(status);
    }
    let headers = Headers::new();
    for (name, value) in passed_headers(&response) {
        let _ = headers.append(&name, &value);
    }
    let builder = Response::builder()
        .with_status(status)
        .with_headers(headers);
    if is_null_body_status(status) {
        return Ok(builder.empty());
    }
    let raw: web_sys::Response = response.into();
    Ok(match raw.body() {
        Some(stream) => builder.stream(stream),
        None => builder.empty(),
    })
}

/// A streaming response with `head`'s status and headers whose body is
/// what is written to the returned writer.
pub fn streaming(
    head: &AppResponse,
) -> worker::Result<(Response, web_sys::WritableStreamDefaultWriter)> {
    let pipe =
        web_sys::TransformStream::new().map_err(|e| worker::Error::JsError(format!("{e:?}")))?;
    let writer = pipe
        .writable()
        .get_writer()
        .map_err(|e| worker::Error::JsError(format!("{e:?}")))?;
    let headers = Headers::new();
    for (name, value) in &head.headers {
        let _ = headers.append(name, value);
    }
    let response = Response::builder()
        .with_status(head.status)
        .with_headers(headers)
        .stream(pipe.readable());
    Ok((response, writer))
}
