// The README's Payments object, alone: exactly-once charges in the object's
// own table, with nothing of the package but idempotency-ledger/ledger.
import { DurableObject } from "cloudflare:workers";
import { Ledger } from "idempotency-ledger/ledger";

interface LedgerOnlyEnv {
  PAYMENTS: DurableObjectNamespace<Payments>;
}

export class Payments extends DurableObject<LedgerOnlyEnv> {
  ledger = new Ledger(this.ctx);

  constructor(ctx: DurableObjectState, env: LedgerOnlyEnv) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS charges (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)");
  }

  async fetch(request: Request): Promise<Response> {
    const response = await this.ledger.handle(request, ({ json }) => {
      const { amount } = json() as { amount: number };
      const { id } = this.ctx.storage.sql
        .exec<{ id: number }>("INSERT INTO charges (amount) VALUES (?) RETURNING id", amount).one();
      return { status: 201, json: { id, amount } };
    });
    await this.ledger.armSweep();
    return response;
  }

  async alarm(): Promise<void> {
    await this.ledger.alarm();
  }
}

export default {
  fetch: (request: Request, env: LedgerOnlyEnv) => env.PAYMENTS.get(env.PAYMENTS.idFromName("acme")).fetch(request),
} satisfies ExportedHandler<LedgerOnlyEnv>;
