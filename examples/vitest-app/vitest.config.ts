// The Workers Vitest integration, with the packaged idempotency-ledger
// Worker as an auxiliary Worker: prebuilt in the npm package, so nothing
// is built here. Auxiliary Workers take Miniflare options, not a wrangler
// config: `ledgerWorker()` gives them (its modules, its TenantLedger, the
// packaged defaults).
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { ledgerWorker } from "idempotency-ledger/worker/testing";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.jsonc" },
      miniflare: {
        // ledgerWorker's default compatibility date (2026-08-15) is within what
        // the workerd of @cloudflare/vitest-pool-workers 0.23.0 supports.
        workers: [ledgerWorker({ vars: { LOG_LEVEL: "warn" } })],
      },
    }),
  ],
});
