import {
  createSwitchboard,
  type ModelConfig,
  type Switchboard,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { SimulatedUpstream, type SimulatedDeployment } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import '../support/quiet-logs';

const MODEL = 'gpt-4.1';
/** The PTU's capacity: input-equivalent tokens a minute. */
const CAPACITY = 60_000;
/** gpt-4.1 on PTU: an output token counts as 4 input tokens. */
const WEIGHT = 4;
const MINUTE = 60_000;
/** Virtual ms between two batches of calls. */
const STEP = 1_000;

/** A kind of traffic: the calls' prompts and output, and what one costs the PTU when it ends. */
interface Workload {
  /** The prompt of call `i`. */
  prompt(i: number): string;
  maxTokens: number;
  /** Output tokens of every answer. */
  output: number;
  /** Weighted tokens one call costs the PTU once answered (its cached input free), roughly. */
  cost: number;
}

const random = seeded(33);
const words = (chars: number, seed: number) =>
  Array.from({ length: Math.ceil(chars / 8) }, (_, k) => `w${(seed * 7919 + k) % 99_991}`)
    .join(' ')
    .slice(0, chars);

/** Prompts of 300-900 tokens, none alike; 100 tokens of output, 256 asked. */
const mixed: Workload = {
  prompt: (i) => `${i} ${words(1_200 + Math.floor(random() * 2_400), i)}`,
  maxTokens: 256,
  output: 100,
  cost: 600 + 100 * WEIGHT,
};

/** One 3 000-token document asked about: its prefix is cached upstream after the first call. */
const DOCUMENT = words(12_000, 1);
const cacheHeavy: Workload = {
  prompt: (i) => `${DOCUMENT}\nQuestion ${i}: ${words(400, i + 7)}`,
  maxTokens: 300,
  output: 250,
  // The cache holds the prefix in steps of 128 tokens: about 200 tokens stay uncached.
  cost: 200 + 250 * WEIGHT,
};

/** Short prompts and long answers: output is what fills the PTU. */
const outputHeavy: Workload = {
  prompt: (i) => `${i} ${words(400, i)}`,
  maxTokens: 2_000,
  output: 1_500,
  cost: 100 + 1_500 * WEIGHT,
};

/** What one run measured on the PTU and beyond it. */
interface Figures {
  calls: number;
  /** Calls the PTU answered, and those it refused with a 429. */
  ptuOk: number;
  ptu429: number;
  ptuSent: number;
  /** Weighted tokens the PTU admitted in the measured minutes, over its capacity then. */
  filled: number;
  payg: number;
  failed: number;
}

/**
 * A PTU (tier 0) and a pay-as-you-go deployment (tier 1) on simulated upstreams sharing one clock
 * with the switchboard; `model` is how the PTU is configured. Offers `load` times the PTU's
 * capacity, a batch every second, for a minute of warm-up and `minutes` measured (`options` for the switchboard).
 */
async function run(
  work: Workload,
  model: Partial<ModelConfig>,
  options: Partial<SwitchboardOptions> = {},
  load = 2,
  minutes = 2,
): Promise<Figures> {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [
      {
        name: 'ptu',
        rules: 'azure-ptu',
        tpm: CAPACITY,
        outputWeight: WEIGHT,
        completionTokens: work.output,
      },
      { name: 'payg', tpm: 100_000_000, rpm: 1_000_000, completionTokens: work.output },
    ],
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    random: seeded(5),
    ratelimitWindow: MINUTE,
    ...options,
    deployments: [
      {
        provider: 'openai',
        name: 'ptu',
        baseURL: upstream.deployment('ptu').openaiBaseURL,
        apiKey: 'k',
        priority: 0,
        models: [{ name: MODEL, tpm: CAPACITY, ...model }],
      },
      {
        provider: 'openai',
        name: 'payg',
        baseURL: upstream.deployment('payg').openaiBaseURL,
        apiKey: 'k',
        priority: 1,
        models: [{ name: MODEL, tpm: 100_000_000, rpm: 1_000_000 }],
      },
    ],
  });
  const ptu: SimulatedDeployment = upstream.deployment('ptu');
  const perStep = (load * CAPACITY * STEP) / MINUTE / work.cost;
  let owed = 0;
  let calls = 0;
  let failed = 0;
  let filled = 0;
  const warmup = MINUTE / STEP;
  const steps = warmup + (minutes * MINUTE) / STEP;
  try {
    for (let t = 0; t < steps; t++) {
      owed += perStep;
      const n = Math.floor(owed);
      owed -= n;
      const results = await Promise.allSettled(
        Array.from({ length: n }, () =>
          sb.chat.completions
            .create({
              model: MODEL,
              max_tokens: work.maxTokens,
              messages: [{ role: 'user', content: work.prompt(calls++) }],
            })
            .withResponse(),
        ),
      );
      for (const r of results) {
        if (r.status === 'rejected') {
          failed++;
          continue;
        }
        const { data, response } = r.value;
        if (t < warmup || response.headers.get('x-simulated-deployment') !== 'ptu') continue;
        const usage = data.usage!;
        const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
        filled += usage.prompt_tokens - cached + usage.completion_tokens * WEIGHT;
      }
      clock.advance(STEP);
    }
    const { ok, rateLimited, requests } = ptu.stats;
    return {
      calls,
      ptuOk: ok,
      ptu429: rateLimited,
      ptuSent: requests,
      filled: filled / (CAPACITY * minutes),
      payg: upstream.deployment('payg').stats.ok,
      failed,
    };
  } finally {
    await sb.close();
    await upstream.close();
  }
}

