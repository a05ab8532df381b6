import OpenAI from 'openai';
import { SwitchboardError } from '../../src';
import { ask, askClaude, rig, type Rig } from '../support/upstream';

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
});
