/**
 * Deployments that refuse connections: while every deployment a call may go to is unreachable,
 * calls fail at once with a SwitchboardError, and one probe call per cooldown goes out to each, so
 * that a deployment listening again is seen within one cooldown. Real SDK clients over real TCP to
 * ports nothing listens on, an injected clock; connection attempts are counted from undici's own
 * diagnostics channel, not inferred.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import OpenAI from 'openai';
import {
  createSwitchboard,
  SwitchboardError,
  type DeploymentConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { unreachableWhy } from '../../src/failover/unreachable';
import { deadPort } from '../support/dead-port';

const GPT = 'gpt-4o-mini';
const MINI = 'gpt-4.1-mini';
const COOLDOWN = 10_000;

/** Connection attempts undici makes to `ports`, counted as they start. */
function connectionAttempts(ports: number[]): { readonly count: number; stop(): void } {
  let count = 0;
  const listener = (message: unknown) => {
    const port = Number((message as { connectParams?: { port?: unknown } }).connectParams?.port);
    if (ports.includes(port)) count++;
  };
  subscribe('undici:client:beforeConnect', listener);
  return {
    get count() {
      return count;
    },
    stop: () => unsubscribe('undici:client:beforeConnect', listener),
  };
}

const ask = (content: string, model = GPT) => ({
  model,
  messages: [{ role: 'user' as const, content }],
});

const settle = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (error: unknown) => error as Error,
  );

describe('every deployment refusing connections', () => {
  let now = 1_700_000_000_000;
  const clock = () => now;
  let ports: number[];
  let sb: Switchboard | undefined;
  let upstream: SimulatedUpstream | undefined;

  const deployment = (name: string, port: number, models = [GPT]): DeploymentConfig => ({
    provider: 'openai',
    name,
    baseURL: `http://127.0.0.1:${port}/${name}/openai/v1/`,
    apiKey: `sk-${name}`,
    timeout: 2_000,
    models: models.map((m) => ({ name: m, cooldown: COOLDOWN })),
  });

  beforeEach(async () => {
    ports = [await deadPort(), await deadPort()];
  });
  afterEach(async () => {
    await sb?.close();
    await upstream?.close();
    sb = undefined;
    upstream = undefined;
  });

  it('20 000 calls: connection attempts bounded by one probe per deployment per cooldown', async () => {
    const attempts = connectionAttempts(ports);
    sb = createSwitchboard({
      deployments: [deployment('east', ports[0]!), deployment('west', ports[1]!)],
      clock,
    });
    const start = now;
    // The first call finds out: both deployments refuse (the second by failover).
    const first = await settle(sb.chat.completions.create(ask('first')));
    expect(first).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(attempts.count).toBe(2);
    const states = [...sb.deployments.values()].map((d) => d.models.get(GPT)!);
    expect(states.map((s) => s.downReason)).toEqual([
      'unreachable (connection refused)',
      'unreachable (connection refused)',
    ]);

    // Then 19 999 more, in concurrent batches of 1 000, the clock moving 1 ms per call: 20 s,
    // two cooldowns crossed, the probe of each going out while a batch is in flight.
    const errors: Error[] = [];
    for (let sent = 1; sent < 20_000; sent += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, 20_000 - sent) }, (_, i) =>
        settle(sb!.chat.completions.create(ask(`c${sent + i}`))),
      );
      errors.push(...((await Promise.all(batch)) as Error[]));
      now += batch.length;
    }
    const span = now - start;
    attempts.stop();

    expect(errors).toHaveLength(19_999);
    const refused = errors.filter((e) => e instanceof SwitchboardError);
    for (const e of errors.filter((x) => !(x instanceof SwitchboardError))) {
      // A probe that was refused: the SDK's connection error.
      expect(e).toBeInstanceOf(OpenAI.APIConnectionError);
    }
    // One probe per deployment per cooldown, after the first call's two attempts.
    const bound = 2 * (1 + Math.floor(span / COOLDOWN));
    expect(attempts.count).toBeGreaterThan(2);
    expect(attempts.count).toBeLessThanOrEqual(bound);
    expect(refused.length).toBeGreaterThanOrEqual(19_999 - (attempts.count - 2));
    const example = refused[0] as SwitchboardError;
    expect(example.code).toBe('unavailable');
    expect(example.status).toBe(503);
    expect(example.message).toMatch(
      /^No deployments available for gpt-4o-mini: every deployment that may take the call refuses connections \(east: cooling after unreachable \(connection refused\), ready in \d+ ms; west: .*\); the next probe call goes out in \d+ s\./,
    );
    expect(example.explanations.map((e) => e.deployment)).toEqual(['east', 'west']);
    // 20 000 calls take a few seconds on a loaded machine: a bound on the test, not on the code.
  }, 60_000);

  it('a deployment listening again: calls succeed within one cooldown, the probe first', async () => {
    const attempts = connectionAttempts(ports);
    const toWest = connectionAttempts([ports[1]!]);
    sb = createSwitchboard({
      deployments: [deployment('east', ports[0]!), deployment('west', ports[1]!)],
      clock,
    });
    await settle(sb.chat.completions.create(ask('first')));
    now += 3_000;
    expect(await settle(sb.chat.completions.create(ask('fast')))).toBeInstanceOf(SwitchboardError);
    expect(attempts.count).toBe(2);

    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }], port: ports[0] });
    const listening = now;
    let answered: number | undefined;
    // One call per virtual second: each fails at once until east's probe is due.
    for (let i = 0; i < 20 && answered === undefined; i++) {
      const result = await sb.chat.completions.create(ask(`try ${i}`)).then(
        (c) => c.choices[0]!.message.content,
        (e: unknown) => e,
      );
      if (result === `try ${i}`) answered = now;
      else expect(result).toBeInstanceOf(SwitchboardError);
      if (answered === undefined) now += 1_000;
    }
    expect(answered).toBeDefined();
    expect(answered! - listening).toBeLessThanOrEqual(COOLDOWN);
    // The probe answered: the next calls go to east as usual, west still cooling.
    for (let i = 0; i < 5; i++) {
      const c = await sb.chat.completions.create(ask(`after ${i}`));
      expect(c.choices[0]!.message.content).toBe(`after ${i}`);
    }
    expect(upstream.deployment('east').stats.requests).toBe(6);
    // West, still refusing, was tried once more when its cooldown ended (it is no longer the
    // only kind of deployment left, so the usual routing may pick it), then cooled again.
    expect(toWest.count).toBeLessThanOrEqual(2);
    expect(sb.deployments.get('west')!.models.get(GPT)!.downReason).toMatch(/^unreachable/);
    attempts.stop();
    toWest.stop();
  });

  it('a reachable deployment or fallback takes the calls: nothing fails fast', async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'north' }] });
    const north: DeploymentConfig = {
      ...deployment('north', 0, [MINI]),
      baseURL: upstream.deployment('north').openaiBaseURL,
    };
    sb = createSwitchboard({
      deployments: [deployment('east', ports[0]!), deployment('west', ports[1]!), north],
      fallbacks: { [GPT]: [MINI] },
      clock,
    });
    const attempts = connectionAttempts(ports);
    // The first call finds out, on its two attempts; then the fallback takes the calls.
    await settle(sb.chat.completions.create(ask('first')));
    expect(attempts.count).toBe(2);
    for (let i = 0; i < 5; i++) {
      const c = await sb.chat.completions.create(ask(`f${i}`));
      expect(c.choices[0]!.message.content).toBe(`f${i}`);
    }
    expect(upstream.deployment('north').stats.requests).toBe(5);
    expect(attempts.count).toBe(2);
    attempts.stop();
  });

  it("a refused connection cools the deployment's other models with the one called", async () => {
    sb = createSwitchboard({
      deployments: [deployment('east', ports[0]!, [GPT, MINI])],
      clock,
    });
    await settle(sb.chat.completions.create(ask('x')));
    const east = sb.deployments.get('east')!;
    expect(east.models.get(MINI)!.downReason).toBe('unreachable (connection refused)');
    const other = await settle(sb.chat.completions.create(ask('y', MINI)));
    expect(other).toBeInstanceOf(SwitchboardError);
    expect(other!.message).toContain('No deployments available for gpt-4.1-mini');
  });
});

