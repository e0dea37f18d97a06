// Types for RPC v1 of the idempotency-ledger TenantLedger Durable Object,
// and for the JavaScript client in ./index.js. See docs/rpc-v1.md.

/** One fingerprint component: its name and the hex SHA-256 of its value. */
export interface FingerprintComponent {
  /** "method" | "target" | `header:${string}` | "body" */
  name: string;
  digest: string;
}

/** A request fingerprint; `digest` must be the one its components give. */
export interface Fingerprint {
  digest: string;
  components: FingerprintComponent[];
}

/** What the ledger keeps of a response. `body` is base64; null marks a tombstone. */
export interface StoredResponse {
  status: number;
  /** Lowercase header name/value pairs; never set-cookie. */
  headers: [string, string][];
  body: string | null;
}

export interface ClaimCall {
  key: string;
  fingerprint: Fingerprint;
  /** Defaults to the object's LEASE_SECONDS. 1..31536000. */
  lease_seconds?: number;
  /** Defaults to the object's RETENTION_SECONDS. 1..31536000. */
  retention_seconds?: number;
  /**
   * If the key is in flight under a live lease, wait up to this many ms for
   * its outcome (replay, or the key released / its lease ended: claimed)
   * instead of answering `in_flight` at once. 0..3600000, bounded by the
   * object's IN_FLIGHT_WAIT_MAX_SECONDS and the lease. Default 0.
   */
  wait_ms?: number;
}

/** Present on a claim's answer when the object parked it: how long, in ms. */
export interface WaitedAnswer {
  waited_ms?: number;
}

export type ClaimOutcome =
  | { outcome: "claimed"; generation: number; takeover: boolean }
  | { outcome: "in_flight"; generation: number; retry_after_ms: number }
  | {
      outcome: "completed"; generation: number; response: StoredResponse;
      /** Epoch ms (the object's clock) when the record leaves its retention window; the answer cannot change before. */
      expires_at?: number;
    }
  | { outcome: "mismatch"; differs: string[] }
  | { outcome: "ledger_full"; retry_after_ms: number };

export interface CompleteCall {
  key: string;
  generation: number;
  response: StoredResponse;
  /** Defaults to the object's RETENTION_SECONDS. */
  retention_seconds?: number;
}

/** Where a refused completion or release found the record. */
export interface RecordState {
  state: "in_flight" | "completed" | "released";
  generation: number;
}

export type CompleteOutcome = { outcome: "stored" } | { outcome: "fenced_out"; current: RecordState | null };

export interface ReleaseCall {
  key: string;
  generation: number;
}

export type ReleaseOutcome = { outcome: "released" } | { outcome: "fenced_out"; current: RecordState | null };

export interface RecordView {
  key: string;
  state: "in_flight" | "completed" | "released";
  generation: number;
  /** RFC 3339, UTC */
  created_at: string;
  expires_at: string;
  lease_expires_at: string | null;
  response_status: number | null;
  /** false marks a tombstone */
  retained: boolean | null;
  replays: number;
}

export interface LedgerStats {
  records: number;
  in_flight: number;
  completed: number;
  released: number;
  claims: number;
  replays: number;
  in_use: number;
  reused: number;
  takeovers: number;
  fenced_out: number;
  swept: number;
  /** Completions a gateway gave up on after its retries. */
  complete_failed: number;
  /** Claims that met a live lease and waited for its outcome. */
  waited: number;
  /** Waiters answered with the replay of the run they waited for. */
  waited_replayed: number;
  /** Waiters whose budget ran out (409). */
  waited_timed_out: number;
  /** Requests parked on in-flight keys right now (this object instance). */
  waiting: number;
  /** The object's SQLite database size in bytes (summed for a sharded tenant). */
  db_bytes: number;
  next_sweep_at: string | null;
}

