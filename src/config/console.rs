//! Where the operator console is served: `CONSOLE` and `CONSOLE_HOST`
//! (docs/configuration.md, docs/operations.md#console).
//!
//! Role: read the two variables, and answer the one question the JS entry
//! (through `consoleServed`) and the gateway ask of them — is the console
//! served for a request to this host, in this mode? Pure.
//!
//! What must stay true here:
//! - In proxy mode the console is off unless `CONSOLE=on` or `CONSOLE_HOST`
//!   says otherwise: the app's origin serves pages of its own (scripts,
//!   third-party tags) that could read or drive a console on that origin.
//! - With `CONSOLE_HOST` the console is served on that host only, and that
//!   host serves no application: nothing of the origin (or the embedded
//!   app) shares the console's origin.
//! - A value that is not one of these is a configuration error naming the
//!   variable, never a silent default.

use super::vars::{err, ConfigError};

/// `CONSOLE`: whether `/console` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleSwitch {
    /// Unset: served outside proxy mode, off in proxy mode.
    ByMode,
    /// `CONSOLE=on`: served in either mode.
    On,
    /// `CONSOLE=off`: never served; `/console` is the application's path.
    Off,
}

/// Where the console is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    pub switch: ConsoleSwitch,
    /// `CONSOLE_HOST`, lowercased: the only host the console is served on.
    pub host: Option<String>,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            switch: ConsoleSwitch::ByMode,
            host: None,
        }
    }
}

impl ConsoleSettings {
    /// Reads `CONSOLE` (`on` or `off`) and `CONSOLE_HOST` (a host name,
    /// with a port only if the console's URL has one). `CONSOLE=off` with a
    /// `CONSOLE_HOST` is refused: the two contradict each other.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let switch = match get("CONSOLE").as_deref().map(str::trim) {
            None => ConsoleSwitch::ByMode,
            Some("on") => ConsoleSwitch::On,
            Some("off") => ConsoleSwitch::Off,
            Some(other) => return Err(err("CONSOLE", format!("{other:?} is not on or off"))),
        };
        let host = get("CONSOLE_HOST").map(|raw| host_name(&raw)).transpose()?;
        if host.is_some() && switch == ConsoleSwitch::Off {
            return Err(err(
                "CONSOLE and CONSOLE_HOST",
                "CONSOLE=off and a CONSOLE_HOST contradict each other: remove one",
            ));
        }
        Ok(ConsoleSettings { switch, host })
    }

    /// Whether a request to `host` (its URL's host, `name[:port]`) is
    /// answered by the console, when the gateway is in proxy mode or not.
    pub fn serves(&self, host: &str, proxied: bool) -> bool {
        match (&self.host, self.switch) {
            (Some(own), _) => own.eq_ignore_ascii_case(host),
            (None, ConsoleSwitch::On) => true,
            (None, ConsoleSwitch::Off) => false,
            (None, ConsoleSwitch::ByMode) => !proxied,
        }
    }

    /// Whether `host` is the console's own host, where the application is
    /// never served (only the console, `/health`, `/openapi.json` and the
    /// reads).
    pub fn is_console_host(&self, host: &str) -> bool {
        self.host
            .as_deref()
            .is_some_and(|own| own.eq_ignore_ascii_case(host))
    }
}

/// `CONSOLE_HOST`: `name[:port]`, lowercased — DNS labels of letters,
/// digits and `-` (an IPv4 address fits), no scheme, path or trailing dot.
fn host_name(raw: &str) -> Result<String, ConfigError> {
    let value = raw.trim().to_ascii_lowercase();
    let refuse = |why: &str| err("CONSOLE_HOST", format!("{value:?} {why}"));
    if value.contains(['/', '@', '?', '#']) {
        return Err(refuse(
            "is not a host name: give the name alone (and a port), no scheme or path",
        ));
    }
    let (name, port) = match value.split_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (value.as_str(), None),
    };
    if name.is_empty() || name.len() > 253 {
        return Err(refuse("is not a host name (1–253 characters)"));
    }
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !name.split('.').all(label_ok) {
        return Err(refuse(
            "is not a host name: labels of letters, digits and '-', no scheme, path or trailing dot",
        ));
    }
    if let Some(port) = port {
        let ok = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && !port.starts_with('0')
            && port.parse::<u32>().is_ok_and(|p| p <= 65_535);
        if !ok {
            return Err(refuse("has a port that is not 1–65535"));
        }
    }
    Ok(value)
}

/// The host (`name[:port]`) of an absolute URL, read from the string
/// (`https://console.example.com/console` → `console.example.com`).
pub fn host_of(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("//") else {
        return "";
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}
