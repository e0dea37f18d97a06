//! Stored responses (`protocol::response`): bodies round-trip as exact
//! bytes, only allow-listed headers are stored (never `set-cookie`), an
//! oversized body becomes a tombstone, null-body statuses store no body.

use idempotency_ledger::protocol::response::*;

fn policy(max: usize) -> CapturePolicy {
    CapturePolicy {
        stored_headers: vec![
            "content-type".into(),
            "location".into(),
            "set-cookie".into(),
        ],
        max_stored_body_bytes: max,
    }
}

fn response(status: u16, body: &[u8]) -> AppResponse {
    AppResponse {
        status,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("set-cookie".into(), "session=1".into()),
            ("x-request-id".into(), "abc".into()),
        ],
        body: body.to_vec(),
    }
}

#[test]
fn only_allowlisted_headers_are_stored_and_never_set_cookie() {
    let s = StoredResponse::capture(&response(201, b"{}"), &policy(10));
    assert_eq!(
        s.headers,
        vec![("content-type".to_string(), "application/json".to_string())]
    );
    assert_eq!(s.body.as_deref(), Some(&b"{}"[..]));
}

#[test]
fn oversized_body_makes_a_tombstone() {
    let s = StoredResponse::capture(&response(200, &[7u8; 11]), &policy(10));
    assert!(!s.retained());
    assert_eq!(s.status, 200);
    let at_limit = StoredResponse::capture(&response(200, &[7u8; 10]), &policy(10));
    assert!(at_limit.retained());
}

#[test]
fn null_body_statuses_store_no_body() {
    for status in [204, 205, 304] {
        let s = StoredResponse::capture(&response(status, b"ignored"), &policy(10));
        assert_eq!(s.body, Some(Vec::new()), "status {status}");
    }
}

#[test]
fn bodies_round_trip_through_json_as_exact_bytes() {
    let bytes: Vec<u8> = (0..=255u8).collect();
    let s = StoredResponse {
        status: 200,
        headers: vec![],
        body: Some(bytes.clone()),
    };
    let json = serde_json::to_string(&s).unwrap();
    let back: StoredResponse = serde_json::from_str(&json).unwrap();
    assert_eq!(back.body, Some(bytes));
}
