//! `layout` and `horizon` applied: the tenant's registry accepting (or
//! refusing) a configured layout, and an object's expiry horizon (wire
//! shape: `rpc/layout.rs`; the registry's rule: [`crate::object::home::reshard`]).
//!
//! And `jurisdiction`: the tenant's unrestricted object deciding where the
//! tenant's keys live ([`crate::object::home::jurisdiction`]).
//!
//! What must stay true here: only the tenant's registry (the object named
//! by the tenant alone) keeps a layout history and a jurisdiction; any
//! other object refuses `layout` and `jurisdiction` as `400 invalid-rpc`.

use crate::config::{Config, Jurisdiction};
use crate::object::ledger_object::LedgerObject;
use crate::object::problems::{bad_call, store_unavailable};
use crate::object::waiting::answered;
use crate::object::waiting::WaitReport;
use crate::protocol::Problem;
use crate::rpc::{
    HorizonAnswer, HorizonCall, JurisdictionCall, JurisdictionOutcome, LayoutCall, LayoutOutcome,
};

/// RPC v1 `layout` applied to `object`, once parsed and validated.
pub(in crate::object) async fn layout(
    object: &LedgerObject,
    config: &Config,
    call: LayoutCall,
) -> Result<(LayoutOutcome, WaitReport), Problem> {
    // Only the tenant's registry keeps its layout history.
    let tenant = registry_tenant(
        object,
        config,
        "layout goes to the tenant's registry: the object named by the tenant",
    )?;
    object.home.registry_jurisdiction(config, &tenant).await?;
    let decided = object.home.decide_layout(config, &tenant, &call).await?;
    let outcome = match decided.kept {
        None => LayoutOutcome::accepted(),
        Some((previous, reason)) => LayoutOutcome::keeping_previous(previous, reason),
    };
    Ok(answered(LayoutOutcome {
        previous: decided.previous,
        ..outcome
    }))
}

/// RPC v1 `jurisdiction` applied to `object`, once parsed and validated.
pub(in crate::object) async fn jurisdiction(
    object: &LedgerObject,
    config: &Config,
    call: JurisdictionCall,
) -> Result<(JurisdictionOutcome, WaitReport), Problem> {
    // Only the tenant's unrestricted object (named by the tenant alone)
    // records where its keys live.
    registry_tenant(
        object,
        config,
        "jurisdiction goes to the tenant's unrestricted object: the object named by the tenant",
    )?;
    object
        .home
        .decide_jurisdiction(Jurisdiction::parse(&call.jurisdiction))?;
    Ok(answered(JurisdictionOutcome {
        outcome: "accepted".into(),
    }))
}

/// RPC v1 `horizon` applied to `object`, once parsed and validated.
pub(in crate::object) async fn horizon(
    object: &LedgerObject,
    _: &Config,
    _: HorizonCall,
) -> Result<(HorizonAnswer, WaitReport), Problem> {
    let expires_by = object.ledger.horizon().map_err(|e| store_unavailable(&e))?;
    Ok(answered(HorizonAnswer { expires_by }))
}

/// The tenant this object is the registry of (the object named by the
/// tenant alone), or `refusal` as `400 invalid-rpc` when it is another.
fn registry_tenant(
    object: &LedgerObject,
    config: &Config,
    refusal: &str,
) -> Result<String, Problem> {
    match &object.place(config)?.tenant {
        Some((tenant, true)) => Ok(tenant.clone()),
        _ => Err(bad_call(refusal)),
    }
}
