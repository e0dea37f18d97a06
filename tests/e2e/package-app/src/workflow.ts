// A Workflow and a cron trigger whose effects run once per key
// (idempotency-ledger/workflows), type-checked against the runtime's own
// WorkflowEntrypoint, WorkflowStep and ScheduledController (wrangler types,
// then @cloudflare/workers-types). Checked, not bundled.
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { once, onceScheduled } from "idempotency-ledger/workflows";

type Order = { orderId: string; amount: number };

export class Checkout extends WorkflowEntrypoint<Env, Order> {
  async run(event: WorkflowEvent<Order>, step: WorkflowStep): Promise<string> {
    const charge: { id: string } = await once(step, "charge", {
      ledger: this.env.TENANT_LEDGER,
      tenant: "acme",
      key: `${event.instanceId}:charge`,
      config: { retries: { limit: 10, delay: "10 seconds", backoff: "exponential" }, timeout: "5 minutes" },
    }, async ({ signal }) => {
      const res = await fetch("https://payments.example/charge", { method: "POST", body: JSON.stringify(event.payload), signal });
      return { id: (await res.json<{ id: string }>()).id };
    });
    return charge.id;
  }
}

export const cron = {
  async scheduled(controller: ScheduledController, env: Env): Promise<void> {
    await onceScheduled(controller, "hourly-report", { ledger: env.LEDGER_RPC, tenant: "acme" }, () => ({ sent: true }));
  },
};
