//! The `Idempotency-Key` field parser (`protocol::key`, RFC 8941 sf-string):
//! bare and quoted forms, escapes, parameters, merged lines and every
//! refusal. The shared vectors are `vectors.rs`; the differential test
//! against `sfv` is `fuzz.rs`.

use idempotency_ledger::protocol::key::*;

#[test]
fn rfc9651_dates_and_display_strings_are_valid_parameters() {
    assert_eq!(parse_idempotency_key("\"k\";d=@1659578233").unwrap(), "k");
    assert_eq!(parse_idempotency_key("\"k\";t=%\"f%c3%bc\"").unwrap(), "k");
}

#[test]
fn bare_and_quoted_forms_give_the_same_key() {
    assert_eq!(parse_idempotency_key("abc-123").unwrap(), "abc-123");
    assert_eq!(parse_idempotency_key("\"abc-123\"").unwrap(), "abc-123");
    assert_eq!(parse_idempotency_key("  abc-123\t").unwrap(), "abc-123");
}

#[test]
fn quoted_keys_unescape_and_may_contain_commas() {
    assert_eq!(parse_idempotency_key(r#""a\"b\\c""#).unwrap(), r#"a"b\c"#);
    assert_eq!(parse_idempotency_key(r#""a, b""#).unwrap(), "a, b");
}

#[test]
fn parameters_after_a_quoted_key_are_ignored() {
    assert_eq!(parse_idempotency_key(r#""k1";v=1"#).unwrap(), "k1");
    assert_eq!(parse_idempotency_key(r#""k1"; a; b="x;y""#).unwrap(), "k1");
    assert_eq!(
        parse_idempotency_key(r#""k1";x=?1"#).unwrap(),
        "k1",
        "boolean bare item"
    );
}

#[test]
fn merged_field_lines_are_refused() {
    assert_eq!(parse_idempotency_key("a, b"), Err(KeyError::Multiple));
    assert_eq!(
        parse_idempotency_key(r#""a", "b""#),
        Err(KeyError::Multiple)
    );
    assert_eq!(
        parse_idempotency_key(r#""a";p=1, "b""#),
        Err(KeyError::Multiple)
    );
}

#[test]
fn malformed_sf_strings_are_refused() {
    assert_eq!(parse_idempotency_key("\"abc"), Err(KeyError::Unterminated));
    assert_eq!(parse_idempotency_key(r#""a\nb""#), Err(KeyError::BadEscape));
    assert_eq!(
        parse_idempotency_key(r#""ab"x"#),
        Err(KeyError::TrailingGarbage)
    );
    assert_eq!(
        parse_idempotency_key(r#""ab";"#),
        Err(KeyError::TrailingGarbage)
    );
}

#[test]
fn empty_long_and_non_printable_keys_are_refused() {
    assert_eq!(parse_idempotency_key(""), Err(KeyError::Empty));
    assert_eq!(parse_idempotency_key("\"\""), Err(KeyError::Empty));
    assert_eq!(parse_idempotency_key("   "), Err(KeyError::Empty));
    let max = "k".repeat(MAX_KEY_LEN);
    assert_eq!(parse_idempotency_key(&max).unwrap(), max);
    let long = "k".repeat(MAX_KEY_LEN + 1);
    assert_eq!(parse_idempotency_key(&long), Err(KeyError::TooLong(256)));
    assert_eq!(
        parse_idempotency_key("a\u{1}b"),
        Err(KeyError::NonPrintable)
    );
    assert_eq!(
        parse_idempotency_key("caf\u{e9}"),
        Err(KeyError::NonPrintable)
    );
    assert_eq!(parse_idempotency_key("a\tb"), Err(KeyError::NonPrintable));
    assert_eq!(
        parse_idempotency_key("\"a\u{7f}\""),
        Err(KeyError::NonPrintable)
    );
}
