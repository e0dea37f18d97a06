//! Request targets: the path plus query of a URL, exactly as received.
//!
//! Role: cut the target out of the absolute URL the runtime hands a Worker
//! or a Durable Object, without parsing or re-serialising it. The gateway
//! fingerprints the target verbatim (docs/contract.md §2.4) and routes on
//! its path; the object routes its RPC calls on its path. Pure.
//!
//! What must stay true here: the target is a slice of the URL string — no
//! decoding, no dot-segment removal, no reordering — so the fingerprint
//! sees what the client sent. (Parsing with the `url` crate would also put
//! its IDNA tables in the bundle.)

/// Path plus query of an absolute URL exactly as the runtime hands it over:
/// the string with scheme and authority cut off and any fragment dropped.
pub fn target_of(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let target = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    target.split('#').next().unwrap_or("/")
}

/// The path of a target (without its query).
pub fn path_of(target: &str) -> &str {
    target.split('?').next().unwrap_or("/")
}
