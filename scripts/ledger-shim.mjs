// The entry of build/ledger/index.js, the slim wasm of
// idempotency-ledger/ledger (scripts/build.sh bundles it with esbuild over
// wasm-bindgen's output, ./bindgen.js, and ships no other module).
//
// Role: what worker-build's shim does for the gateway's classes, for the
// one class this wasm exports: a Rust panic traps the instance
// (panic=abort), the trap surfaces as a WebAssembly.RuntimeError, and the
// next call re-initialises the module (`__wbg_reset_state`, from
// wasm-bindgen's --experimental-reset-state-function) and re-creates the
// EmbeddedLedger it reaches through this proxy with its first arguments.
// The panic's message was already written as a "Critical" console error by
// the panic hook src/embedded/mod.rs installs.
//
// What must stay true here: the same behaviour as worker-build 0.8.7's
// src/js/shim.js for a class (its classProxyHooks), nothing more; the
// re-initialisation state is this module's own (never the gateway's
// globalThis.__worker_init_state, which a Worker importing both wasms has).
import { EmbeddedLedger as RawEmbeddedLedger, __wbg_reset_state } from "./bindgen.js";

const initState = { criticalError: false, instanceId: 0 };

function checkReinitialize() {
  if (initState.criticalError) {
    console.log("Reinitializing Wasm application");
    __wbg_reset_state();
    initState.criticalError = false;
    initState.instanceId++;
  }
}

function handleMaybeCritical(e) {
  if (e instanceof WebAssembly.RuntimeError) {
    console.error("Critical", e);
    initState.criticalError = true;
  }
}

const instanceProxyHooks = {
  set: (target, prop, value, receiver) => Reflect.set(target.instance, prop, value, receiver),
  has: (target, prop) => Reflect.has(target.instance, prop),
  deleteProperty: (target, prop) => Reflect.deleteProperty(target.instance, prop),
  apply: (target, thisArg, args) => Reflect.apply(target.instance, thisArg, args),
  construct: (target, args, newTarget) => Reflect.construct(target.instance, args, newTarget),
  getPrototypeOf: (target) => Reflect.getPrototypeOf(target.instance),
  setPrototypeOf: (target, proto) => Reflect.setPrototypeOf(target.instance, proto),
  isExtensible: (target) => Reflect.isExtensible(target.instance),
  preventExtensions: (target) => Reflect.preventExtensions(target.instance),
  getOwnPropertyDescriptor: (target, prop) => Reflect.getOwnPropertyDescriptor(target.instance, prop),
  defineProperty: (target, prop, descriptor) => Reflect.defineProperty(target.instance, prop, descriptor),
  ownKeys: (target) => Reflect.ownKeys(target.instance),
};

const classProxyHooks = {
  construct(ctor, args, newTarget) {
    try {
      checkReinitialize();
      const instance = { instance: Reflect.construct(ctor, args, newTarget), instanceId: initState.instanceId, ctor, args, newTarget };
      return new Proxy(instance, {
        ...instanceProxyHooks,
        get(target, prop, receiver) {
          if (target.instanceId !== initState.instanceId) {
            target.instance = Reflect.construct(target.ctor, target.args, target.newTarget);
            target.instanceId = initState.instanceId;
          }
          const original = Reflect.get(target.instance, prop, receiver);
          if (typeof original !== "function") return original;
          // Every method of EmbeddedLedger is synchronous.
          return new Proxy(original, {
            apply(fn, thisArg, argArray) {
              checkReinitialize();
              try {
                return fn.apply(thisArg, argArray);
              } catch (e) {
                handleMaybeCritical(e);
                throw e;
              }
            },
          });
        },
      });
    } catch (e) {
      initState.criticalError = true;
      throw e;
    }
  },
};

export const EmbeddedLedger = new Proxy(RawEmbeddedLedger, classProxyHooks);
