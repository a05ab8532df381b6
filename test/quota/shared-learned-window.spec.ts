import { randomBytes } from 'node:crypto';
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { upstreamCounts } from '../support/answered';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { redisForFile } from '../support/redis-server';
import { GPT } from '../support/upstream';

/** 600 requests a minute, which OpenAI's upstream enforces as 10 a second. */
const RPM = 600;

let upstream: SimulatedUpstream;
let replicas: Switchboard[] = [];

const store = redisForFile();
afterEach(async () => {
  await Promise.all(replicas.map((sb) => sb.close()));
  replicas = [];
  await upstream?.close();
});

/**
 * One OpenAI deployment whose upstream enforces its per-minute request limit per second (its
 * guide: "60,000 requests/minute may be enforced as 1,000 requests/second"), and switchboards on
 * it, each with a queue: those of `shared` on one prefix of one `redis-server`, one more on a
 * prefix of its own. One clock.
 */
async function setup(shared: number) {
  const clock = new FakeClock(Date.now());
  upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'oai', rules: 'openai', rpm: RPM, tpm: 0, requestWindow: '1s' }],
  });
  const prefix = `p${randomBytes(4).toString('hex')}:`;
  const logs: string[] = [];
  const make = (prefixOf: string) =>
    createSwitchboard({
      clock: clock.now,
      queue: { maxWait: 600_000 },
      logger: { log: () => undefined, warn: (line) => logs.push(String(line)), error: () => {} },
      state: redisState({ url: store.server.url, prefix: prefixOf, syncInterval: 3_600_000 }),
      deployments: [
        {
          provider: 'openai' as const,
          name: 'oai',
          baseURL: upstream.deployment('oai').openaiBaseURL,
          apiKey: 'sk-oai',
          models: [{ name: GPT, rpm: RPM }],
        },
      ],
    });
  replicas = [
    ...Array.from({ length: shared }, () => make(prefix)),
    make(`q${randomBytes(4).toString('hex')}:`),
  ];
  await eventually(() => replicas.every((sb) => sb.state.health().connection === 'ready'), 20_000);
  const model = (sb: Switchboard) => sb.deployments.get('oai')!.models.get(GPT)!;
  /** `n` calls at once from `sb`, time moving 100 ms a step until all are done: the upstream's 429s. */
  const burst = async (sb: Switchboard, n: number) => {
    const sim = [upstream.deployment('oai')];
    const before = upstreamCounts(sim).rejected;
    let left = n;
    const calls = Array.from({ length: n }, (_, i) =>
      sb.chat.completions
        .create({ model: GPT, max_tokens: 4, messages: [{ role: 'user', content: `${i}` }] })
        .finally(() => (left -= 1)),
    );
    while (left > 0) {
      for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
      clock.advance(100);
      sb.queue!.kick(GPT);
    }
    await Promise.all(calls);
    // The upstream's second drains before the next burst.
    clock.advance(60_000);
    return upstreamCounts(sim).rejected - before;
  };
  return { prefix, logs, model, burst };
}

describe('a request window one replica learns, shared through the store', () => {
  jest.setTimeout(90_000);

  it('the other replica counts by it before its own first 429; a replica on another prefix learns alone', async () => {
    const { logs, model, burst } = await setup(2);
    const [a, b, alone] = replicas as [Switchboard, Switchboard, Switchboard];
    // A cold burst ramps from one second's share plus one: the upstream refuses the one over.
    expect(await burst(a, 30)).toBe(1);
    expect(model(a).quota.burst.period).toBe('1s');
    // B reads it from the store and counts per second from then on, without a 429 of its own.
    await eventually(() => model(b).quota.burst.period === '1s', {
      what: 'the learned window to reach the other replica',
      timeout: 20_000,
    });
    expect(logs.filter((l) => l.includes('another replica learned'))).toHaveLength(1);
    expect(await burst(b, 30)).toBe(0);
    // The replica on a prefix of its own pays its own probe.
    expect(model(alone).quota.burst.period).toBeUndefined();
    expect(await burst(alone, 30)).toBe(1);
  });

  it('a stored value that is not a list of learned rules is skipped, each kind with one log line', async () => {
    const { prefix, logs, model } = await setup(1);
    const key = `${prefix}learned-rules`;
    const said = (what: string) => logs.filter((l) => l.includes(what)).length;
    await store.client.set(key, 'not json');
    await eventually(() => said('not a list') === 1, {
      what: 'the value to be skipped',
      timeout: 20_000,
    });
    await store.client.set(key, '[["oai","gpt-4o-mini","request-window-1 year"],7]');
    await eventually(() => said("'learned-rules' entry") === 2, {
      what: 'the entries to be skipped',
      timeout: 20_000,
    });
    // Read again with a good entry beside the bad ones: it is taken, the bad ones not said again.
    await store.client.set(key, `[7, ["oai", "${GPT}", "request-window-1s"]]`);
    await eventually(() => model(replicas[0]!).quota.burst.period === '1s', {
      what: 'the good entry to be taken',
      timeout: 20_000,
    });
    expect(said("'learned-rules' entry")).toBe(2);
    expect(said('not a list')).toBe(1);
  });
});
