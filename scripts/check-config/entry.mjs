// The configuration check's own Worker (scripts/check-config/main.mjs):
// never deployed, never on the gateway's routes. It loads the built Rust
// Worker (build/index.js, the same wasm `wrangler deploy` uploads) and
// answers every request with its `checkConfiguration(env)`: the rules the
// gateway and its objects run at start (src/gateway/check.rs), applied to
// the bindings Miniflare gives this script from a wrangler.toml.
//
// worker-build 0.8.7 puts each exported Rust function on its entrypoint
// class's prototype (that is where worker/entry.mjs finds `fetch` too).
import RustGateway from "../../build/index.js";

const checkConfiguration = RustGateway.prototype.checkConfiguration;

export default {
  fetch(_request, env) {
    return new Response(checkConfiguration(env), { headers: { "content-type": "application/json" } });
  },
};
