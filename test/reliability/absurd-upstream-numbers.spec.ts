/**
 * Numbers an upstream controls (`retry-after`, `retry-after-ms`, the `x-ratelimit-*` and
 * `anthropic-ratelimit-*` headers, usage fields) at values no upstream should send: the process
 * lives on, the call is rejected or answered sensibly, every wait is at most `maxCooldown`, and
 * what the switchboard reports stays finite.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { runDoctorCli } from '../../src/doctor/run';
import { gatewayWith } from '../support/gateway';
import {
  completion,
  json,
  scriptedUpstream,
  type ScriptedUpstream,
} from '../support/scripted-upstream';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';
const MAX_COOLDOWN = 3_600_000;
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** A configuration file of one OpenAI deployment at `origin` (the scripted upstream). */
function writeConfig(file: string, origin: string): void {
  const deployment = { provider: 'openai', name: 'a', baseURL: `${origin}/v1`, apiKey: 'k' };
  writeFileSync(
    file,
    JSON.stringify({ deployments: [{ ...deployment, models: [{ name: GPT }] }] }),
  );
}
const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'ping' }] };

/** Values of a number no upstream should send, each as the text of a header. */
const ABSURD = ['1e300', '1e18', '-1', 'NaN', 'Infinity', '-Infinity', '', ' ', '0x1p3', 'abc'];
const HUGE_DATE = 'Sat, 13 Sep 275760 00:00:00 GMT';

/**
 * A later call after an answer that reported absurd usage: answered, or refused by the
 * switchboard's own count (the upstream said the deployment is full) with a finite wait.
 */
async function answeredOrFull(call: () => Promise<unknown>): Promise<void> {
  const outcome = await call().then(
    () => 'answered',
    (e: unknown) => e,
  );
  if (outcome === 'answered') return;
  expect(outcome).toMatchObject({ status: 429, error: { code: 'switchboard_no_room' } });
  const wait = Number(/room expected in (\S+) ms/.exec((outcome as Error).message)?.[1]);
  expect(Number.isFinite(wait)).toBe(true);
}

/** Every number in `value`, depth first. */
function numbersIn(value: unknown, out: number[] = []): number[] {
  if (typeof value === 'number') out.push(value);
  else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) numbersIn(v, out);
  }
  return out;
}

