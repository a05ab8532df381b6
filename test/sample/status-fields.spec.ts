/**
 * What `GET /switchboard` (the data of the status page) shows per deployment and model after real
 * calls through the gateway (the OpenAI and Anthropic SDKs against the gateway, the switchboard's
 * SDK clients against simulated deployments that send rate-limit headers): our count beside the
 * upstream's last reported remaining, limits learned from the headers marked as learned, calls
 * waiting in the queue and how long, calls that failed for their callers, and a utilization that
 * is the largest of the shares the bars show.
 *
 * Only `Date` is faked: the switchboard's clock, the simulated deployments' quota windows and the
 * queue's wait all read it, and stand still unless the test moves them. Sockets and timers are
 * real.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import request from 'supertest';
import { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { createGateway, type Gateway } from '../../sample/main';
import type { ModelStatus, SwitchboardStatus } from '../../sample/status/status.service';

// Two seconds into a minute: the simulated deployments count in fixed minutes, and every call
// of this test falls in the same one.
const T0 = Date.UTC(2026, 0, 5, 9, 30, 2);
const REAL_TIMERS = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
] as const;

/** USD per million tokens of gpt-4o-mini in the gateway's configuration. */
const MINI_PRICE = { input: 0.15, output: 0.6, cachedInput: 0.075 };

const dir = mkdtempSync(join(tmpdir(), 'switchboard-status-'));
const saved = process.env.SWITCHBOARD_CONFIG;
let upstream: SimulatedUpstream;
let gateway: Gateway;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  jest.useFakeTimers({ doNotFake: [...REAL_TIMERS], now: T0 });
  upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'east', tpm: 10_000, rpm: 600 },
      { name: 'west', tpm: 8_000, rpm: 300 },
      { name: 'tight', tpm: 100_000, rpm: 6 },
      { name: 'foundry', tpm: 0, rpm: 100, itpm: 4_000, otpm: 1_000 },
    ],
  });
  const config = {
    deployments: [
      openaiDeployment('east', [{ name: 'gpt-4o-mini', tpm: 10_000, rpm: 600 }]),
      // No limits configured: they are learned from the upstream's headers.
      openaiDeployment('west', [{ name: 'gpt-4o-mini' }]),
      openaiDeployment('tight', [{ name: 'gpt-4o', tpm: 100_000, rpm: 6 }]),
      {
        provider: 'anthropic',
        name: 'foundry',
        baseURL: upstream.deployment('foundry').anthropicBaseURL,
        apiKey: 'k',
        models: [{ name: 'claude-sonnet-5', rpm: 100, itpm: 4_000, otpm: 1_000 }],
      },
    ],
    queue: { maxWait: 600_000, maxQueued: 1 },
    pricing: { 'gpt-4o-mini': MINI_PRICE, 'claude-sonnet-5': { input: 3, output: 15 } },
    // acme is named: its spend is shown apart; every other tenant's is `other`.
    tenants: { acme: { tpm: 1_000_000 } },
  };
  const file = join(dir, 'switchboard.json');
  writeFileSync(file, JSON.stringify(config));
  process.env.SWITCHBOARD_CONFIG = file;
  gateway = await createGateway({ port: 0, host: '127.0.0.1', logger: false });
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  jest.useRealTimers();
  if (saved === undefined) delete process.env.SWITCHBOARD_CONFIG;
  else process.env.SWITCHBOARD_CONFIG = saved;
  rmSync(dir, { recursive: true, force: true });
});

function openaiDeployment(name: string, models: object[]) {
  return {
    provider: 'openai',
    name,
    baseURL: upstream.deployment(name).openaiBaseURL,
    apiKey: 'k',
    models,
  };
}

async function status(): Promise<SwitchboardStatus> {
  const res = await request(gateway.app.getHttpServer()).get('/switchboard').expect(200);
  return res.body as SwitchboardStatus;
}

function row(s: SwitchboardStatus, deployment: string, model: string): ModelStatus {
  const found = s.deployments
    .find((d) => d.name === deployment)
    ?.models.find((m) => m.name === model);
  if (found === undefined) throw new Error(`no row for ${deployment}/${model}`);
  return found;
}