/** RFC 9457 problem document. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  [member: string]: unknown;
}

export declare const RPC_V1_PREFIX: "/rpc/v1/";
export declare const MAX_SHARDS: 128;
/** Is `tenant` a valid tenant id (1–64 of A-Z a-z 0-9 . _ -), as the gateway's? */
export declare function isTenantId(tenant: unknown): tenant is string;
/** The shard of `key` among `shards` (first 8 bytes of SHA-256(key), big-endian, mod N), as the gateway computes it. */
export declare function shardOf(key: string, shards: number): Promise<number>;
/** The Durable Object name of shard `index` of `tenant` over `shards` (the tenant itself for one shard). */
export declare function shardObjectName(tenant: string, index: number, shards: number): string;
/** TENANT_SHARDS parsed as the gateway parses it; throws a TypeError when invalid. */
export declare function parseTenantShards(raw: string | null | undefined): Map<string, { shards: number; previous: number | null }>;
export declare const WAITED_HEADER: "ledger-waited-ms";
export declare const IDEMPOTENCY_KEY_HEADER: "Idempotency-Key";
export declare const MAX_KEY_LENGTH: 255;

export declare class LedgerError extends Error {
  /** HTTP status of the object's problem answer, or null when unreachable. */
  readonly status: number | null;
  readonly problem: Problem | null;
}

export declare class IdempotencyKeyError extends Error {
  /** Set by `parseIdempotencyKey`: why the field was refused. */
  code?: "empty" | "too_long" | "non_printable" | "multiple" | "unterminated" | "bad_escape" | "trailing_garbage";
}

/** Parses an Idempotency-Key field value exactly as the gateway does (sf-string or bare). */
export declare function parseIdempotencyKey(field: string): string;

/** A header's value, case-insensitive, from any header shape (repeated names joined by ", "). */
export declare function headerValue(
  headers: Headers | Map<string, string> | [string, string][] | Record<string, string> | null | undefined,
  name: string,
): string | null;

