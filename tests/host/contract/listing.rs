//! The key listing's query and cursor (docs/contract.md §2.7): what
//! `GET /v1/idempotency-keys` accepts, and what it refuses before any
//! object is asked.

use super::*;
use idempotency_ledger::contract::listing::{
    decode_cursor, encode_cursor, list_answer, parse_list_query, CursorSeal, ListRequest,
};
use idempotency_ledger::ledger::{KeyState, ListPage, ListQuery, Position};

/// The seal of tenant `acme`'s cursors under a test secret.
fn seal() -> CursorSeal {
    CursorSeal::new(b"a deployment secret", "acme")
}

fn position(sweep_at: i64, key: &str) -> Position {
    Position {
        sweep_at,
        key: key.into(),
    }
}

fn refused(query: &str) -> Value {
    let problem = parse_list_query(query, &seal()).expect_err(query);
    let answer = AppResponse::from(&problem);
    let doc = expect_problem(&answer, 400, "invalid-query");
    assert_eq!(
        header(&answer, "x-should-retry"),
        Some("false"),
        "no retry changes it"
    );
    doc
}

#[test]
fn the_listing_defaults_to_every_state_twenty_keys_from_the_start() {
    for query in ["", "&", "&&"] {
        assert_eq!(
            parse_list_query(query, &seal()).unwrap(),
            ListRequest {
                state: None,
                limit: 20,
                after: None
            },
            "{query:?}"
        );
    }
    let r = parse_list_query("state=in_flight&limit=100", &seal()).unwrap();
    assert_eq!((r.state, r.limit), (Some(KeyState::InFlight), 100));
    assert_eq!(
        parse_list_query("limit=1&state=released", &seal())
            .unwrap()
            .limit,
        1
    );
    // Percent-encoded names and values are read decoded.
    assert_eq!(
        parse_list_query("st%61te=completed", &seal())
            .unwrap()
            .state,
        Some(KeyState::Completed)
    );
}

#[test]
fn bad_parameters_are_invalid_query_problems_naming_what_is_wrong() {
    for (query, says) in [
        ("state=done", "state must be"),
        ("state=", "state must be"),
        ("state=IN_FLIGHT", "state must be"),
        ("state", "state must be"),
        ("limit=0", "limit must be"),
        ("limit=101", "limit must be"),
        ("limit=abc", "limit must be"),
        ("limit=", "limit must be"),
        ("limit=+5", "limit must be"),
        ("limit=-1", "limit must be"),
        ("limit=5.0", "limit must be"),
        ("limit=99999999999", "limit must be"),
        ("limit=5&limit=5", "once"),
        ("state=completed&state=completed", "once"),
        ("cursor=a&cursor=a", "once"),
        ("page=2", "unknown query parameter"),
        ("limit=5&offset=10", "unknown query parameter"),
        ("cursor=", "cursor"),
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=%FF", "percent-encoded"),
    ] {
        let doc = refused(query);
        let detail = doc["detail"].as_str().unwrap();
        assert!(detail.contains(says), "{query}: {detail}");
    }
}

#[test]
fn a_cursor_round_trips_and_continues_only_the_listing_it_was_made_for() {
    let at = position(1_800_000_000_000, "order 7f3a/é?");
    // A key is printable ASCII; this one is not, so it is refused below.
    assert!(decode_cursor(&encode_cursor(None, &at, &seal()), &seal()).is_none());
    let at = position(1_800_000_000_000, "order 7f3a/x?&=");
    for state in [
        None,
        Some(KeyState::InFlight),
        Some(KeyState::Completed),
        Some(KeyState::Released),
    ] {
        let cursor = encode_cursor(state, &at, &seal());
        assert!(
            cursor
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "base64url: {cursor}"
        );
        assert_eq!(decode_cursor(&cursor, &seal()), Some((state, at.clone())));
        let query = match state {
            Some(s) => format!("state={}&cursor={cursor}", s.as_str()),
            None => format!("cursor={cursor}"),
        };
        assert_eq!(
            parse_list_query(&query, &seal()).unwrap().after,
            Some(at.clone())
        );
        // With another state: refused, naming the one it was made for.
        let other = if state == Some(KeyState::Released) {
            "completed"
        } else {
            "released"
        };
        let doc = refused(&format!("state={other}&cursor={cursor}"));
        assert!(doc["detail"].as_str().unwrap().contains("same state"));
    }
    let cursor = encode_cursor(Some(KeyState::InFlight), &at, &seal());
    let doc = refused(&format!("cursor={cursor}"));
    assert!(doc["detail"].as_str().unwrap().contains("state=in_flight"));
}

