/**
 * Why not there? A model whose two deployments cannot take a call, one cooling after an upstream
 * 429 and one at its `maxInFlight` cap: the switchboard's own 429 names each with its reason, in
 * the message and as `explanations`, also in the error body through `sb.fetch`. One injected
 * clock drives the switchboard and the simulated deployments, so the cooldown left is exact.
 */
import OpenAI, { RateLimitError } from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import type { DeploymentExplanation } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';

const MODEL = 'gpt-4o-mini';
/** Seconds the upstream's 429 asks for. */
const RETRY_AFTER = 30;

describe('explanations: cooling and the in-flight cap', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;
  let hold: AbortController;
  let held: Promise<unknown>;

  beforeEach(async () => {
    clock = new FakeClock();
    hold = new AbortController();
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'cooling' }, { name: 'capped' }],
      clock: clock.now,
    });
    sb = createSwitchboard({
      deployments: [
        // The preferred tier: the first call goes there and gets the upstream's 429.
        {
          provider: 'openai',
          name: 'cooling',
          baseURL: upstream.deployment('cooling').openaiBaseURL,
          apiKey: 'k',
          priority: 0,
          models: [{ name: MODEL, tpm: 100_000, rpm: 1_000 }],
        },
        // Failover sends it here, where it hangs: the deployment's one slot is taken.
        {
          provider: 'openai',
          name: 'capped',
          baseURL: upstream.deployment('capped').openaiBaseURL,
          apiKey: 'k',
          priority: 1,
          maxInFlight: 1,
          models: [{ name: MODEL, tpm: 100_000, rpm: 1_000 }],
        },
      ],
      clock: clock.now,
    });
    upstream.deployment('cooling').fail({ kind: 'status', status: 429, retryAfter: RETRY_AFTER });
    upstream.deployment('capped').fail({ kind: 'hang' });
    held = sb.chat.completions
      .create(
        { model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'first' }] },
        { signal: hold.signal },
      )
      .catch((e: unknown) => e);
    await upstream.deployment('capped').waitFor((d) => d.stats.inFlight === 1);
  });
  afterEach(async () => {
    hold.abort();
    await held;
    await sb.close();
    await upstream.close();
  });

  const ask = () =>
    sb.chat.completions.create({
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'second' }],
    });

  it("the switchboard's 429 names each deployment and why it was passed over", async () => {
    const before = upstream.deployment('cooling').stats.requests;
    const error = await ask().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const explanations = (error as { explanations: DeploymentExplanation[] }).explanations;
    expect(explanations).toEqual([
      {
        deployment: 'cooling',
        model: MODEL,
        reason: 'cooling',
        retryInMs: RETRY_AFTER * 1000,
        detail: 'cooling after rate_limit',
      },
      {
        deployment: 'capped',
        model: MODEL,
        reason: 'in_flight_cap',
        retryInMs: expect.any(Number) as number,
        detail: '1 calls in flight (maxInFlight 1)',
      },
    ]);
    const message = (error as Error).message;
    expect(message).toContain(
      `cooling: cooling after rate_limit, ready in ${RETRY_AFTER * 1000} ms`,
    );
    expect(message).toContain('capped: 1 calls in flight (maxInFlight 1)');
    // Held back: neither upstream saw the call.
    expect(upstream.deployment('cooling').stats.requests).toBe(before);
    expect(upstream.deployment('capped').stats.requests).toBe(1);

    // Ten seconds on, the cooldown left says so.
    clock.advance(10_000);
    const later = (await ask().catch((e: unknown) => e)) as {
      explanations: DeploymentExplanation[];
    };
    expect(later.explanations[0]).toMatchObject({ reason: 'cooling', retryInMs: 20_000 });
    // Once the cooldown is over, the preferred deployment takes calls again.
    clock.advance(20_000);
    await expect(ask()).resolves.toMatchObject({ model: MODEL });
    expect(upstream.deployment('cooling').stats.requests).toBe(before + 1);
  });

  it('passes them on in the error body through sb.fetch, without addresses', async () => {
    const client = new OpenAI({
      apiKey: 'unused',
      baseURL: 'http://switchboard/v1',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    const error = await client.chat.completions
      .create({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const body = (error as RateLimitError).error as {
      message: string;
      explanations: DeploymentExplanation[];
    };
    expect(body.explanations.map((e) => `${e.deployment}:${e.reason}`)).toEqual([
      'cooling:cooling',
      'capped:in_flight_cap',
    ]);
    expect(body.message).toContain('capped: 1 calls in flight (maxInFlight 1)');
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  });
});
