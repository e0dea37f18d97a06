//! The Durable Object namespace a client reaches: the one bound under a
//! name, in a jurisdiction if the tenant is kept in one
//! (`TENANT_JURISDICTIONS`, docs/contract.md §8 "Jurisdictions").
//!
//! Role: the one way this crate gets a namespace in a jurisdiction, for the
//! typed client ([`super::client::LedgerClient::for_object_in`]) and the
//! object checking its own place (`object::home`).
//!
//! What must stay true here: a binding that is missing or not a Durable
//! Object namespace, and a runtime that cannot make an object in the
//! jurisdiction, are configurations it cannot serve (`500 misconfigured`
//! naming the binding, or `TENANT_JURISDICTIONS`): never an object made
//! unrestricted, and never `NotReached` (which `FAILURE_POLICY=open`
//! would run unprotected, running every key again).

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::{Env, ObjectNamespace};

use crate::config::Jurisdiction;
use crate::fields;
use crate::ledger::store::durable::js_message;
use crate::platform::log;
use crate::rpc::LedgerError;

/// The namespace bound as `binding`, in `jurisdiction` if one is given.
/// No Durable Object namespace bound as `binding` is `500 misconfigured`
/// naming it (the gateway refuses it earlier, `platform::bindings`).
///
/// worker 0.8.7's `ObjectNamespace` has no `jurisdiction` method: it is a
/// `#[repr(transparent)]` wrapper of the JS `DurableObjectNamespace`
/// (`AsRef<JsValue>`, `JsCast` by constructor name), so the JS method is
/// called on that value (`Reflect`), and its answer — another namespace —
/// wrapped back with `unchecked_into`. A runtime that refuses it (local
/// workerd throws "Jurisdiction restrictions are not implemented in
/// workerd") is a configuration it cannot serve: `500 misconfigured`
/// naming `TENANT_JURISDICTIONS`, never an object made unrestricted, and
/// never `NotReached` (which `FAILURE_POLICY=open` would run unprotected).
pub fn namespace_in(
    env: &Env,
    binding: &str,
    jurisdiction: Option<Jurisdiction>,
) -> Result<ObjectNamespace, LedgerError> {
    let namespace: ObjectNamespace = env.durable_object(binding).map_err(|e| {
        log::error(
            "idempotency.misconfigured",
            fields! {"variable" => binding, "error" => format!("no Durable Object namespace is bound as {binding}: {e}")},
        );
        misconfigured(binding)
    })?;
    let Some(jurisdiction) = jurisdiction else {
        return Ok(namespace);
    };
    let raw: &JsValue = namespace.as_ref();
    let restricted = Reflect::get(raw, &JsValue::from_str("jurisdiction"))
        .and_then(|f| f.dyn_into::<Function>())
        .and_then(|f| f.call1(raw, &JsValue::from_str(jurisdiction.as_str())))
        .and_then(|ns| {
            if ns.is_object() {
                Ok(ns)
            } else {
                Err(JsValue::from_str("jurisdiction() answered no namespace"))
            }
        });
    match restricted {
        Ok(ns) => Ok(ns.unchecked_into::<ObjectNamespace>()),
        Err(e) => {
            let message = format!(
                "the runtime cannot create objects in jurisdiction \"{jurisdiction}\": {}",
                js_message(&e)
            );
            log::error(
                "idempotency.misconfigured",
                fields! {"variable" => "TENANT_JURISDICTIONS", "error" => message},
            );
            Err(misconfigured("TENANT_JURISDICTIONS"))
        }
    }
}

/// A configuration this runtime cannot serve, as the object would render
/// it: `500 misconfigured` naming `variable` (a refusal, whatever
/// `FAILURE_POLICY` says).
fn misconfigured(variable: &str) -> LedgerError {
    LedgerError::Refused {
        status: 500,
        problem: crate::protocol::Problem::misconfigured(variable).to_json(),
        retry_after: None,
    }
}