describe('absurd numbers from an upstream', () => {
  let up: ScriptedUpstream;
  let sb: Switchboard | undefined;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    up = await scriptedUpstream();
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await up.close();
  });
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    // Let any stray rejection of the case surface before it is counted.
    await new Promise((done) => setImmediate(done));
    expect(unhandled).toEqual([]);
  });

  const build = (provider: 'openai' | 'anthropic' = 'openai') => {
    sb = createSwitchboard({
      maxCooldown: MAX_COOLDOWN,
      ratelimitWindow: 0,
      logger: quiet,
      deployments: [
        provider === 'openai'
          ? {
              provider,
              name: 'a',
              baseURL: `${up.origin}/v1`,
              apiKey: 'k',
              models: [{ name: GPT, tpm: 100_000, rpm: 1_000 }],
            }
          : {
              provider,
              name: 'a',
              baseURL: `${up.origin}/anthropic`,
              apiKey: 'k',
              models: [{ name: CLAUDE, tpm: 100_000, rpm: 1_000 }],
            },
      ],
    });
    return sb;
  };
  const state = () => sb!.deployments.get('a')!.models.values().next().value!;

  const waits: [string, Record<string, string>][] = [
    ...ABSURD.map((v): [string, Record<string, string>] => [
      `retry-after: ${v}`,
      { 'retry-after': v },
    ]),
    ...ABSURD.map((v): [string, Record<string, string>] => [
      `retry-after-ms: ${v}`,
      { 'retry-after-ms': v },
    ]),
    ['retry-after: a date in the year 275760', { 'retry-after': HUGE_DATE }],
    [
      'retry-after-ms: 1e18 beside retry-after: 1e300',
      { 'retry-after-ms': '1e18', 'retry-after': '1e300' },
    ],
  ];

  it.each(waits)(
    'a 429 with %s: the call is rejected with the 429, the cooldown at most maxCooldown',
    async (_name, headers) => {
      up.answer = (_req, res) =>
        json(res, 429, { error: { message: 'slow down', code: '429' } }, headers);
      build();
      const error = await sb!.chat.completions.create(ask).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as { status?: unknown }).status).toBe(429);
      const s = state();
      expect(s.cooldownRemaining).toBeGreaterThanOrEqual(0);
      expect(s.cooldownRemaining).toBeLessThanOrEqual(MAX_COOLDOWN);
      const why = s.downReason ?? '';
      const until = /until (\S+)$/.exec(why)?.[1];
      // A wait past the quota-exhausted threshold is reported with a real date.
      if (until !== undefined) expect(Number.isFinite(Date.parse(until))).toBe(true);
      for (const n of numbersIn(sb!.stats())) expect(Number.isFinite(n)).toBe(true);
    },
  );

  it('a 429 asking for 1e300 s cools the model for maxCooldown and says until when', async () => {
    up.answer = (_req, res) =>
      json(res, 429, { error: { message: 'no' } }, { 'retry-after': '1e300' });
    build();
    const before = Date.now();
    await expect(sb!.chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });
    const until = Date.parse(/^quota exhausted until (\S+)$/.exec(state().downReason!)![1]!);
    expect(until).toBeGreaterThanOrEqual(before + MAX_COOLDOWN);
    expect(until).toBeLessThanOrEqual(Date.now() + MAX_COOLDOWN);
  });

  const limitHeaders = (v: string) => ({
    'x-ratelimit-limit-tokens': v,
    'x-ratelimit-remaining-tokens': v,
    'x-ratelimit-limit-requests': v,
    'x-ratelimit-remaining-requests': v,
    'x-ratelimit-reset-tokens': v,
    'x-ratelimit-reset-requests': v,
  });

  it.each([...ABSURD, HUGE_DATE])(
    'x-ratelimit-* and usage of %j on a 200: answered or refused by the count, every figure finite',
    async (v) => {
      const n = Number(v);
      up.answer = (_req, res) =>
        json(
          res,
          200,
          completion({ prompt_tokens: n, completion_tokens: n, total_tokens: n }),
          limitHeaders(v),
        );
      build();
      const answer = await sb!.chat.completions.create(ask);
      expect(answer.choices[0]!.message.content).toBe('pong');
      for (let i = 0; i < 2; i++) await answeredOrFull(() => sb!.chat.completions.create(ask));
      for (const x of numbersIn(sb!.stats())) expect(Number.isFinite(x)).toBe(true);
    },
  );

  it('usage of 1e400 (Infinity once parsed) is charged as a bounded count', async () => {
    up.answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const body = JSON.stringify(completion({ prompt_tokens: 0, completion_tokens: 0 }));
      res.end(body.replace('"prompt_tokens":0', '"prompt_tokens":1e400'));
    };
    build();
    await sb!.chat.completions.create(ask);
    for (const x of numbersIn(sb!.stats())) expect(Number.isFinite(x)).toBe(true);
  });

  it.each([...ABSURD, HUGE_DATE])(
    'anthropic-ratelimit-* of %j: answered or refused by the count',
    async (v) => {
      const headers: Record<string, string> = {};
      for (const what of ['requests', 'tokens', 'input-tokens', 'output-tokens']) {
        headers[`anthropic-ratelimit-${what}-limit`] = v;
        headers[`anthropic-ratelimit-${what}-remaining`] = v;
      }
      up.answer = (_req, res) =>
        json(
          res,
          200,
          {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: CLAUDE,
            content: [{ type: 'text', text: 'pong' }],
            stop_reason: 'end_turn',
            usage: { input_tokens: Number(v), output_tokens: -1, cache_read_input_tokens: 1e300 },
          },
          headers,
        );
      build('anthropic');
      const claude = () =>
        sb!.messages.create({
          model: CLAUDE,
          max_tokens: 8,
          messages: [{ role: 'user', content: 'ping' }],
        });
      expect((await claude()).content[0]).toMatchObject({ text: 'pong' });
      for (let i = 0; i < 2; i++) await answeredOrFull(claude);
      for (const x of numbersIn(sb!.stats())) expect(Number.isFinite(x)).toBe(true);
    },
  );

  it('through the sample gateway: a 429 asking for 1e300 s is a 429 with retry-after at most 60 s', async () => {
    up.answer = (_req, res) =>
      json(
        res,
        429,
        { error: { message: 'no' } },
        { 'retry-after': '1e300', 'retry-after-ms': '1e18' },
      );
    const dir = mkdtempSync(join(tmpdir(), 'sb-absurd-gw-'));
    const file = join(dir, 'switchboard.json');
    writeConfig(file, up.origin);
    const gateway = await gatewayWith({ SWITCHBOARD_CONFIG: file });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(ask),
        });
        expect(res.status).toBe(429);
        expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
        await res.text();
      }
      const health = await fetch(`${gateway.url}/health`);
      expect(health.status).toBeLessThan(500);
      await health.text();
    } finally {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('doctor', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'sb-absurd-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each([
      ['retry-after', '1e300'],
      ['retry-after-ms', '1e18'],
      ['retry-after', HUGE_DATE],
    ])(
      'a 429 with %s: %s is a failed row with a real date, and doctor returns',
      async (name, v) => {
        up.answer = (_req, res) => json(res, 429, { error: { message: 'no' } }, { [name]: v });
        const file = join(dir, 'doctor.json');
        writeConfig(file, up.origin);
        const out: string[] = [];
        const status = await runDoctorCli(['doctor', file, '--json'], {
          out: (t) => out.push(t),
          err: (t) => out.push(t),
        });
        expect(status).toBe(1);
        const [row] = JSON.parse(out.join('\n')) as {
          ok: boolean;
          status: number;
          error: string;
        }[];
        expect(row).toMatchObject({ ok: false, status: 429 });
        const until = /^quota exhausted until (\S+)$/.exec(row!.error)?.[1];
        expect(Number.isFinite(Date.parse(until!))).toBe(true);
      },
    );
  });
});
