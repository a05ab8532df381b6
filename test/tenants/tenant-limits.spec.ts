import OpenAI from 'openai';
import { SwitchboardError } from 'nestjs-switchboard';
import { validateOptions } from 'nestjs-switchboard/extend';
import { ask, askClaude, GPT, rig, type Rig } from '../support/upstream';

/** A call the switchboard charges 500 tokens at admission: 1200 characters (300) + 200 reserved. */
const call500 = (r: Rig, tenant: string, extra: object = {}) =>
  r.sb.chat.completions.create(ask('x'.repeat(1200), { max_tokens: 200, tenant, ...extra }));

const sent = (r: Rig) => r.upstream.deployment('oai0').stats.requests;

describe('tenant limits, one replica', () => {
  let r: Rig;
  afterEach(() => r.close());

  it('holds a tenant to its tpm across the pool: the overflow fails at once with 429 and retry-after; another tenant still gets through', async () => {
    r = await rig({
      openai: 1,
      quota: { tpm: 1_000_000, rpm: 10_000 },
      tenants: { acme: { tpm: 2000 } },
    });
    const acme = Array.from({ length: 10 }, () => call500(r, 'acme').catch((e: unknown) => e));
    const beta = call500(r, 'beta');
    const results = await Promise.all(acme);
    await expect(beta).resolves.toBeDefined();
    const failed = results.filter((x) => x instanceof OpenAI.RateLimitError) as InstanceType<
      typeof OpenAI.RateLimitError
    >[];
    const passed = results.length - failed.length;
    // 4 x 500 = 2000: at most 4 reach the upstream, whatever their order.
    expect(passed).toBeLessThanOrEqual(4);
    expect(passed).toBeGreaterThanOrEqual(3);
    expect(sent(r)).toBe(passed + 1);
    for (const e of failed) {
      expect(e.status).toBe(429);
      expect(e.message).toMatch(/Tenant acme is over its tpm limit/);
      const retry = Number(e.headers?.get('retry-after'));
      // Room comes back when the first calls leave the minute's window.
      expect(retry).toBeGreaterThanOrEqual(59);
      expect(retry).toBeLessThanOrEqual(62);
    }
  });

  it("with a queue the overflow waits for the tenant's room instead: what answers leave unused comes back", async () => {
    // Claude settles a call to what it used, so the unused part of max_tokens comes back at once.
    r = await rig({
      openai: 0,
      anthropic: 1,
      quota: { tpm: 1_000_000, rpm: 10_000 },
      tenants: { acme: { tpm: 2000 } },
      queue: { maxWait: 30_000 },
    });
    const claude = r.upstream.deployment('claude0');
    const acme = Array.from({ length: 8 }, () =>
      r.sb.messages.create(askClaude('x'.repeat(400), { max_tokens: 400, tenant: 'acme' })),
    );
    // 100 input + 400 reserved: four fit at first; none fails, the rest wait their turn.
    expect(claude.stats.requests).toBe(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(claude.stats.requests).toBeLessThanOrEqual(4);
    await expect(Promise.all(acme)).resolves.toHaveLength(8);
    expect(claude.stats.requests).toBe(8);
    expect(claude.stats.rateLimited).toBe(0);
  });

  it("a call that fails upstream gives its tenant's charge back: the next call has its room", async () => {
    r = await rig({
      openai: 1,
      quota: { tpm: 1_000_000, rpm: 10_000 },
      tenants: { acme: { tpm: 800 } },
    });
    // A 400 is the caller's own: no failover, the call fails and nothing was produced.
    r.upstream.deployment('oai0').fail({ kind: 'status', status: 400 });
    await expect(call500(r, 'acme')).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    // 500 + 500 > 800: were the first charge kept, the second call would be held to the limit.
    await expect(call500(r, 'acme')).resolves.toBeDefined();
    expect(sent(r)).toBe(2);
  });

  it('a call larger than the limit itself can never fit: a SwitchboardError naming the tenant', async () => {
    r = await rig({ openai: 1, tenants: { acme: { tpm: 400 } } });
    await expect(call500(r, 'acme')).rejects.toBeInstanceOf(SwitchboardError);
    await expect(call500(r, 'acme')).rejects.toThrow(/tenant acme can never fit its tpm limit/);
    expect(sent(r)).toBe(0);
  });

  it("'*' holds every tenant not named, each to its own count; calls without a tenant are not held", async () => {
    r = await rig({ openai: 1, tenants: { '*': { rpm: 1 } } });
    await call500(r, 'a');
    await call500(r, 'b');
    await expect(call500(r, 'a')).rejects.toThrow(/Tenant a is over its rpm limit/);
    await r.sb.chat.completions.create(ask('hello'));
    await r.sb.chat.completions.create(ask('hello'));
    expect(sent(r)).toBe(4);
  });

  it("a tenant's parts share its counts and its cost: acme/a and acme/b are held by acme's rpm together", async () => {
    r = await rig({
      openai: 1,
      tenants: { acme: { rpm: 2 } },
      pricing: { [GPT]: { input: 1, output: 2 } },
    });
    await call500(r, 'acme/a');
    await call500(r, 'acme/b');
    const third = await call500(r, 'acme/c').catch((e: unknown) => e);
    expect(third).toBeInstanceOf(OpenAI.RateLimitError);
    expect((third as Error).message).toMatch(/Tenant acme is over its rpm limit: 2 of 2/);
    await expect(call500(r, 'acme')).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    // Another tenant, and a part of it, have counts of their own.
    await call500(r, 'beta/a');
    expect(sent(r)).toBe(3);
    // The parts' cost is acme's; only a tenant outside the policies is `other`.
    const costs = r.sb.costs();
    expect(Object.keys(costs).sort()).toEqual(['acme', 'other']);
    expect(costs.acme).toBeGreaterThan(0);
    expect(costs.other).toBeGreaterThan(0);
  });
});

describe('tenant policies', () => {
  it('refuses a policy named for a part of a tenant, which would never apply', () => {
    expect(() =>
      validateOptions({
        deployments: [{ provider: 'openai', name: 'oai0', models: [{ name: GPT }] }],
        tenants: { 'acme/batch': { rpm: 2 } },
      }),
    ).toThrow(/tenants\.acme\/batch.*part of tenant acme.*name the policy acme/s);
  });
});
