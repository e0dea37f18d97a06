//! Every variable's default, from their one home, src/config/defaults.json
//! (compiled in by build.rs; the JS package's DEFAULTS and the published
//! wrangler.toml [vars] are its copies).

include!(concat!(env!("OUT_DIR"), "/defaults.rs"));