/** Anything with a Durable Object stub's fetch. */
export interface LedgerStub {
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

export interface LedgerNamespace {
  idFromName(name: string): unknown;
  get(id: any): LedgerStub;
}

export declare class LedgerClient {
  constructor(stub: LedgerStub);
  static forTenant(namespace: LedgerNamespace, tenant: string): LedgerClient;
  claim(call: ClaimCall): Promise<ClaimOutcome & WaitedAnswer>;
  complete(call: CompleteCall): Promise<CompleteOutcome>;
  release(call: ReleaseCall): Promise<ReleaseOutcome>;
  lookup(key: string): Promise<RecordView | null>;
  stats(): Promise<LedgerStats>;
  /** Counts replays you answered from your own cache, so `stats` stays exact. */
  replayed(call: ReplayedCall): Promise<{ outcome: "counted" }>;
  /** Claim + the embedded orders app + complete, in one transaction (the gateway's own TenantLedger). */
  execute(call: ExecuteCall): Promise<ExecuteOutcome & WaitedAnswer>;
}

/** The request `execute` runs on the embedded orders application. */
export interface AppRequest {
  /** Uppercase method. */
  method: string;
  /** Path plus query, starting with "/". */
  target: string;
  /** Base64 body bytes. */
  body: string;
}

export interface ExecuteCall {
  key: string;
  fingerprint: Fingerprint;
  request: AppRequest;
  /** As `ClaimCall.wait_ms`. */
  wait_ms?: number;
}

export type ExecuteOutcome =
  | {
      outcome: "ran"; generation: number; takeover: boolean;
      /** false: the response was too large to keep (a tombstone). */
      retained: boolean;
      response: { status: number; headers: [string, string][]; body: string };
    }
  | Exclude<ClaimOutcome, { outcome: "claimed" }>;

/**
 * The JS RPC entrypoint `LedgerService` of the deployed script, as another
 * Worker sees it through a service binding:
 * `services = [{ binding = "LEDGER", service = "idempotency-ledger", entrypoint = "LedgerService" }]`.
 * Every method is RPC v1 with the tenant as first argument (1-64 of
 * [A-Za-z0-9._-]; anything else throws a TypeError). A refusal by the object
 * (a bad call) rejects with an Error whose message starts
 * `ledger refused <op> (<status>)`.
 */
export interface LedgerServiceRpc {
  claim(tenant: string, call: ClaimCall): Promise<ClaimOutcome & WaitedAnswer>;
  complete(tenant: string, call: CompleteCall): Promise<CompleteOutcome>;
  release(tenant: string, call: ReleaseCall): Promise<ReleaseOutcome>;
  lookup(tenant: string, key: string): Promise<RecordView | null>;
  stats(tenant: string): Promise<LedgerStats>;
  execute(tenant: string, call: ExecuteCall): Promise<ExecuteOutcome & WaitedAnswer>;
}

export interface ReplayedCall {
  /** At most 1,000 entries; `count` 1..1,000,000; `generation` the one that completed. */
  replays: { key: string; generation: number; count: number }[];
  /** Completions you gave up on (added to `stats.complete_failed`); 0..1,000,000. */
  complete_failed?: number;
}

export interface FingerprintInput {
  method: string;
  /** Path plus query exactly as received. */
  target: string;
  headers?: Headers | Record<string, string | null | undefined>;
  /** Header names that are part of "the same request"; default ["content-type"]. */
  fingerprintHeaders?: string[];
  body?: string | ArrayBuffer | ArrayBufferView | null;
}

export declare function fingerprint(input: FingerprintInput): Promise<Fingerprint>;

export interface CaptureOptions {
  storedHeaders?: string[];
  maxStoredBodyBytes?: number;
}

export declare function captureResponse(response: Response, options?: CaptureOptions): Promise<StoredResponse>;
export declare function replayResponse(stored: StoredResponse): Response;
export declare function storedBodyBytes(stored: StoredResponse): Uint8Array | null;

export declare function generateIdempotencyKey(): string;
export declare function deriveIdempotencyKey(...parts: unknown[]): Promise<string>;
export declare function formatIdempotencyKey(key: string): string;
export declare function withIdempotencyKey(init: RequestInit | undefined, key: string): RequestInit;
export declare function applyIdempotencyKey(request: Request, key?: string): Request;

/** The gateway's answer to a refused claim: replay, 409, 422 or 429 (same problem documents). */
export declare function refusalResponse(claim: Exclude<ClaimOutcome, { outcome: "claimed" }>): Response;

export interface IdempotencyOptions<Env> {
  /** The ledger to use for this request, e.g. `LedgerClient.forTenant(env.LEDGER, tenantOf(request))`. */
  ledger: (request: Request, env: Env) => LedgerClient;
  /** Default `["POST", "PATCH"]`. */
  protectedMethods?: string[];
  /** Default `true`: a protected request without a key gets `400 idempotency-key-missing`. */
  required?: boolean;
  /** Default `["content-type"]` (as the gateway's FINGERPRINT_HEADERS). */
  fingerprintHeaders?: string[];
  /** Default `["content-type", "location", "etag"]`. */
  storedHeaders?: string[];
  /** Default 1 MiB; larger responses are stored as tombstones. */
  maxStoredBodyBytes?: number;
  /** Seconds a retry waits for an in-flight first run when it does not send `Prefer: wait=N` (as IN_FLIGHT_WAIT_SECONDS). Default 0. */
  waitSeconds?: number;
  /** The most any request waits (as IN_FLIGHT_WAIT_MAX_SECONDS). Default 10; 0..300. */
  maxWaitSeconds?: number;
}

/** The `wait` preference of a Prefer header (RFC 7240), in seconds, read as the gateway does; null when absent or unreadable. */
export declare function preferWait(header: string | null | undefined): number | null;

/** What a framework adapter's `next(body)` resolves to: the route's response, and whether it failed (then the key is released). */
export interface RouteResult {
  response: Response;
  failed: boolean;
}

/** The contract shared by `withIdempotency` and `idempotency-ledger/hono`, for framework adapters. Throws a TypeError on invalid options. */
export declare function idempotencyContract<Env>(options: IdempotencyOptions<Env>): {
  protects(method: string): boolean;
  run(args: {
    request: Request;
    env: Env;
    ctx?: { waitUntil(promise: Promise<unknown>): void };
    readBody(): Promise<Uint8Array>;
    next(body: Uint8Array | undefined): Promise<RouteResult>;
  }): Promise<Response>;
};

/** Wraps a fetch handler with the Idempotency-Key contract (claim, run once, complete; release on throw). */
export declare function withIdempotency<Env, Ctx = unknown>(
  handler: (request: Request, env: Env, ctx: Ctx) => Response | Promise<Response>,
  options: IdempotencyOptions<Env>,
): (request: Request, env: Env, ctx: Ctx) => Promise<Response>;
