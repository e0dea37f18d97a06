//! Request fingerprints (`protocol::fingerprint`): the same request gives
//! the same fingerprint, each differing component is named, a tampered
//! digest is not well formed.

use idempotency_ledger::protocol::fingerprint::*;

fn fp(method: &str, target: &str, ct: Option<&str>, body: &[u8]) -> Fingerprint {
    let headers = vec![("content-type".to_string(), ct.map(String::from))];
    Fingerprint::of(&RequestParts {
        method,
        target,
        headers: &headers,
        body,
    })
}

#[test]
fn same_request_same_fingerprint() {
    let a = fp("post", "/v1/orders?a=1", Some("application/json"), b"{}");
    let b = fp("POST", "/v1/orders?a=1", Some("application/json"), b"{}");
    assert_eq!(a, b, "method is uppercased");
    assert!(a.is_well_formed());
    assert!(a.differs_from(&b).is_empty());
}

#[test]
fn each_component_is_named_when_it_differs() {
    let a = fp("POST", "/v1/orders", Some("application/json"), b"{\"a\":1}");
    assert_eq!(
        a.differs_from(&fp(
            "POST",
            "/v1/orders",
            Some("application/json"),
            b"{\"a\": 1}"
        )),
        vec!["body"]
    );
    assert_eq!(
        a.differs_from(&fp(
            "PATCH",
            "/v1/other",
            Some("application/json"),
            b"{\"a\":1}"
        )),
        vec!["method", "target"]
    );
    assert_eq!(
        a.differs_from(&fp("POST", "/v1/orders", Some("text/plain"), b"{\"a\":1}")),
        vec!["header:content-type"]
    );
}

#[test]
fn query_is_not_reordered_and_absent_header_differs_from_empty() {
    let a = fp("POST", "/x?a=1&b=2", None, b"");
    assert_eq!(
        a.differs_from(&fp("POST", "/x?b=2&a=1", None, b"")),
        vec!["target"]
    );
    assert_eq!(
        a.differs_from(&fp("POST", "/x?a=1&b=2", Some(""), b"")),
        vec!["header:content-type"]
    );
}

#[test]
fn tampered_digest_is_not_well_formed() {
    let mut a = fp("POST", "/x", None, b"1");
    a.components[0].digest = "0".repeat(64);
    assert!(!a.is_well_formed());
}
