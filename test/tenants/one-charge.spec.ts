/**
 * One call, one charge: 200 concurrent calls of a tenant whose budget is $0.01 a day, in every
 * variant that once overshot it (no max_tokens, a stream that asks for no usage, fallback to a
 * dearer model, a content-filter fallback, the gateway with a key carrying the budget). What the
 * simulated upstream billed (the usage it reported, priced) never exceeds the budget, and the
 * switchboard's count equals it. Usage that cannot be (1e300, negative, cached above the prompt)
 * locks no tenant out and refunds nothing.
 */
import { keyTenant } from '../../sample/guard/gateway-keys';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSwitchboard,
  type Price,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';
import {
  completion,
  json,
  scriptedUpstream,
  type ScriptedUpstream,
} from '../support/scripted-upstream';
import '../support/quiet-logs';

const MINI = 'gpt-4o-mini';
const BIG = 'gpt-4o';
const PRICES: Record<string, Price> = {
  [MINI]: { input: 0.15, output: 0.6 },
  [BIG]: { input: 2.5, output: 10 },
};
const BUDGET = 0.01;
/** What the upstream writes when nothing caps it. */
const WRITES = 4_000;
const CALLS = 200;
const TENANT = 'acme';
/** 400 characters: 100 prompt tokens, as the upstream counts them. */
const PROMPT = [{ role: 'user' as const, content: 'x'.repeat(400) }];

/** A `data:` URL of a PNG of `width` × `height` (its header: all a size is read from). */
function png(width: number, height: number): string {
  const head = Buffer.alloc(33);
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').copy(head);
  head.writeUInt32BE(width, 16);
  head.writeUInt32BE(height, 20);
  return `data:image/png;base64,${head.toString('base64')}`;
}

interface Run {
  upstream: SimulatedUpstream;
  sb: Switchboard;
}

/** An upstream with one deployment per model (each writing `WRITES` tokens), and a switchboard on it. */
async function start(more: Partial<SwitchboardOptions> = {}): Promise<Run> {
  const upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'mini', completionTokens: WRITES },
      { name: 'big', completionTokens: WRITES },
    ],
  });
  const sb = createSwitchboard(options(upstream, more));
  return { upstream, sb };
}

function options(upstream: SimulatedUpstream, more: Partial<SwitchboardOptions>) {
  return {
    deployments: (
      [
        ['mini', MINI],
        ['big', BIG],
      ] as const
    ).map(([name, model]) => ({
      provider: 'openai' as const,
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      models: [{ name: model, tpm: 100_000_000, rpm: 1_000_000 }],
    })),
    pricing: PRICES,
    tenants: { [TENANT]: { budget: { usd: BUDGET, per: 'day' as const } } },
    ...more,
  };
}

/** USD the upstream billed: the usage it reported on each deployment, at that model's price. */
function billed(upstream: SimulatedUpstream): number {
  let usd = 0;
  for (const [name, model] of [
    ['mini', MINI],
    ['big', BIG],
  ] as const) {
    const { promptTokens, completionTokens } = upstream.deployment(name).stats;
    usd += (promptTokens * PRICES[model]!.input + completionTokens * PRICES[model]!.output) / 1e6;
  }
  return usd;
}

async function settle(calls: Promise<unknown>[]): Promise<number> {
  const results = await Promise.allSettled(calls);
  return results.filter((r) => r.status === 'fulfilled').length;
}

function expectHeld(run: Run, admitted: number): void {
  const spent = billed(run.upstream);
  // The figures of the table in docs/tenants.md, on request.
  if (process.env.ONE_CHARGE_TABLE) {
    const counted = run.sb.costs()[TENANT];
    process.stdout.write(`${expect.getState().currentTestName}: ${admitted} ${spent} ${counted}\n`);
  }
  expect(admitted).toBeGreaterThan(0);
  expect(spent).toBeGreaterThan(0);
  expect(spent).toBeLessThanOrEqual(BUDGET + 1e-12);
  expect(Math.abs(run.sb.costs()[TENANT]! - spent)).toBeLessThan(1e-9);
}

