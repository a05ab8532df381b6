import Anthropic, { RateLimitError as AnthropicRateLimitError } from '@anthropic-ai/sdk';
import AnthropicFoundry from '@anthropic-ai/foundry-sdk';
import OpenAI, { BadRequestError, RateLimitError } from 'openai';

import { SwitchboardError } from 'nestjs-switchboard';
import {
  startSimulatedUpstream,
  type SimulatedDeployment,
  type SimulatedUpstream,
} from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: GPT,
  messages: [{ role: 'user' as const, content }],
  ...extra,
});

function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => (out[key] = value));
  return out;
}

async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe("simulated quotas, 'faithful' (the default)", () => {
  let upstream: SimulatedUpstream;
  let now = 0;
  const openai = (d: SimulatedDeployment) => new OpenAI(d.openaiClientOptions());
  const anthropic = (d: SimulatedDeployment) => new Anthropic(d.anthropicClientOptions());

  beforeAll(async () => {
    upstream = await startSimulatedUpstream({
      deployments: [
        { name: 'azure', tpm: 10_000, rpm: 60 },
        { name: 'small', tpm: 1_000, rpm: 600, inferredMaxTokens: 100 },
        { name: 'fast', rpm: 120, requestWindow: '1s' },
        { name: 'claude', rpm: 50, itpm: 2_000, otpm: 1_000 },
      ],
      clock: () => now,
    });
  });
  beforeEach(() => {
    now += 3_600_000; // a fresh hour: every window and bucket is full again
  });
  afterEach(() => upstream.reset());
  afterAll(() => upstream.close());

  describe('Azure OpenAI routes', () => {
    it('charges prompt + max_tokens at admission and reports it on every answer', async () => {
      const d = upstream.deployment('azure');
      const { data, response } = await openai(d)
        .chat.completions.create(chat('x'.repeat(40), { max_tokens: 500 }))
        .withResponse();
      expect(data.usage?.completion_tokens).toBe(10);
      // 10 prompt tokens + the 500 reserved, not the 10 used; no refund at the end
      expect(headersOf(response.headers)).toMatchObject({
        'x-ratelimit-limit-tokens': '10000',
        'x-ratelimit-remaining-tokens': '9490',
        'x-ratelimit-reset-tokens': '60',
        // Azure's request headers speak of its 10 s window: 60 RPM is 10 per 10 s
        'x-ratelimit-limit-requests': '10',
        'x-ratelimit-remaining-requests': '9',
        'x-ratelimit-reset-requests': '10',
      });
      now += 15_000;
      const next = await openai(d)
        .chat.completions.create(chat('y', { max_completion_tokens: 90 }))
        .withResponse();
      expect(next.response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(9490 - 91));
      expect(next.response.headers.get('x-ratelimit-reset-tokens')).toBe('45');
      // errors carry the headers too
      const bad = (await thrown(() =>
        openai(d).chat.completions.create({ model: GPT, messages: [] }),
      )) as BadRequestError;
      expect(bad).toBeInstanceOf(BadRequestError);
      expect(bad.headers.get('x-ratelimit-remaining-tokens')).toBe(String(9490 - 91));
      // the fixed minute ends: everything is free again
      now += 45_000;
      expect(d.rateLimitHeaders()['x-ratelimit-remaining-tokens']).toBe(10_000);
    });

    it('reserves inferredMaxTokens when a request sets no cap (default 4096)', async () => {
      const d = upstream.deployment('azure');
      const { response } = await openai(d).chat.completions.create(chat('abcd')).withResponse();
      expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(10_000 - 1 - 4096));
      expect(d.inferredMaxTokens).toBe(4096);

      const small = upstream.deployment('small');
      const first = await openai(small).chat.completions.create(chat('abcd')).withResponse();
      expect(first.response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - 101));
    });

    it('charges Responses by max_output_tokens and embeddings by their input only', async () => {
      const d = upstream.deployment('small');
      const created = await openai(d)
        .responses.create({ model: GPT, input: 'x'.repeat(40), max_output_tokens: 200 })
        .withResponse();
      expect(created.response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(1000 - 210));
      const embedded = await openai(d)
        .embeddings.create({ model: 'e', input: 'x'.repeat(80), encoding_format: 'float' })
        .withResponse();
      expect(embedded.response.headers.get('x-ratelimit-remaining-tokens')).toBe(
        String(1000 - 210 - 20),
      );
    });

    it('answers 429 with retry-after and retry-after-ms until the minute ends', async () => {
      const d = upstream.deployment('small');
      await openai(d).chat.completions.create(chat('x', { max_tokens: 800 }));
      now += 20_000;
      const err = (await thrown(() =>
        openai(d).chat.completions.create(chat('x', { max_tokens: 300 })),
      )) as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.headers.get('retry-after')).toBe('40');
      expect(err.headers.get('retry-after-ms')).toBe('40000');
      expect(err.headers.get('x-ratelimit-remaining-tokens')).toBe('199');
      expect(err.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
      await openai(d).chat.completions.create(chat('x', { max_tokens: 150 }));
      now += 40_000;
      await openai(d).chat.completions.create(chat('x', { max_tokens: 300 }));
      expect(d.stats).toMatchObject({ ok: 3, rateLimited: 1 });
    });

    it('says so when a request can never fit', async () => {
      const d = upstream.deployment('small');
      const err = (await thrown(() =>
        openai(d).chat.completions.create(chat('x', { max_tokens: 5000 })),
      )) as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.message).toMatch(/5001 tokens exceed .* \(1000 per minute\) and can never fit/);
    });

    it('limits requests to rpm / 6 per 10 s, or rpm / 60 per 1 s', async () => {
      const d = upstream.deployment('azure');
      for (let i = 0; i < 10; i++) {
        await openai(d).chat.completions.create(chat('x', { max_tokens: 1 }));
      }
      const err = (await thrown(() =>
        openai(d).chat.completions.create(chat('x', { max_tokens: 1 })),
      )) as RateLimitError;
      expect(err.error).toMatchObject({ type: 'requests' });
      expect(err.headers.get('retry-after-ms')).toBe('10000');
      // the 10 s window's view, as Azure reports it: none left of 10
      expect(err.headers.get('x-ratelimit-limit-requests')).toBe('10');
      expect(err.headers.get('x-ratelimit-remaining-requests')).toBe('0');
      now += 10_000;
      await openai(d).chat.completions.create(chat('x', { max_tokens: 1 }));

      const fast = upstream.deployment('fast');
      await openai(fast).chat.completions.create(chat('x'));
      await openai(fast).chat.completions.create(chat('x'));
      now += 400;
      const fastErr = (await thrown(() =>
        openai(fast).chat.completions.create(chat('x')),
      )) as RateLimitError;
      expect(fastErr.headers.get('retry-after-ms')).toBe('600');
      now += 600;
      await openai(fast).chat.completions.create(chat('x'));
    });

    it('lets another application use part of the quota (consume)', async () => {
      const d = upstream.deployment('small');
      expect(d.consume({ tokens: 600, requests: 3 })).toEqual({ admitted: true, retryAfterMs: 0 });
      const { response } = await openai(d)
        .chat.completions.create(chat('x', { max_tokens: 99 }))
        .withResponse();
      expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe('300');
      // 600 RPM is 100 per 10 s window
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(String(100 - 4));
      // the other application is refused like a 429 when it does not fit, unless forced
      expect(d.consume({ tokens: 301 })).toMatchObject({ admitted: false });
      expect(d.consume({ tokens: 301, force: true })).toMatchObject({ admitted: true });
      expect(d.rateLimitHeaders()['x-ratelimit-remaining-tokens']).toBe(0);
      expect(() => d.consume({ tokens: -1 })).toThrow(/tokens must be a number >= 0/);
    });
  });

  describe('Anthropic routes (Claude on Foundry)', () => {
    it('counts actual output, not max_tokens, and reports the three limits and their sum', async () => {
      const d = upstream.deployment('claude');
      const { data, response } = await anthropic(d)
        .messages.create({
          model: CLAUDE,
          max_tokens: 600,
          messages: [{ role: 'user', content: 'x'.repeat(400) }],
        })
        .withResponse();
      expect(data.usage).toMatchObject({ input_tokens: 100, output_tokens: 100 });
      const headers = headersOf(response.headers);
      expect(headers).toMatchObject({
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-input-tokens-limit': '2000',
        // 1 900 left, rounded to the nearest thousand as Anthropic's headers are
        'anthropic-ratelimit-input-tokens-remaining': '2000',
        'anthropic-ratelimit-output-tokens-limit': '1000',
        // written at admission: max_tokens does not factor into OTPM
        'anthropic-ratelimit-output-tokens-remaining': '1000',
        // the sum of input and output, remaining (2 900) rounded to the nearest thousand
        'anthropic-ratelimit-tokens-limit': '3000',
        'anthropic-ratelimit-tokens-remaining': '3000',
      });
      expect(headers['anthropic-ratelimit-input-tokens-reset']).toBe(
        new Date(now + 3_000).toISOString(),
      );
      expect(headers['x-ratelimit-remaining-tokens']).toBeUndefined();
      // once the answer ended, the 100 output tokens it produced are charged: 900 left, which the
      // header gives to the nearest thousand (the charge itself: simulated-quota.spec)
      expect(d.rateLimitHeaders('anthropic')['anthropic-ratelimit-output-tokens-remaining']).toBe(
        1000,
      );
    });

    it('answers 429 with retry-after when a bucket is short, refilled over the minute', async () => {
      const d = upstream.deployment('claude');
      const foundry = new AnthropicFoundry(d.anthropicClientOptions());
      const params = {
        model: CLAUDE,
        max_tokens: 16,
        messages: [{ role: 'user' as const, content: 'x'.repeat(6000) }],
      };
      await foundry.messages.create(params); // 1500 input tokens
      const err = (await thrown(() => foundry.messages.create(params))) as AnthropicRateLimitError;
      expect(err).toBeInstanceOf(AnthropicRateLimitError);
      // 1000 input tokens missing at 2000 per minute: 30 s
      expect(err.headers?.get('retry-after')).toBe('30');
      expect(err.headers?.get('retry-after-ms')).toBeNull();
      expect(err.message).toMatch(/input token rate limit/);
      now += 30_000;
      await foundry.messages.create(params);
    });

    it('writes the prompt cache on the first cache_control request and reads it after', async () => {
      const d = upstream.deployment('claude');
      const system = [
        {
          type: 'text' as const,
          text: 's'.repeat(4400),
          cache_control: { type: 'ephemeral' as const },
        },
      ];
      const params = {
        model: CLAUDE,
        max_tokens: 16,
        system,
        messages: [{ role: 'user' as const, content: 'x'.repeat(40) }],
      };
      const first = await anthropic(d).messages.create(params).withResponse();
      expect(first.data.usage).toMatchObject({
        input_tokens: 10,
        cache_creation_input_tokens: 1100,
        cache_read_input_tokens: 0,
      });
      // 890 left, to the nearest thousand
      expect(first.response.headers.get('anthropic-ratelimit-input-tokens-remaining')).toBe('1000');
      const second = await anthropic(d).messages.create(params).withResponse();
      expect(second.data.usage).toMatchObject({
        input_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 1100,
      });
      // cache reads are free: only the 10 uncached tokens are charged (880 left; with the reads
      // charged, none would be)
      expect(second.response.headers.get('anthropic-ratelimit-input-tokens-remaining')).toBe(
        '1000',
      );
      // another deployment has its own cache
      const plain = await anthropic(upstream.deployment('azure')).messages.create(params);
      expect(plain.usage.cache_creation_input_tokens).toBe(1100);
      // no cache_control, no cache fields
      const uncached = await anthropic(d).messages.create({ ...params, system: 'plain' });
      expect(uncached.usage).toMatchObject({
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      });
    });
  });

  describe('options', () => {
    it('rejects invalid options with the field path and what is expected', async () => {
      const start = (deployment: Record<string, unknown>) =>
        startSimulatedUpstream({ deployments: [{ name: 'ok' }, deployment as never] });
      await expect(start({ name: 'x', quota: 'strict' })).rejects.toThrow(
        "deployments[1].quota must be 'faithful' or 'friendly'",
      );
      await expect(start({ name: 'x', tpm: -5 })).rejects.toThrow(
        'deployments[1].tpm must be a number >= 0 (0 = unlimited)',
      );
      await expect(start({ name: 'x', inferredMaxTokens: 1.5 })).rejects.toThrow(
        'deployments[1].inferredMaxTokens must be a whole number of tokens >= 0',
      );
      await expect(start({ name: 'x', requestWindow: '5s' })).rejects.toThrow(
        "deployments[1].requestWindow must be '10s' or '1s'",
      );
      await expect(start({ name: 'x', tpmm: 5 })).rejects.toThrow(
        "deployments[1] has unknown key 'tpmm'",
      );
      await expect(start({ name: 'x', tpm: -5 })).rejects.toBeInstanceOf(SwitchboardError);
    });
  });
});
