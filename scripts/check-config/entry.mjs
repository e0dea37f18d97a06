// The configuration check's own Worker (scripts/check-config/main.mjs):
// never deployed, never on the gateway's routes. It loads the built Rust
// Worker (build/index.js, the same wasm `wrangler deploy` uploads) and
// answers every request with its `checkConfiguration(env)`: the rules the
// gateway and its objects run at start (src/gateway/check.rs), applied to
// the bindings Miniflare gives this script from a wrangler.toml.
//
// The request's body is the configuration's Durable Object bindings as
// declared (`[{ name, class_name }]`): each is bound here as a namespace of
// the stand-in class below (the class a namespace is of cannot be seen at
// run time, so the Rust check reads the declared one).
//
// worker-build 0.8.7 puts each exported Rust function on its entrypoint
// class's prototype (that is where worker/entry.mjs finds `fetch` too).
import RustGateway from "../../build/index.js";

const checkConfiguration = RustGateway.prototype.checkConfiguration;

/** The stand-in class of every declared Durable Object binding: never instantiated by the check. */
export class DeclaredObject {
  fetch() {
    return new Response(null, { status: 204 });
  }
}

export default {
  async fetch(request, env) {
    const declared = await request.text();
    return new Response(checkConfiguration(env, declared), { headers: { "content-type": "application/json" } });
  },
};
