// Compile-time check of client/index.d.ts (tsc -p tests/types): a JS Worker's
// typical use of the package must type-check under --strict, and the outcome
// unions must narrow on `outcome`.
import {
  LedgerClient,
  LedgerError,
  fingerprint,
  captureResponse,
  replayResponse,
  generateIdempotencyKey,
  deriveIdempotencyKey,
  withIdempotencyKey,
  parseIdempotencyKey,
  headerValue,
  withIdempotency,
  IdempotencyKeyError,
  applyIdempotencyKey,
  type ClaimOutcome,
  type LedgerNamespace,
  type StoredResponse,
} from "idempotency-ledger";

export async function charge(namespace: LedgerNamespace, tenant: string, request: Request): Promise<Response> {
  const client = LedgerClient.forTenant(namespace, tenant);
  const key = request.headers.get("idempotency-key") ?? (await deriveIdempotencyKey("charge", tenant));
  const url = new URL(request.url);
  const body = await request.arrayBuffer();
  const fp = await fingerprint({ method: request.method, target: url.pathname + url.search, headers: request.headers, body });
  let claim: ClaimOutcome;
  try {
    claim = await client.claim({ key, fingerprint: fp, lease_seconds: 30 });
  } catch (e) {
    if (e instanceof LedgerError && e.status === null) return new Response("ledger down", { status: 503 });
    throw e;
  }
  switch (claim.outcome) {
    case "completed":
      return replayResponse(claim.response);
    case "in_flight":
      return new Response(null, { status: 409, headers: { "retry-after": String(Math.ceil(claim.retry_after_ms / 1000)) } });
    case "mismatch":
      return Response.json({ differs: claim.differs satisfies string[] }, { status: 422 });
    case "ledger_full":
      return new Response(null, { status: 429 });
    case "claimed": {
      const response = Response.json({ ok: true }, { status: 201 });
      const stored: StoredResponse = await captureResponse(response.clone(), { maxStoredBodyBytes: 65536 });
      const done = await client.complete({ key, generation: claim.generation, response: stored });
      if (done.outcome === "fenced_out" && done.current) console.error(done.current.generation);
      return response;
    }
  }
}

export function send(url: string): Promise<Response> {
  const init: RequestInit = withIdempotencyKey({ method: "POST", body: "{}" }, generateIdempotencyKey());
  return fetch(applyIdempotencyKey(new Request(url, init)));
}

export function keyOf(request: Request): string | null {
  const field = headerValue(request.headers, "Idempotency-Key");
  try {
    return field === null ? null : parseIdempotencyKey(field);
  } catch (e) {
    if (e instanceof IdempotencyKeyError && e.code === "multiple") return null;
    throw e;
  }
}

interface AppEnv {
  LEDGER: LedgerNamespace;
}

export const protectedFetch = withIdempotency<AppEnv, { waitUntil(p: Promise<unknown>): void }>(
  async (request) => Response.json({ ok: await request.text() }, { status: 201 }),
  { ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER, "acme"), fingerprintHeaders: ["content-type", "x-api-version"] },
);

// The package's subpath export and JS RPC types, as a TypeScript user imports them.
import { idempotency } from "idempotency-ledger/hono";
import type { LedgerServiceRpc } from "idempotency-ledger";

export const honoMiddleware = idempotency<AppEnv>({
  ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER, "acme"),
  waitSeconds: 2,
});

export async function viaRpc(ledger: LedgerServiceRpc, fp: Awaited<ReturnType<typeof fingerprint>>): Promise<number | undefined> {
  const claim = await ledger.claim("acme", { key: "k", fingerprint: fp, wait_ms: 1_000 });
  if (claim.outcome === "claimed") return claim.generation;
  return claim.waited_ms;
}

// A settlement that fails after its retries goes to the hook; `settle` is the same retry rule for your own calls.
import { settle, landedEarlier, SETTLE_RETRY_DELAYS_MS, type SettlementFailure } from "idempotency-ledger";

export const reported = withIdempotency<AppEnv>(async () => new Response("ok", { status: 201 }), {
  ledger: (_request, env) => LedgerClient.forTenant(env.LEDGER, "acme"),
  onSettlementFailed: async (failure: SettlementFailure) => {
    const op: "complete" | "release" = failure.operation;
    console.error(op, failure.generation, failure.error instanceof LedgerError ? failure.error.status : String(failure.error));
  },
});

export async function completeDurably(client: LedgerClient, key: string, generation: number, response: StoredResponse): Promise<boolean> {
  const { answer, landed, attempts } = await settle(() => client.complete({ key, generation, response }), {
    landed: (a) => landedEarlier(a, generation, "completed"),
  });
  return landed || (answer.outcome === "stored" && attempts <= SETTLE_RETRY_DELAYS_MS.length + 1);
}