describe('unreachableWhy', () => {
  const fetchFailed = (cause: object) =>
    new OpenAI.APIConnectionError({
      cause: Object.assign(new TypeError('fetch failed'), { cause }),
    });

  it.each([
    [{ code: 'ECONNREFUSED', syscall: 'connect' }, 'unreachable (connection refused)'],
    [{ code: 'ENOTFOUND', syscall: 'getaddrinfo' }, 'unreachable (DNS lookup failed)'],
    [{ code: 'EAI_AGAIN', syscall: 'getaddrinfo' }, 'unreachable (DNS lookup failed)'],
    [{ code: 'EHOSTUNREACH', syscall: 'connect' }, 'unreachable (host unreachable)'],
    [{ code: 'ECONNRESET', syscall: 'connect' }, 'unreachable (connection reset while connecting)'],
    [
      {
        code: 'ECONNRESET',
        message: 'Client network socket disconnected before secure TLS connection was established',
      },
      'unreachable (connection reset while connecting)',
    ],
  ])('%j: %s', (cause, why) => {
    expect(unreachableWhy(fetchFailed(cause))).toBe(why);
  });

  it.each([
    // Connected, then reset: the upstream had the request.
    { code: 'ECONNRESET', syscall: 'read' },
    { code: 'UND_ERR_SOCKET', message: 'other side closed' },
    { code: 'UND_ERR_CONNECT_TIMEOUT' },
    { message: 'terminated' },
  ])('%j: reached (or may have been)', (cause) => {
    expect(unreachableWhy(fetchFailed(cause))).toBeUndefined();
  });
});
