import { metrics, type Attributes } from '@opentelemetry/api';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import { METER_NAME, SWITCHBOARD_METRICS } from 'nestjs-switchboard/extend';
import { costOf, PriceTable } from '../../src/tenants/price';
import type { Price } from 'nestjs-switchboard';
import { TestReader } from '../support/metric-reader';
import { ask, askClaude, CLAUDE, GPT, rig, type Rig } from '../support/upstream';

const GPT_PRICE: Price = { input: 0.15, output: 0.6, cachedInput: 0.075 };
const CLAUDE_PRICE: Price = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };

interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}
interface ClaudeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** The price of what the upstream reported, computed here from the wire fields. */
const priced = {
  openai: (u: OpenAIUsage, p: Price) => {
    const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    return (
      ((u.prompt_tokens - cached) * p.input +
        cached * p.cachedInput! +
        u.completion_tokens * p.output) /
      1e6
    );
  },
  claude: (u: ClaudeUsage, p: Price) =>
    (u.input_tokens * p.input +
      (u.cache_read_input_tokens ?? 0) * p.cachedInput! +
      (u.cache_creation_input_tokens ?? 0) * p.cacheWrite! +
      u.output_tokens * p.output) /
    1e6,
};

describe('cost', () => {
  let r: Rig | undefined;
  let provider: MeterProvider | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
    await provider?.shutdown();
    metrics.disable();
  });

  it('the cost counter adds up to the priced usage each upstream reported, by tenant (other for a tenant not named)', async () => {
    const reader = new TestReader();
    provider = new MeterProvider({ readers: [reader] });
    metrics.setGlobalMeterProvider(provider);
    r = await rig({
      openai: 1,
      anthropic: 1,
      pricing: { [GPT]: GPT_PRICE, [CLAUDE]: CLAUDE_PRICE },
      tenants: { acme: { rpm: 1000 } },
    });
    const sb = r.sb;
    // Every tenant named, and other, from the start.
    expect(sb.costs()).toEqual({ acme: 0, other: 0 });
    const expected: Record<string, number> = { acme: 0, other: 0 };
    for (let i = 0; i < 2; i++) {
      const c = await sb.chat.completions.create(ask(`hello ${i} `.repeat(30), { tenant: 'acme' }));
      expected.acme! += priced.openai(c.usage!, GPT_PRICE);
    }
    const stream = await sb.chat.completions.create(
      ask('stream me '.repeat(20), {
        tenant: 'acme',
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    for await (const chunk of stream) {
      if (chunk.usage) expected.acme! += priced.openai(chunk.usage, GPT_PRICE);
    }
    const plain = await sb.chat.completions.create(ask('no tenant at all'));
    expected.other! += priced.openai(plain.usage!, GPT_PRICE);
    // Claude with a cached system prompt (past the 1 024 tokens a prefix needs to be cached): written
    // on the first call, read on the second.
    const system = [
      {
        type: 'text' as const,
        text: 's '.repeat(2_400),
        cache_control: { type: 'ephemeral' as const },
      },
    ];
    let cacheRead = 0;
    let cacheWrite = 0;
    for (let i = 0; i < 2; i++) {
      const m = await sb.messages.create(askClaude('x'.repeat(40), { system, tenant: 'zed' }));
      cacheRead += m.usage.cache_read_input_tokens ?? 0;
      cacheWrite += m.usage.cache_creation_input_tokens ?? 0;
      expected.other! += priced.claude(m.usage, CLAUDE_PRICE);
    }
    expect(cacheRead).toBeGreaterThan(0);
    expect(cacheWrite).toBeGreaterThan(0);

    const { resourceMetrics } = await reader.collect();
    const points = (resourceMetrics.scopeMetrics
      .filter((s) => s.scope.name === METER_NAME)
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === SWITCHBOARD_METRICS.COST)?.dataPoints ??
      []) as DataPoint<number>[];
    const byTenant: Record<string, number> = {};
    for (const p of points) {
      const { tenant } = p.attributes as Attributes;
      byTenant[tenant as string] = (byTenant[tenant as string] ?? 0) + p.value;
    }
    expect(Object.keys(byTenant).sort()).toEqual(['acme', 'other']);
    expect(Math.abs(byTenant.acme! - expected.acme!)).toBeLessThan(1e-9);
    expect(Math.abs(byTenant.other! - expected.other!)).toBeLessThan(1e-9);
    expect(expected.acme!).toBeGreaterThan(0);
    // The switchboard's own account of it says the same.
    const costs = sb.costs();
    expect(Object.keys(costs).sort()).toEqual(['acme', 'other']);
    expect(Math.abs(costs.acme! - expected.acme!)).toBeLessThan(1e-9);
    expect(Math.abs(costs.other! - expected.other!)).toBeLessThan(1e-9);
    // Every priced deployment is exported from start-up, per tenant named and other.
    const labels = points.map(
      (p) => `${String(p.attributes.deployment)}/${String(p.attributes.tenant)}`,
    );
    expect(labels.sort()).toEqual(['claude0/acme', 'claude0/other', 'oai0/acme', 'oai0/other']);
  });

  it('without pricing there is no cost to report', async () => {
    r = await rig({ openai: 1, tenants: { acme: { rpm: 1000 } } });
    await r.sb.chat.completions.create(ask('hello', { tenant: 'acme' }));
    expect(r.sb.costs()).toEqual({});
  });

  it('a budget on a model no deployment charges for is refused before anything is sent', async () => {
    r = await rig({
      openai: 2,
      tenants: { acme: { budget: { usd: 1, per: 'day' } } },
      pricing: { [GPT]: { input: 0, output: 0 } },
    });
    await expect(
      r.sb.chat.completions.create(ask('hello', { tenant: 'acme', max_tokens: 5 })),
    ).rejects.toThrow(`Tenant acme has a budget, but ${GPT} has no price`);
    expect(r.upstream.deployment('oai0').stats.requests).toBe(0);
    expect(r.upstream.deployment('oai1').stats.requests).toBe(0);
  });

  it('deployments sharing a price reserve as one, beside one of their own', () => {
    const shared = new PriceTable(
      Array.from({ length: 5 }, (_, i) => ({
        provider: 'openai' as const,
        name: `d${i}`,
        models: [{ name: GPT }],
      })),
      { [GPT]: GPT_PRICE },
    );
    expect(shared.charges(GPT)).toBe(true);
    expect(shared.charges('unpriced')).toBe(false);
    expect(shared.dearest(GPT, { input: 1_000_000, output: 1_000_000 })).toBeCloseTo(0.75, 12);
  });

  it("a deployment's own price wins over the model's; admission reserves at the dearest", () => {
    const table = new PriceTable(
      [
        { provider: 'openai', name: 'east', models: [{ name: GPT }] },
        {
          provider: 'openai',
          name: 'eu',
          models: [{ name: GPT, pricing: { input: 0.165, output: 0.66 } }],
        },
      ],
      { [GPT]: GPT_PRICE },
    );
    expect(table.on('east', GPT)).toEqual(GPT_PRICE);
    expect(table.on('eu', GPT)).toEqual({ input: 0.165, output: 0.66 });
    expect(table.dearest(GPT, { input: 1_000_000, output: 0 })).toBeCloseTo(0.165, 12);
    // OpenAI counts cached tokens inside prompt_tokens; Claude reports them apart.
    const usage = { input: 1000, output: 100, cacheRead: 800 };
    expect(costOf(GPT_PRICE, usage, 'openai')).toBeCloseTo(
      (200 * 0.15 + 800 * 0.075 + 100 * 0.6) / 1e6,
      15,
    );
    expect(costOf(CLAUDE_PRICE, { ...usage, cacheWrite: 50 }, 'anthropic')).toBeCloseTo(
      (1000 * 3 + 800 * 0.3 + 50 * 3.75 + 100 * 15) / 1e6,
      15,
    );
  });
});
