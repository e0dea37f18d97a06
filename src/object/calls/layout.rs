//! `layout` and `horizon` applied: the tenant's registry accepting (or
//! refusing) a configured layout, and an object's expiry horizon (wire
//! shape: `rpc/layout.rs`; the registry's rule: [`crate::object::reshard`]).
//!
//! And `jurisdiction`: the tenant's unrestricted object deciding where the
//! tenant's keys live ([`crate::object::jurisdiction`]).
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

impl LedgerObject {
    /// RPC v1 `layout` (LayoutCall), once parsed and validated.
    pub(in crate::object) async fn layout(
        &self,
        config: &Config,
        call: LayoutCall,
    ) -> Result<(LayoutOutcome, WaitReport), Problem> {
        // Only the tenant's registry keeps its layout history.
        let place = self.place(config)?;
        if !place.tenant.as_ref().is_some_and(|(_, registry)| *registry) {
            return Err(bad_call(
                "layout goes to the tenant's registry: the object named by the tenant",
            ));
        }
        let tenant = place.tenant.clone().map(|(t, _)| t).unwrap_or_default();
        self.home.registry_jurisdiction(config, &tenant).await?;
        Ok(answered(
            match self.home.decide_layout(config, &tenant, &call).await? {
                None => LayoutOutcome::accepted(),
                Some((previous, reason)) => LayoutOutcome::keeping_previous(previous, reason),
            },
        ))
    }
}

impl LedgerObject {
    /// RPC v1 `jurisdiction` (JurisdictionCall), once parsed and validated.
    pub(in crate::object) async fn jurisdiction(
        &self,
        config: &Config,
        call: JurisdictionCall,
    ) -> Result<(JurisdictionOutcome, WaitReport), Problem> {
        // Only the tenant's unrestricted object (named by the tenant alone)
        // records where its keys live.
        let place = self.place(config)?;
        if !place.tenant.as_ref().is_some_and(|(_, registry)| *registry) {
            return Err(bad_call(
                "jurisdiction goes to the tenant's unrestricted object: the object named by the tenant",
            ));
        }
        self.home
            .decide_jurisdiction(Jurisdiction::parse(&call.jurisdiction))?;
        Ok(answered(JurisdictionOutcome {
            outcome: "accepted".into(),
        }))
    }
}

impl LedgerObject {
    /// RPC v1 `horizon` (HorizonCall), once parsed and validated.
    pub(in crate::object) async fn horizon(
        &self,
        _: &Config,
        _: HorizonCall,
    ) -> Result<(HorizonAnswer, WaitReport), Problem> {
        let expires_by = self.ledger.horizon().map_err(|e| store_unavailable(&e))?;
        Ok(answered(HorizonAnswer { expires_by }))
    }
}