const ask = (model: string, content: string) =>
  openai.chat.completions.create({ model, max_tokens: 64, messages: [{ role: 'user', content }] });

/** Yields to the event loop until `done()` holds (no timer: the answer is near). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise<void>((resolve) => setImmediate(resolve));
}

it("shows our count beside the upstream's remaining, and limits it learned as learned", async () => {
  // Both deployments of gpt-4o-mini answer: the one without limits looks empty at first, and
  // the selector prefers it until its headers teach it its limits.
  for (let i = 0; i < 4; i++)
    await ask('gpt-4o-mini', `Question ${i}: ${'tell me more. '.repeat(40)}`);
  const s = await status();
  for (const name of ['east', 'west']) {
    const m = row(s, name, 'gpt-4o-mini');
    const simulated = upstream.deployment(name);
    const headers = simulated.rateLimitHeaders('openai');
    expect(m.requests).toBeGreaterThan(0);
    // What the upstream's last answer said was left is what it says now (nothing has changed
    // since, in its fixed minute).
    expect(m.tpm.upstreamRemaining).toBe(Number(headers['x-ratelimit-remaining-tokens']));
    expect(m.rpm.upstreamRemaining).toBe(Number(headers['x-ratelimit-remaining-requests']));
    expect(m.tpm.upstreamRemaining).toBeLessThan(simulated.tpm);
    // Our own count: the requests we sent there, and every one's prompt and output cap.
    expect(m.rpm.ours).toBe(m.requests);
    expect(m.tpm.ours).toBeGreaterThanOrEqual(64 * m.requests);
  }
  const east = row(s, 'east', 'gpt-4o-mini');
  expect([east.tpm.limit, east.tpm.learned, east.rpm.limit, east.rpm.learned]).toEqual([
    10_000,
    false,
    600,
    false,
  ]);
  const west = row(s, 'west', 'gpt-4o-mini');
  expect(west.tpm).toMatchObject({ limit: 8_000, learned: true });
  expect(west.rpm).toMatchObject({ limit: 300, learned: true });
  expect(s.stats.west!['gpt-4o-mini']!.learned).toEqual(expect.arrayContaining(['tpm', 'rpm']));
  expect(s.stats.east!['gpt-4o-mini']!.learned).toBeUndefined();

  // Claude on Foundry: input and output tokens each against their own limit.
  await anthropic.messages.create({
    model: 'claude-sonnet-5',
    max_tokens: 200,
    messages: [{ role: 'user', content: 'Summarize. '.repeat(100) }],
  });
  const claude = row(await status(), 'foundry', 'claude-sonnet-5');
  const foundry = upstream.deployment('foundry').rateLimitHeaders('anthropic');
  expect(claude.itpm).toMatchObject({ limit: 4_000, learned: false });
  expect(claude.otpm).toMatchObject({ limit: 1_000, learned: false });
  // Anthropic gives remaining tokens to the nearest thousand: read 500 lower, on the safe side.
  expect(claude.itpm!.upstreamRemaining).toBe(
    Number(foundry['anthropic-ratelimit-input-tokens-remaining']) - 500,
  );
  // Output counts when it is produced, after the answer's headers were written: they said
  // the bucket was full (1 000, read as 500).
  expect(claude.otpm!.upstreamRemaining).toBe(500);
  expect(claude.itpm!.share).toBeGreaterThan(0);
});

it('counts the calls waiting for room and how long the first has waited, and the 429s returned', async () => {
  const sb = gateway.app.get(Switchboard);
  // rpm 6: Azure admits one request per 10 s, and the first takes it.
  await ask('gpt-4o', 'first');
  const abort = new AbortController();
  const waiting = openai.chat.completions
    .create(
      { model: 'gpt-4o', max_tokens: 64, messages: [{ role: 'user', content: 'second' }] },
      {
        signal: abort.signal,
      },
    )
    .then(
      () => 'answered',
      (error: unknown) => (error instanceof OpenAI.APIUserAbortError ? 'aborted' : error),
    );
  await until(() => sb.queue!.length('gpt-4o') === 1);
  jest.setSystemTime(T0 + 4_000);
  // The queue holds one call at most: the third fails at once with a 429, counted as failed.
  const third = await ask('gpt-4o', 'third').catch((error: unknown) => error);
  expect(third).toBeInstanceOf(OpenAI.RateLimitError);
  const s = await status();
  const summary = s.models.find((m) => m.name === 'gpt-4o')!;
  expect(summary.queued).toBe(1);
  expect(summary.queueWaitMs).toBe(4_000);
  expect(summary.failed).toEqual({ rateLimited: 1, other: 0 });
  expect(s.models.find((m) => m.name === 'gpt-4o-mini')!.failed).toEqual({
    rateLimited: 0,
    other: 0,
  });
  // The full 10-s window is what utilization counts: the requests bar shows that share too.
  const tight = row(s, 'tight', 'gpt-4o');
  expect(tight.healthy).toBe(false);
  expect(tight.rpm.recent).toEqual({ used: 1, limit: 1 });
  expect(tight.rpm.share).toBe(1);
  expect(tight.util).toBe(1);
  abort.abort();
  expect(await waiting).toBe('aborted');
  await until(() => sb.queue!.length('gpt-4o') === 0);
});

it('shows a utilization that is the largest of the shares its bars show', async () => {
  const s = await status();
  const rows = s.deployments.flatMap((d) => d.models.map((m) => ({ d: d.name, m })));
  expect(rows).toHaveLength(4);
  for (const { d, m } of rows) {
    const shares = [m.tpm.share, m.rpm.share, m.itpm?.share ?? 0, m.otpm?.share ?? 0];
    expect({ d, util: m.util }).toEqual({ d, util: m.cooling ? 1 : Math.max(...shares) });
    // Each bar's share is its own count against its own limit (or the 10-s window's).
    for (const q of [m.tpm, m.rpm, m.itpm, m.otpm]) {
      if (q === undefined || q.limit === 0) continue;
      const recent = q.recent ? q.recent.used / q.recent.limit : 0;
      expect(q.share).toBeCloseTo(Math.max(q.used / q.limit, recent), 2);
    }
  }
});

it('shows USD spent per tenant, priced from the usage each answer reported', async () => {
  const spent = (s: SwitchboardStatus) => Object.fromEntries(s.costs.map((c) => [c.tenant, c.usd]));
  const before = spent(await status());
  // The named tenant and `other` are listed from the start; the calls above were `other`'s.
  expect(Object.keys(before).sort()).toEqual(['acme', 'other']);
  expect(before.acme).toBe(0);
  expect(before.other).toBeGreaterThan(0);
  const priced = (u: OpenAI.CompletionUsage) => {
    const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    return (
      ((u.prompt_tokens - cached) * MINI_PRICE.input +
        cached * MINI_PRICE.cachedInput +
        u.completion_tokens * MINI_PRICE.output) /
      1e6
    );
  };
  const asTenant = (tenant: string, content: string) =>
    openai.chat.completions.create(
      { model: 'gpt-4o-mini', max_tokens: 32, messages: [{ role: 'user', content }] },
      { headers: { 'x-switchboard-tenant': tenant } },
    );
  let acme = 0;
  for (let i = 0; i < 3; i++) acme += priced((await asTenant('acme', `acme ${i}`)).usage!);
  // A tenant not named is counted as `other`, so that the list stays short.
  const other = priced((await asTenant('initech', 'initech')).usage!);
  const s = await status();
  const after = spent(s);
  expect(Object.keys(after).sort()).toEqual(['acme', 'other']);
  expect(Math.abs(after.acme! - acme)).toBeLessThan(1e-9);
  expect(Math.abs(after.other! - before.other! - other)).toBeLessThan(1e-9);
  // Largest first.
  expect(s.costs.map((c) => c.usd)).toEqual([...s.costs.map((c) => c.usd)].sort((a, b) => b - a));
});
