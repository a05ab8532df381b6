import { randomBytes } from 'node:crypto';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createSwitchboard, redisState, type Switchboard } from '../../src';
import type { ModelState } from '../../src/registry/model-state';
import { SimulatedUpstream, type SimulatedDeployment } from '../../src/testing';
import { allAnswered, upstreamCounts } from '../support/answered';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { TestReader } from '../support/metric-reader';
import { redisForFile } from '../support/redis-server';
import { GPT } from '../support/upstream';
import { expectLocalLeases, leasePoints, leasesSettled, RecordingLogger } from './cluster';

/** The organization's tokens per minute, a bucket (OpenAI's rule), above two projects of ten times it. */
const ORG_TPM = 6_000;
const PROJECT_TPM = 60_000;
/** 1 600 characters: 400 prompt tokens; with 100 of output cap, 500 a call at admission. */
const PROMPT = 'x'.repeat(1_600);
const CHARGE = 500;
/** Virtual time moves in steps of this many ms while calls wait and none is on its way. */
const STEP = 500;
const PROJECTS = [
  { key: 'p1', pool: 'org/p1' },
  { key: 'p2', pool: 'org/p2' },
] as const;

const store = redisForFile();

interface Replicas {
  clock: FakeClock;
  upstream: SimulatedUpstream;
  sims: SimulatedDeployment[];
  instances: Switchboard[];
  loggers: RecordingLogger[];
  states: ModelState[];
}

let r: Replicas | undefined;
afterEach(async () => {
  await Promise.all(r?.instances.map((sb) => sb.close()) ?? []);
  await r?.upstream.close();
  r = undefined;
});

/**
 * `n` switchboards on one store, each with a key of project `org/p1` and one of `org/p2`, under
 * the organization's level `org`, on one virtual clock. The simulated upstream counts the
 * organization as OpenAI's guide says: one bucket holding every project's calls.
 */
async function replicas(n: number, rules: 'openai' | 'azure' = 'openai'): Promise<Replicas> {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    quotaPools: { org: { tpm: ORG_TPM } },
    deployments: PROJECTS.map(({ key, pool }) => ({
      name: key,
      rules,
      completionTokens: 20,
      rpm: 10_000,
      tpm: PROJECT_TPM,
      quotaPool: pool,
    })),
  });
  const prefix = `levels-${randomBytes(4).toString('hex')}:`;
  const loggers = Array.from({ length: n }, () => new RecordingLogger());
  const instances = loggers.map((logger) =>
    createSwitchboard({
      clock: clock.now,
      ratelimitWindow: 60_000,
      logger,
      queue: { maxWait: 3_600_000 },
      quotaPools: { org: { tpm: ORG_TPM } },
      state: redisState({ url: store.server.url, prefix, syncInterval: 100, timeout: 1_000 }),
      deployments: PROJECTS.map(({ key, pool }) => ({
        provider: 'openai' as const,
        name: key,
        baseURL: upstream.deployment(key).openaiBaseURL,
        apiKey: `sk-${key}`,
        tags: [key],
        models: [{ name: GPT, rpm: 10_000, tpm: PROJECT_TPM, quotaPool: pool }],
      })),
    }),
  );
  await eventually(() => instances.every((sb) => sb.state.health().lastSync !== undefined));
  const states = instances.flatMap((sb) =>
    PROJECTS.map(({ key }) => sb.deployments.get(key)!.models.get(GPT)!),
  );
  const sims = PROJECTS.map(({ key }) => upstream.deployment(key));
  return { clock, upstream, sims, instances, loggers, states };
}

/**
 * Sends `perProject` calls through every replica on each project at once, and moves the clock
 * while calls wait and none is on its way, until all are answered: the calls that failed and
 * how far the clock moved.
 */
async function wave(k: Replicas, perProject: number): Promise<{ failed: number; moved: number }> {
  const start = k.clock.ms;
  let settled = 0;
  let failed = 0;
  const calls = k.instances.flatMap((sb, i) =>
    PROJECTS.flatMap(({ key }) =>
      Array.from({ length: perProject }, (_, j) =>
        sb.chat.completions
          .create({
            model: GPT,
            max_tokens: 100,
            messages: [{ role: 'user', content: `${i} ${j} ${PROMPT}`.slice(0, PROMPT.length) }],
            tags: [key],
          })
          .catch(() => (failed += 1))
          .finally(() => (settled += 1)),
      ),
    ),
  );
  while (settled < calls.length && k.clock.ms - start < 600_000) {
    await allAnswered(k.states);
    const waiting = k.instances.some((sb) => sb.queue!.length(GPT) > 0);
    const settled = k.instances.every(leasesSettled);
    if (waiting && settled && k.states.every((s) => s.inFlight.count === 0)) {
      k.clock.advance(STEP);
      for (const sb of k.instances) sb.queue!.kick(GPT);
    }
  }
  await Promise.all(calls);
  return { failed, moved: k.clock.ms - start };
}

/** Tokens the organization's bucket was sent by `at` (admission charges), from the upstream's records. */
function sentBy(sims: readonly SimulatedDeployment[], at: number): number {
  const chat = sims.flatMap((s) => s.requests).filter((q) => q.api === 'chat' && q.at <= at);
  return chat.length * CHARGE;
}

