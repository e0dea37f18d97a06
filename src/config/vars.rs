//! Reading one variable: the parsers every setting goes through.
//!
//! Role: turn one string the runtime hands over (a `[vars]` entry, a
//! `wrangler dev --var`, a secret) into a typed value, or an error that
//! names the variable. Pure: the caller supplies the lookup.
//!
//! What must stay true here: an absent variable takes the caller's default;
//! a present but invalid one is a [`ConfigError`] naming it and saying what
//! is wrong — never a silent default, and never the value of a secret.

/// A secret value: never printed (`Debug` shows `<secret>`).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<secret>")
    }
}

/// A secret read from the environment, held to a minimum length: a short
/// key is a configuration error, never a silent weak default. The error
/// never repeats the value.
pub(crate) fn secret(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    min_len: usize,
) -> Result<Option<SecretString>, ConfigError> {
    match get(name) {
        None => Ok(None),
        Some(v) if v.len() >= min_len => Ok(Some(SecretString(v))),
        Some(_) => Err(err(
            name,
            format!("the value is too short: at least {min_len} characters"),
        )),
    }
}

/// An invalid variable: its name and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.variable, self.message)
    }
}

pub(crate) fn err(variable: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        variable: variable.to_string(),
        message: message.into(),
    }
}

pub(crate) fn number(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let Some(raw) = get(name) else {
        return Ok(default);
    };
    let value: u64 = raw
        .trim()
        .parse()
        .map_err(|_| err(name, format!("{raw:?} is not a whole number")))?;
    if value < min || value > max {
        return Err(err(name, format!("{value} is outside {min}..={max}")));
    }
    Ok(value)
}

pub(crate) fn boolean(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: bool,
) -> Result<bool, ConfigError> {
    match get(name).as_deref().map(str::trim) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(err(name, format!("{other:?} is not true or false"))),
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub(crate) fn token_list(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: &str,
    allow_empty: bool,
) -> Result<Vec<String>, ConfigError> {
    let raw = get(name).unwrap_or_else(|| default.to_string());
    let mut items = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !item.chars().all(is_token_char) {
            return Err(err(name, format!("{item:?} is not a valid HTTP token")));
        }
        if !items.iter().any(|i: &String| i.eq_ignore_ascii_case(item)) {
            items.push(item.to_string());
        }
    }
    if items.is_empty() && !allow_empty {
        return Err(err(name, "the list is empty"));
    }
    Ok(items)
}

/// A comma-separated list of header names, lowercased (empty allowed).
pub(crate) fn header_list(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: &str,
) -> Result<Vec<String>, ConfigError> {
    Ok(token_list(get, name, default, true)?
        .into_iter()
        .map(|h| h.to_ascii_lowercase())
        .collect())
}

/// One of a closed set of words; absent is `default` (one of them).
pub(crate) fn choice<T: Copy>(
    get: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: &str,
    words: &[(&str, T)],
) -> Result<T, ConfigError> {
    let raw = get(name).unwrap_or_else(|| default.to_string());
    let word = raw.trim();
    if let Some((_, value)) = words.iter().find(|(w, _)| *w == word) {
        return Ok(*value);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let expected = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(err(name, format!("{word:?} is not {expected}")))
}