#[test]
fn an_edited_or_truncated_cursor_is_refused() {
    let cursor = encode_cursor(None, &position(-5, "k"), &seal());
    assert!(decode_cursor(&cursor, &seal()).is_some());
    let bytes = cursor.as_bytes();
    for i in 0..bytes.len() {
        for replacement in [b'A', b'z', b'-'] {
            if bytes[i] == replacement {
                continue;
            }
            let mut edited = bytes.to_vec();
            edited[i] = replacement;
            let edited = String::from_utf8(edited).unwrap();
            // Every edit either breaks the encoding or the check digest
            // (the last character's low bits may be unused padding).
            if let Some(found) = decode_cursor(&edited, &seal()) {
                assert_eq!(i, bytes.len() - 1, "{edited} decoded as {found:?}");
                assert_eq!(found, (None, position(-5, "k")));
            }
        }
    }
    for cut in 0..cursor.len() {
        assert!(decode_cursor(&cursor[..cut], &seal()).is_none(), "{cut}");
    }
    assert!(decode_cursor(&format!("{cursor}AA"), &seal()).is_none());
    assert!(decode_cursor(&format!("{cursor}="), &seal()).is_none());
}

#[test]
fn the_answer_is_the_lookup_shape_per_key_and_an_opaque_next_cursor() {
    let l = ledger();
    l.claim("a", &fp("a"), &policy(), 1_000).unwrap();
    l.claim("b", &fp("b"), &policy(), 2_000).unwrap();
    let page = l
        .list(
            &ListQuery {
                state: None,
                limit: 1,
                after: None,
            },
            3_000,
        )
        .unwrap();
    let answer = list_answer(None, &page, &seal());
    assert_eq!(answer.status, 200);
    let doc: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(
        doc["keys"],
        serde_json::json!([serde_json::to_value(l.lookup("b", 3_000).unwrap().unwrap()).unwrap()])
    );
    let cursor = doc["next_cursor"].as_str().unwrap();
    let next = parse_list_query(&format!("cursor={cursor}&limit=1"), &seal()).unwrap();
    let page = l
        .list(
            &ListQuery {
                state: None,
                limit: 1,
                after: next.after,
            },
            3_000,
        )
        .unwrap();
    let last: Value = serde_json::from_slice(&list_answer(None, &page, &seal()).body).unwrap();
    assert_eq!(last["keys"][0]["key"], "a");
    assert_eq!(last["next_cursor"], Value::Null);
    assert_eq!(
        serde_json::from_slice::<Value>(&list_answer(None, &ListPage::default(), &seal()).body)
            .unwrap(),
        serde_json::json!({"keys": [], "next_cursor": null})
    );
}

#[test]
fn a_cursor_reveals_nothing_and_is_bound_to_its_tenant_and_secret() {
    let key = "order-7f3a-very-recognisable-key";
    let at = position(1_800_000_000_000, key);
    let cursor = encode_cursor(Some(KeyState::Completed), &at, &seal());
    let bytes = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        cursor.as_bytes(),
    )
    .unwrap();
    // Neither the key nor any 4 bytes of it, nor the time, appear in the cursor.
    for window in key.as_bytes().windows(4) {
        assert!(
            !bytes.windows(4).any(|w| w == window),
            "{:?} leaked",
            std::str::from_utf8(window)
        );
    }
    assert!(!bytes
        .windows(8)
        .any(|w| w == at.sweep_at.to_be_bytes().as_slice()));
    assert!(!cursor.contains("order"));
    // Another tenant, or another deployment secret, cannot open it.
    let other_tenant = CursorSeal::new(b"a deployment secret", "globex");
    let other_secret = CursorSeal::new(b"another secret", "acme");
    assert!(decode_cursor(&cursor, &other_tenant).is_none());
    assert!(decode_cursor(&cursor, &other_secret).is_none());
    assert_eq!(
        decode_cursor(&cursor, &seal()),
        Some((Some(KeyState::Completed), at))
    );
    // The secret: LOG_HASH_KEY when set, else API_TOKENS.
    assert_ne!(
        CursorSeal::secret_of(Some("log-hash-key-16+"), "{}"),
        CursorSeal::secret_of(None, "{}")
    );
    assert_eq!(
        CursorSeal::secret_of(None, "{\"a\":\"b\"}"),
        CursorSeal::secret_of(None, "{\"a\":\"b\"}")
    );
}
