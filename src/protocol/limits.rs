//! The limits the crate and the JS package apply: the longest lease or
//! retention, the most objects a tenant may be spread over, the longest
//! key, the body ceilings, the longest wait, the retry delays, the
//! statuses without a body, the listing page sizes; and the one rule
//! between a lease and a retention.
//!
//! Role: one home for each limit, below every room that holds a value to
//! one (`config`, `rpc`, `ledger`, `contract`), so none takes it from
//! another. The values are written once, in `src/protocol/limits.json`:
//! build.rs compiles them in here, scripts/generate.mjs writes the JS
//! package's copy (client/generated/limits.js).
//!
//! What must stay true here: a limit changes only with the contract
//! (docs/contract.md), and every check answers a message naming the value.

include!(concat!(env!("OUT_DIR"), "/limits.rs"));

/// Refuses a lease or retention (`name`) outside 1..=[`MAX_WINDOW_SECONDS`].
pub fn check_window(name: &str, v: Option<u64>) -> Result<(), String> {
    match v {
        Some(s) if s == 0 || s > MAX_WINDOW_SECONDS => {
            Err(format!("{name} must be between 1 and {MAX_WINDOW_SECONDS}"))
        }
        _ => Ok(()),
    }
}

/// The one rule for a lease and a retention (a claim's effective windows —
/// the call's, else the object's defaults — and `RETENTION_SECONDS`
/// against `LEASE_SECONDS` alike): a record must outlive its lease, so the
/// retention may not be shorter than the lease (equal is enough: the record
/// expires no earlier than its lease ends); a shorter one is refused
/// (`400 invalid-rpc`, or the configuration's `500 misconfigured`) rather
/// than silently stretched. The JS middleware holds `retentionSeconds`
/// and `leaseSeconds` to the same rule (tests/fixtures/limits.json
/// `windows` pins both).
pub fn check_claim_windows(lease_ms: i64, retention_ms: i64) -> Result<(), String> {
    if retention_ms < lease_ms {
        return Err(format!(
            "the retention ({} s) is shorter than the lease ({} s); a record must outlive its lease",
            retention_ms / 1000,
            lease_ms / 1000
        ));
    }
    Ok(())
}