const PROVISIONED = { provisioned: true, outputWeight: WEIGHT } as const;

const report = (what: string, f: Figures) =>
  process.stdout.write(
    `${what}: PTU filled ${(f.filled * 100).toFixed(1)} % of its capacity, ` +
      `${f.ptu429} 429s of ${f.ptuSent} sent to it (${((f.ptu429 / Math.max(1, f.ptuSent)) * 100).toFixed(1)} %), ` +
      `${f.payg} of ${f.calls} calls spilled to pay-as-you-go, ${f.failed} failed\n`,
  );

describe('a provisioned (PTU) deployment above a pay-as-you-go tier', () => {
  // Hundreds of real HTTP calls in virtual minutes: a busy machine may need more than 5 s.
  jest.setTimeout(120_000);

  it('serves at least 85 % of what it can accept at 200 % load, with at most 2 % 429s', async () => {
    const f = await run(mixed, PROVISIONED);
    report('PTU at 200 %, provisioned', f);
    expect(f.filled).toBeGreaterThanOrEqual(0.85);
    expect(f.ptu429 / f.ptuSent).toBeLessThanOrEqual(0.02);
    expect(f.payg).toBeGreaterThan(0);
    expect(f.failed).toBe(0);
  });

  it('fills with a cache-heavy workload instead of spilling it, as a plain tpm did not', async () => {
    const f = await run(cacheHeavy, PROVISIONED);
    report('cache-heavy at 200 %, provisioned', f);
    const plain = await run(cacheHeavy, {});
    report('cache-heavy at 200 %, plain tpm', plain);
    expect(f.filled).toBeGreaterThanOrEqual(0.85);
    expect(f.ptu429 / f.ptuSent).toBeLessThanOrEqual(0.02);
    expect(f.filled).toBeGreaterThan(plain.filled);
    expect(f.failed).toBe(0);
  });

  it('does not overrun it with an output-heavy workload', async () => {
    const f = await run(outputHeavy, PROVISIONED);
    report('output-heavy at 200 %, provisioned', f);
    expect(f.ptu429 / f.ptuSent).toBeLessThanOrEqual(0.02);
    expect(f.filled).toBeGreaterThanOrEqual(0.85);
    expect(f.failed).toBe(0);
  });
});

describe("a PTU's 429", () => {
  it('cools the model down for its retry-after-ms, not the whole seconds of retry-after', async () => {
    const clock = new FakeClock();
    const upstream = await SimulatedUpstream.start({
      clock: clock.now,
      deployments: [{ name: 'ptu', rules: 'azure-ptu', tpm: CAPACITY, outputWeight: WEIGHT }],
    });
    const sim = upstream.deployment('ptu');
    const sb = createSwitchboard({
      clock: clock.now,
      deployments: [
        {
          provider: 'openai',
          name: 'ptu',
          baseURL: sim.openaiBaseURL,
          apiKey: 'k',
          models: [{ name: MODEL, tpm: CAPACITY, ...PROVISIONED }],
        },
      ],
    });
    try {
      // Another application took the PTU 1 234 tokens past 100 %: below again in 1 235 ms.
      sim.consume({ tokens: CAPACITY + 1_234, force: true });
      const state = sb.deployments.get('ptu')!.models.get(MODEL)!;
      await expect(
        sb.chat.completions.create({
          model: MODEL,
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ).rejects.toMatchObject({ status: 429 });
      expect(sim.stats.rateLimited).toBe(1);
      expect(state.cooldownRemaining).toBe(1_235);
    } finally {
      await sb.close();
      await upstream.close();
    }
  });
});

describe('provisioned and outputWeight in the configuration', () => {
  const build = (model: Partial<ModelConfig>, provider: 'openai' | 'anthropic' = 'openai') =>
    createSwitchboard({
      deployments: [
        provider === 'openai'
          ? {
              provider,
              name: 'ptu',
              baseURL: 'http://127.0.0.1:2/openai/v1/',
              apiKey: 'k',
              models: [{ name: MODEL, tpm: CAPACITY, ...model }],
            }
          : {
              provider,
              name: 'ptu',
              baseURL: 'http://127.0.0.1:2/anthropic/',
              apiKey: 'k',
              models: [{ name: 'claude-sonnet-5', ...model }],
            },
      ],
    });

  it('takes a finite weight of at least 1 on a provisioned model', async () => {
    const sb = build(PROVISIONED);
    const state = sb.deployments.get('ptu')!.models.get(MODEL)!;
    expect(state.quota.utilization?.outputWeight).toBe(WEIGHT);
    await sb.close();
  });

  it.each([0.5, 0, -1, Infinity, Number.NaN])('refuses outputWeight %p', (outputWeight) => {
    expect(() => build({ provisioned: true, outputWeight })).toThrow(
      /models\[0\]\.outputWeight must be a finite number of at least 1/,
    );
  });

  it('refuses outputWeight without provisioned, and provisioned on Claude', () => {
    expect(() => build({ outputWeight: 4 })).toThrow(
      /outputWeight is set on 'gpt-4\.1' of 'ptu', which is not provisioned/,
    );
    expect(() => build({ provisioned: true }, 'anthropic')).toThrow(
      /provisioned is set on 'claude-sonnet-5' of the anthropic deployment 'ptu'/,
    );
  });
});