describe(`${CALLS} concurrent calls of a tenant with a $${BUDGET} daily budget`, () => {
  let run: Run | undefined;
  afterEach(async () => {
    await run?.sb.close();
    await run?.upstream.close();
    run = undefined;
  });

  it('without max_tokens: each reserves the most the model may write, and the budget holds', async () => {
    run = await start();
    const sb = run.sb;
    const admitted = await settle(
      Array.from({ length: CALLS }, () =>
        sb.chat.completions.create({ model: MINI, messages: PROMPT, tenant: TENANT }),
      ),
    );
    expectHeld(run, admitted);
  });

  it('streamed with include_usage: false: usage is asked for, hidden from the caller, and settled', async () => {
    run = await start();
    const sb = run.sb;
    let usageChunks = 0;
    const admitted = await settle(
      Array.from({ length: CALLS }, async () => {
        const stream = await sb.chat.completions.create({
          model: MINI,
          messages: PROMPT,
          stream: true,
          stream_options: { include_usage: false },
          tenant: TENANT,
        });
        for await (const chunk of stream) if (chunk.usage) usageChunks++;
      }),
    );
    expect(usageChunks).toBe(0);
    expect(run.upstream.deployment('mini').requests[0]!.body).toMatchObject({
      stream_options: { include_usage: true },
    });
    expectHeld(run, admitted);
  });

  it('with a fallback to a dearer model: the dearer price is reserved before sending', async () => {
    run = await start({ fallbacks: { [MINI]: [BIG] } });
    // Every call finds gpt-4o-mini failing and fails over to gpt-4o.
    run.upstream.deployment('mini').fail({ kind: 'status', status: 503 }, 10_000);
    const sb = run.sb;
    const admitted = await settle(
      Array.from({ length: CALLS }, () =>
        sb.chat.completions.create({
          model: MINI,
          max_tokens: 100,
          messages: PROMPT,
          tenant: TENANT,
        }),
      ),
    );
    expect(run.upstream.deployment('big').stats.ok).toBe(admitted);
    expectHeld(run, admitted);
  });

  it.each([
    [
      'tool schemas in the prompt',
      {
        tools: [
          {
            type: 'function' as const,
            function: {
              name: 'lookup',
              description: 'd'.repeat(4_000),
              parameters: { type: 'object', properties: { q: { type: 'string' } } },
            },
          },
        ],
      },
    ],
    ['an image of 512 x 512', { image: png(512, 512) }],
    ['an image by URL, of a size not known', { image: 'https://example.com/cat.png' }],
  ])('with %s: the prompt estimate counts them as the upstream bills them', async (_, extra) => {
    run = await start();
    const sb = run.sb;
    const { image, ...rest } = extra as { image?: string };
    const messages =
      image === undefined
        ? PROMPT
        : [
            {
              role: 'user' as const,
              content: [
                { type: 'text' as const, text: PROMPT[0]!.content },
                { type: 'image_url' as const, image_url: { url: image } },
              ],
            },
          ];
    const admitted = await settle(
      Array.from({ length: CALLS }, () =>
        sb.chat.completions.create({
          model: MINI,
          max_tokens: 100,
          messages,
          tenant: TENANT,
          ...rest,
        }),
      ),
    );
    expectHeld(run, admitted);
  });

  it("with a content-filter fallback: the filtered answer and the fallback's are both billed and both counted", async () => {
    run = await start({ contentFilterFallbacks: { [MINI]: [BIG] } });
    const mini = run.upstream.deployment('mini');
    mini.fail({ kind: 'content-filter', on: 'completion' }, 10_000);
    const sb = run.sb;
    const call = () =>
      sb.chat.completions.create({
        model: MINI,
        max_tokens: 100,
        messages: PROMPT,
        tenant: TENANT,
      });
    // One call alone: its filtered answer and its fallback's answer are both counted.
    expect((await call()).model).toBe(BIG);
    expect(mini.stats.ok).toBe(1);
    expect(Math.abs(sb.costs()[TENANT]! - billed(run.upstream))).toBeLessThan(1e-9);
    // Then the burst: each filtered answer is billed, and a fallback is sent only while the
    // budget holds what it may be billed.
    const admitted = await settle(Array.from({ length: CALLS }, call));
    expect(run.upstream.deployment('big').stats.ok).toBe(admitted + 1);
    expectHeld(run, admitted + 1);
  });

  it('through the sample gateway, a key carrying the budget, without max_tokens', async () => {
    const upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'mini', completionTokens: WRITES },
        { name: 'big', completionTokens: WRITES },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), 'one-charge-'));
    let gateway: Gateway | undefined;
    try {
      const config = join(dir, 'switchboard.json');
      const opts = options(upstream, {});
      writeFileSync(
        config,
        JSON.stringify({ ...opts, tenants: { [keyTenant('k0')]: opts.tenants[TENANT] } }),
      );
      gateway = await gatewayWith({ SWITCHBOARD_CONFIG: config, GATEWAY_API_KEYS: 'k0' });
      const url = `${gateway.url}/v1/chat/completions`;
      const statuses = await Promise.all(
        Array.from({ length: CALLS }, () =>
          fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: 'Bearer k0' },
            body: JSON.stringify({ model: MINI, messages: PROMPT }),
          }).then(async (res) => (await res.arrayBuffer(), res.status)),
        ),
      );
      const admitted = statuses.filter((s) => s === 200).length;
      const spent = billed(upstream);
      expect(admitted).toBeGreaterThan(0);
      expect(spent).toBeLessThanOrEqual(BUDGET + 1e-12);
      const status = (await (
        await fetch(`${gateway.url}/switchboard`, { headers: { authorization: 'Bearer k0' } })
      ).json()) as { costs: { tenant: string; usd: number }[] };
      const counted = status.costs.find((c) => c.tenant === keyTenant('k0'))!.usd;
      if (process.env.ONE_CHARGE_TABLE) {
        process.stdout.write(`gateway: ${admitted} ${spent} ${counted}\n`);
      }
      expect(Math.abs(counted - spent)).toBeLessThan(1e-9);
    } finally {
      await gateway?.close();
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('usage that cannot be', () => {
  const CLAUDE = 'claude-sonnet-5';
  const prices = { ...PRICES, [CLAUDE]: { input: 3, output: 15 } };
  /** What a call of 100 prompt tokens and max_tokens 100 reserves, at `price`. */
  const reserved = (price: Price) => (100 * price.input + 100 * price.output) / 1e6;
  let up: ScriptedUpstream;
  let sb: Switchboard | undefined;
  const warnings: string[] = [];
  beforeAll(async () => {
    up = await scriptedUpstream();
  });
  afterAll(() => up.close());
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    warnings.length = 0;
  });

  function build(provider: 'openai' | 'anthropic'): Switchboard {
    const model = provider === 'openai' ? MINI : CLAUDE;
    sb = createSwitchboard({
      deployments: [
        provider === 'openai'
          ? {
              provider,
              name: 'liar',
              baseURL: `${up.origin}/v1`,
              apiKey: 'k',
              models: [{ name: model }],
            }
          : {
              provider,
              name: 'liar',
              baseURL: `${up.origin}/anthropic`,
              apiKey: 'k',
              models: [{ name: model }],
            },
      ],
      pricing: prices,
      tenants: { [TENANT]: { budget: { usd: BUDGET, per: 'day' } } },
      logger: { log() {}, warn: (m: string) => void warnings.push(m), error() {} },
    });
    return sb;
  }

  it.each([
    ['1e300 total tokens', { prompt_tokens: 100, completion_tokens: 1e300, total_tokens: 1e300 }],
    ['negative prompt tokens', { prompt_tokens: -2_000_000, completion_tokens: 5 }],
    [
      'cached tokens above the prompt',
      {
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 10_000_000 },
      },
    ],
  ])(
    'OpenAI, %s: charged its reservation, the tenant not locked out, one log line',
    async (_, usage) => {
      up.answer = (_req, res) => json(res, 200, completion(usage));
      const client = build('openai');
      const call = () =>
        client.chat.completions.create({
          model: MINI,
          max_tokens: 100,
          messages: PROMPT,
          tenant: TENANT,
        });
      await call();
      expect(client.costs()[TENANT]).toBeCloseTo(reserved(PRICES[MINI]!), 12);
      expect(warnings.filter((w) => w.includes('liar/gpt-4o-mini'))).toHaveLength(1);
      // Not locked out: the next calls are admitted and charged alike.
      await call();
      await call();
      expect(client.costs()[TENANT]).toBeCloseTo(3 * reserved(PRICES[MINI]!), 12);
    },
  );

  it('Claude, negative usage: refunds nothing of a spent budget', async () => {
    const message = (usage: unknown) => ({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: CLAUDE,
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      usage,
    });
    up.answer = (_req, res) => json(res, 200, message({ input_tokens: 100, output_tokens: 100 }));
    const client = build('anthropic');
    const call = () =>
      client.messages.create({ model: CLAUDE, max_tokens: 100, messages: PROMPT, tenant: TENANT });
    await call();
    const spent = client.costs()[TENANT]!;
    expect(spent).toBeCloseTo(reserved(prices[CLAUDE]), 12);
    up.answer = (_req, res) =>
      json(res, 200, message({ input_tokens: -1_000_000_000, output_tokens: -5 }));
    await call();
    expect(client.costs()[TENANT]).toBeCloseTo(2 * spent, 12);
    expect(warnings.filter((w) => w.includes('liar/claude-sonnet-5'))).toHaveLength(1);
  });
});
