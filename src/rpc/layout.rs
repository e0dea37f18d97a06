//! `layout`: an object of a tenant's configured layout asks the tenant's
//! registry (the object named by the tenant alone) whether that layout may
//! follow the layouts the tenant had (docs/contract.md §8, `config::reshard`).
//!
//! Answer: [`LayoutOutcome`] (accepted, perhaps with the recorded previous
//! layout kept in force), or `500 misconfigured` naming `TENANT_SHARDS`
//! with the reason. Sent once per object instance, before
//! its first keyed call.
//!
//! `horizon`: the registry asks each object of a previous layout, before it
//! lets the configuration forget that layout, for its expiry horizon — at
//! or after the expiry of every record it holds, whatever configuration
//! granted it, and every expiry it promised beyond its window.

use serde::{Deserialize, Serialize};

use super::call::{Call, Route};
use crate::config::Jurisdiction;
use crate::protocol::limits::MAX_SHARDS;

/// The longest window a caller may name (ten years).
pub const MAX_LAYOUT_WINDOW_MS: i64 = 315_360_000_000;

/// `layout`: the configured layout and its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutCall {
    pub shards: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<u32>,
    /// How long a layout that stops taking keys may hold live records
    /// (retention + lease + origin timeout + sweep interval).
    pub window_ms: i64,
    /// The asking object's ledger was upgraded from schema 1 (it held
    /// records under v1, so its layout was in use then).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub upgraded_from_v1: bool,
}

/// The answer to `layout`: `{"outcome": "accepted"}`, with
/// `previous_in_force` (and why) when the configured layout dropped
/// `"previous"` before the previous layout may be forgotten: the asker
/// then serves as if that previous layout were still named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutOutcome {
    /// Always `"accepted"` (a refusal is a `500` problem).
    pub outcome: String,
    /// The shard count of the previous layout the registry keeps in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_in_force: Option<u32>,
    /// Why it is kept (until when), for the asker's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The previous layout (its object count) the tenant's record names or
    /// keeps in force: a current-layout object that does not hold a key
    /// asks the key's object there first, unless the call says its caller
    /// did (`rpc::PREVIOUS_ASKED_HEADER`). Absent from registries older
    /// than this field (the asker then trusts its callers, as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<u32>,
}

impl LayoutOutcome {
    /// Accepted as configured.
    pub fn accepted() -> LayoutOutcome {
        LayoutOutcome {
            outcome: "accepted".into(),
            previous_in_force: None,
            reason: None,
            previous: None,
        }
    }

    /// Accepted, with the recorded previous layout kept in force.
    pub fn keeping_previous(previous: u32, reason: String) -> LayoutOutcome {
        LayoutOutcome {
            previous_in_force: Some(previous),
            reason: Some(reason),
            ..LayoutOutcome::accepted()
        }
    }
}

impl Call for LayoutCall {
    const ROUTE: Route = Route::Layout;
    type Answer = LayoutOutcome;

    fn validate(&self) -> Result<(), String> {
        let count = |n: u32| (1..=MAX_SHARDS).contains(&n);
        if !count(self.shards) || self.previous.is_some_and(|p| !count(p)) {
            return Err(format!("shards and previous must be 1..={MAX_SHARDS}"));
        }
        if self.previous == Some(self.shards) {
            return Err("previous equals shards".into());
        }
        if !(0..=MAX_LAYOUT_WINDOW_MS).contains(&self.window_ms) {
            return Err(format!("window_ms must be 0..={MAX_LAYOUT_WINDOW_MS}"));
        }
        Ok(())
    }
}

/// `horizon`: no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HorizonCall {}

/// The answer to `horizon`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HorizonAnswer {
    /// Epoch ms at or after the expiry of every record the object holds
    /// and every expiry it granted beyond its window (0: none).
    pub expires_by: i64,
}

impl Call for HorizonCall {
    const ROUTE: Route = Route::Horizon;
    type Answer = HorizonAnswer;

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    fn parse(_body: &[u8]) -> Result<HorizonCall, String> {
        Ok(HorizonCall {})
    }
}

/// `jurisdiction`: the registry of a tenant kept in a jurisdiction
/// (`TENANT_JURISDICTIONS`), before it first accepts a keyed call, asks
/// the tenant's *unrestricted* object — the one object every configuration
/// of the tenant reaches — whether the tenant's keys may live there
/// (`config::jurisdictions::decide`). Answer: `{"outcome": "accepted"}`
/// (recorded there on a new tenant's first use), or `500 misconfigured`
/// naming `TENANT_JURISDICTIONS` with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JurisdictionCall {
    /// The configured jurisdiction (`eu`, `fedramp`, `fedramp-high`, `us`).
    pub jurisdiction: String,
}

/// The answer to `jurisdiction`: always `{"outcome": "accepted"}` (a
/// refusal is a `500` problem).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JurisdictionOutcome {
    pub outcome: String,
}

impl Call for JurisdictionCall {
    const ROUTE: Route = Route::Jurisdiction;
    type Answer = JurisdictionOutcome;

    fn validate(&self) -> Result<(), String> {
        match Jurisdiction::parse(&self.jurisdiction) {
            Some(_) => Ok(()),
            None => Err(format!(
                "jurisdiction must be one of {}",
                Jurisdiction::ALL.map(Jurisdiction::as_str).join(", ")
            )),
        }
    }
}