/**
 * At every step from `from` (when the organization's bucket was full) to `to`: what the
 * upstreams were sent together is at most the bucket and what it refilled since (100 a second).
 */
function expectWithinLevel(sims: readonly SimulatedDeployment[], from: number, to: number): void {
  for (let t = from; t <= to; t += STEP) {
    expect(sentBy(sims, t)).toBeLessThanOrEqual(ORG_TPM + ((t - from) * ORG_TPM) / 60_000);
  }
}

/** `switchboard.leases` granted, by their attributes other than `result`. */
async function granted(reader: TestReader): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { attributes, value } of await leasePoints(reader)) {
    const { result, ...rest } = attributes;
    if (result !== 'granted') continue;
    const key = JSON.stringify(rest);
    out[key] = (out[key] ?? 0) + value;
  }
  return out;
}

describe('a level above quota pools, shared by replicas through the store', () => {
  jest.setTimeout(60_000);

  it('four replicas under one organization never send it more than its bucket admits', async () => {
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const k = (r = await replicas(4));
    const start = k.clock.ms;
    // 24 calls of 500 tokens, 12 000: twice the organization's bucket, a tenth of each project's.
    const { failed, moved } = await wave(k, 3);
    const { sent, rejected } = upstreamCounts(k.sims);
    process.stdout.write(
      `4 replicas, org ${ORG_TPM} TPM above 2 projects: ${rejected} upstream 429s of ${sent} sent ` +
        `(${sentBy(k.sims, start) / CHARGE} at once), ${failed} failed, over ${moved / 1_000} s of the clock\n`,
    );
    expect(rejected).toBe(0);
    expect(failed).toBe(0);
    expect(sent).toBe(24);
    // At once, at most the bucket; then no faster than it refills.
    expectWithinLevel(k.sims, start, k.clock.ms);
    // The level paced them, and used its room: the second half went as the bucket refilled
    // (6 000 tokens at 100 a second).
    expect(moved).toBeGreaterThanOrEqual(50_000);
    expect(moved).toBeLessThanOrEqual(90_000);
    // The level's leases are counted as the level's, apart from each project's own.
    const counts = await granted(reader);
    metrics.disable();
    expect(counts[JSON.stringify({ level: 'org' })]).toBeGreaterThan(0);
    expect(counts[JSON.stringify({ model: GPT, deployment: 'p1' })]).toBeGreaterThan(0);
    // Each replica's members hold leases of the level under its own key in the store.
    const keys = await store.client.keys('levels-*:lease:%level:org');
    expect(keys).toHaveLength(1);
  });

  it("four replicas never send an Azure level more than it admits in a minute, the store's", async () => {
    const k = (r = await replicas(4, 'azure'));
    const start = k.clock.ms;
    // 24 calls of 500 tokens: two minutes of the level's 6 000. Its minute opened with the first
    // lease, as the calls began: no header says where the upstream's would be.
    const { failed, moved } = await wave(k, 3);
    const { sent, rejected } = upstreamCounts(k.sims);
    expect(rejected).toBe(0);
    expect(failed).toBe(0);
    expect(sent).toBe(24);
    const perMinute: number[] = [];
    for (let from = start; from < k.clock.ms; from += 60_000) {
      perMinute.push(sentBy(k.sims, from + 59_999) - sentBy(k.sims, from - 1));
    }
    process.stdout.write(
      `4 replicas, Azure level of ${ORG_TPM} TPM: tokens sent by minute ${perMinute.join(', ')}, ` +
        `${rejected} upstream 429s\n`,
    );
    expect(Math.max(...perMinute)).toBeLessThanOrEqual(ORG_TPM);
    // The first minute was used whole; the second minute's calls went in the second or third.
    expect(perMinute[0]).toBe(ORG_TPM);
    expect(moved).toBeGreaterThanOrEqual(60_000);
    expect(moved).toBeLessThan(180_000);
  });

  it('admits within 1/replicas of the level while the store is stopped', async () => {
    const k = (r = await replicas(4));
    const begin = k.clock.ms;
    // Every replica took leases: the store counted four; 8 calls, 4 000 of the organization's 6 000.
    await wave(k, 1);
    const first = upstreamCounts(k.sims).sent;
    await store.server.stop();
    try {
      // 16 calls, 8 000 tokens: each replica's part is 1 500 a minute, less the 1 000 it spent.
      const { failed, moved } = await wave(k, 2);
      const { sent, rejected } = upstreamCounts(k.sims);
      process.stdout.write(
        `store stopped: ${rejected} upstream 429s of ${sent} sent, ${failed} failed, over ${moved / 1_000} s\n`,
      );
      expect(rejected).toBe(0);
      expect(failed).toBe(0);
      expect(sent).toBe(first + 16);
      // 500 a replica at once, the bucket's 2 000 left; the other 12 calls at 1 500 a minute each.
      expectWithinLevel(k.sims, begin, k.clock.ms);
      expect(moved).toBeGreaterThanOrEqual(50_000);
      expectLocalLeases(k.instances, k.loggers, 4);
    } finally {
      await store.server.restart();
      // The file's own client reconnects too: left reconnecting, its timer outlives the file.
      await eventually(() => store.client.status === 'ready');
    }
  });
});
