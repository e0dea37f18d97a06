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
    let place = object.place(config)?;
    if !place.tenant.as_ref().is_some_and(|(_, registry)| *registry) {
        return Err(bad_call(
            "layout goes to the tenant's registry: the object named by the tenant",
        ));
    }
    let tenant = place.tenant.clone().map(|(t, _)| t).unwrap_or_default();
    object.home.registry_jurisdiction(config, &tenant).await?;
    Ok(answered(
        match object.home.decide_layout(config, &tenant, &call).await? {
            None => LayoutOutcome::accepted(),
            Some((previous, reason)) => LayoutOutcome::keeping_previous(previous, reason),
        },
    ))
}

/// RPC v1 `jurisdiction` applied to `object`, once parsed and validated.
pub(in crate::object) async fn jurisdiction(
    object: &LedgerObject,
    config: &Config,
    call: JurisdictionCall,
) -> Result<(JurisdictionOutcome, WaitReport), Problem> {
    // Only the tenant's unrestricted object (named by the tenant alone)
    // records where its keys live.
    let place = object.place(config)?;
    if !place.tenant.as_ref().is_some_and(|(_, registry)| *registry) {
        return Err(bad_call(
            "jurisdiction goes to the tenant's unrestricted object: the object named by the tenant",
        ));
    }
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
