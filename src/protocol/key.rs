//! Parsing the `Idempotency-Key` field (docs/contract.md §2.3).
//!
//! Role: turn the one header value the runtime hands us into a validated key,
//! or say precisely why it is refused. Pure: no I/O, no workers-rs.
//!
//! What must stay true here:
//! - Two forms are accepted: an RFC 9651 sf-string (`"..."` with `\"` and `\\`
//!   escapes, parameters after `;` ignored) and a bare value (the raw field
//!   value, optional whitespace trimmed).
//! - The runtime merges repeated field lines into one value joined by `", "`.
//!   So a top-level comma means "more than one key" and is refused: a bare key
//!   can therefore never contain a comma; a quoted one can.
//! - The key itself is 1–255 characters, each 0x20–0x7E.

use std::fmt;

pub use super::limits::MAX_KEY_LEN;

/// Why a key was refused. Every variant renders as a `400
/// idempotency-key-invalid` problem whose detail is the `Display` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The (unescaped) key is empty.
    Empty,
    /// The key is longer than [`MAX_KEY_LEN`] characters.
    TooLong(usize),
    /// A character outside 0x20–0x7E.
    NonPrintable,
    /// A top-level comma: several field lines were sent (the runtime merged them).
    Multiple,
    /// A quoted key whose closing quote never came.
    Unterminated,
    /// A backslash followed by something other than `"` or `\`.
    BadEscape,
    /// Something after the closing quote that is not a parameter list.
    TrailingGarbage,
}

impl KeyError {
    /// A stable code for the refusal (shared with the JS client's
    /// `parseIdempotencyKey`, and with tests/fixtures/idempotency-keys.json).
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::Empty => "empty",
            KeyError::TooLong(_) => "too_long",
            KeyError::NonPrintable => "non_printable",
            KeyError::Multiple => "multiple",
            KeyError::Unterminated => "unterminated",
            KeyError::BadEscape => "bad_escape",
            KeyError::TrailingGarbage => "trailing_garbage",
        }
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Empty => write!(f, "the Idempotency-Key is empty"),
            KeyError::TooLong(n) => write!(
                f,
                "the Idempotency-Key is {n} characters long; at most {MAX_KEY_LEN} are allowed"
            ),
            KeyError::NonPrintable => write!(
                f,
                "the Idempotency-Key may contain only printable ASCII characters (0x20-0x7E)"
            ),
            KeyError::Multiple => write!(
                f,
                "more than one Idempotency-Key was sent (a bare key may not contain a comma; quote it as an sf-string)"
            ),
            KeyError::Unterminated => write!(f, "the quoted Idempotency-Key has no closing quote"),
            KeyError::BadEscape => write!(
                f,
                "the quoted Idempotency-Key has an escape other than \\\" or \\\\"
            ),
            KeyError::TrailingGarbage => write!(
                f,
                "the quoted Idempotency-Key is followed by something that is not a parameter"
            ),
        }
    }
}

/// Optional whitespace of RFC 9110: space and horizontal tab.
fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_printable(c: char) -> bool {
    ('\x20'..='\x7e').contains(&c)
}

/// Parses one `Idempotency-Key` field value (as merged by the runtime).
///
/// Returns the key the client meant: the unescaped sf-string, or the trimmed
/// bare value.
pub fn parse_idempotency_key(raw: &str) -> Result<String, KeyError> {
    let value = raw.trim_matches(is_ows);
    let key = if let Some(rest) = value.strip_prefix('"') {
        let (key, after) = parse_sf_string_body(rest)?;
        check_parameters(after)?;
        key
    } else {
        if value.contains(',') {
            return Err(KeyError::Multiple);
        }
        value.to_string()
    };
    validate_key(&key)?;
    Ok(key)
}

/// Checks the key rules shared by both forms (and by the object's RPC, which
/// must never trust a caller to have parsed the header).
pub fn validate_key(key: &str) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if !key.chars().all(is_printable) {
        return Err(KeyError::NonPrintable);
    }
    // All characters are ASCII here, so bytes == characters.
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong(key.len()));
    }
    Ok(())
}

/// Reads an sf-string body after its opening quote. Returns the unescaped
/// string and what follows the closing quote.
fn parse_sf_string_body(input: &str) -> Result<(String, &str), KeyError> {
    let mut out = String::new();
    let mut chars = input.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some(_) => return Err(KeyError::BadEscape),
                None => return Err(KeyError::Unterminated),
            },
            '"' => return Ok((out, &input[i + 1..])),
            c if is_printable(c) => out.push(c),
            _ => return Err(KeyError::NonPrintable),
        }
    }
    Err(KeyError::Unterminated)
}

/// Accepts RFC 9651 parameters (`;key` or `;key=bare-item`, any number) and
/// ignores them. A comma at this level means a second list member, i.e. a
/// second field line.
fn check_parameters(mut rest: &str) -> Result<(), KeyError> {
    loop {
        rest = rest.trim_start_matches(is_ows);
        if rest.is_empty() {
            return Ok(());
        }
        if rest.starts_with(',') {
            return Err(KeyError::Multiple);
        }
        let Some(param) = rest.strip_prefix(';') else {
            return Err(KeyError::TrailingGarbage);
        };
        let param = param.trim_start_matches(' ');
        // param-key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
        let key_len = param
            .char_indices()
            .take_while(|&(i, c)| {
                c.is_ascii_lowercase()
                    || c == '*'
                    || (i > 0 && (c.is_ascii_digit() || matches!(c, '_' | '-' | '.')))
            })
            .count();
        if key_len == 0 {
            return Err(KeyError::TrailingGarbage);
        }
        rest = &param[key_len..];
        if let Some(value) = rest.strip_prefix('=') {
            rest = skip_bare_item(value)?;
        }
    }
}

/// Skips one bare item (string, display string, token, number, boolean,
/// date or byte sequence) and returns what follows it.
fn skip_bare_item(input: &str) -> Result<&str, KeyError> {
    // sf-string, or RFC 9651's display string `%"..."` (percent-encoded,
    // so skipping it as a string is exact).
    if let Some(body) = input
        .strip_prefix('"')
        .or_else(|| input.strip_prefix("%\""))
    {
        let (_, after) = parse_sf_string_body(body)?;
        return Ok(after);
    }
    let end = input
        .find(|c: char| c == ';' || c == ',' || is_ows(c))
        .unwrap_or(input.len());
    let item = &input[..end];
    // Token, integer, decimal, boolean (`?1`), byte sequence (`:...:`) and
    // RFC 9651 date (`@1659578233`) characters.
    let allowed = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~:/?=@".contains(c);
    if item.is_empty() || !item.chars().all(allowed) {
        return Err(KeyError::TrailingGarbage);
    }
    Ok(&input[end..])
}
