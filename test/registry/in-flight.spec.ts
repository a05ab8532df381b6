import {
  createSwitchboard,
  parseSwitchboardConfig,
  type ModelConfig,
  type Switchboard,
} from 'nestjs-switchboard';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from 'nestjs-switchboard/testing';
import { seeded } from '../support/random';

const GPT = 'gpt-4o-mini';

interface Setup {
  upstream: SimulatedUpstream;
  sb: Switchboard;
  /** The most requests each simulated deployment had in flight at once. */
  peak: Record<string, number>;
  close(): Promise<void>;
}

/** Simulated deployments `a`, `b`, ... and a switchboard over them; `model` adds to each model entry. */
async function setup(
  sims: Partial<SimulatedDeploymentOptions>[],
  model: Partial<ModelConfig>,
  options: { queue?: { maxWait: number }; deploymentCap?: number } = {},
): Promise<Setup> {
  const names = sims.map((_, i) => String.fromCharCode(97 + i));
  const upstream = await SimulatedUpstream.start({
    deployments: sims.map((s, i) => ({ name: names[i]!, ...s })),
  });
  const peak: Record<string, number> = {};
  let closed = false;
  for (const d of upstream.deployments) {
    peak[d.name] = 0;
    // Checked whenever a request arrives or ends; never satisfied, so it watches to the end.
    d.waitFor((x) => {
      peak[x.name] = Math.max(peak[x.name]!, x.stats.inFlight);
      return closed;
    }).catch(() => undefined);
  }
  const sb = createSwitchboard({
    deployments: names.map((name) => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      maxInFlight: options.deploymentCap,
      models: [{ name: GPT, ...model }],
    })),
    ratelimitWindow: 0,
    random: seeded(27),
    queue: options.queue,
  });
  return {
    upstream,
    sb,
    peak,
    close: async () => {
      closed = true;
      await sb.close();
      await upstream.close();
    },
  };
}

const ask = (content: string) => ({ model: GPT, messages: [{ role: 'user' as const, content }] });
const stateOf = (s: Setup, name: string) => s.sb.deployments.get(name)!.models.get(GPT)!;

describe('maxInFlight', () => {
  let s: Setup | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('with maxInFlight: 2 on each of two deployments, 24 concurrent calls never put more than 2 in flight on either and all succeed', async () => {
    s = await setup(
      [{ latency: 20 }, { latency: 20 }],
      { maxInFlight: 2 },
      {
        queue: { maxWait: 10_000 },
      },
    );
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) => s!.sb.chat.completions.create(ask(`call ${i}`))),
    );
    replies.forEach((c, i) => expect(c.choices[0]!.message.content).toContain(`call ${i}`));
    expect(s.peak).toEqual({ a: 2, b: 2 });
    const sent = s.upstream.deployments.map((d) => d.stats.requests);
    expect(sent[0]! + sent[1]!).toBe(24);
    expect(stateOf(s, 'a').inFlight.count + stateOf(s, 'b').inFlight.count).toBe(0);
  });

  it("takes a deployment's maxInFlight for each of its models, a model's own winning", async () => {
    s = await setup([{ latency: 20 }], {}, { deploymentCap: 3 });
    expect(stateOf(s, 'a').inFlight.cap).toBe(3);
    await s.close();
    s = await setup([{ latency: 20 }], { maxInFlight: 1 }, { deploymentCap: 3 });
    expect(stateOf(s, 'a').inFlight.cap).toBe(1);
  });

  it('sends calls over the cap to the deployment with a free slot', async () => {
    s = await setup([{ latency: 30 }, { latency: 30 }], { maxInFlight: 1 });
    const replies = await Promise.all(
      [0, 1].map((i) => s!.sb.chat.completions.create(ask(`${i}`))),
    );
    expect(replies).toHaveLength(2);
    expect(s.peak).toEqual({ a: 1, b: 1 });
  });

  it('without a queue, a call finding every slot taken fails fast with a 429 and sends nothing', async () => {
    s = await setup([{ latency: 50 }], { maxInFlight: 1 });
    const first = s.sb.chat.completions.create(ask('first'));
    await s.upstream.deployment('a').waitFor((d) => d.stats.inFlight === 1);
    const second = s.sb.chat.completions.create(ask('second'));
    await expect(second).rejects.toMatchObject({ status: 429 });
    await expect(second).rejects.toThrow(/No deployment of gpt-4o-mini has room/);
    await first;
    expect(s.upstream.deployment('a').stats.requests).toBe(1);
  });

  it('refuses a call that continues a stored response while its deployment is at the cap, and sends it once a slot is free', async () => {
    s = await setup([{ latency: 40 }], { maxInFlight: 1 });
    const home = s.upstream.deployment('a');
    const first = await s.sb.responses.create({ model: GPT, input: 'start' });
    const busy = s.sb.responses.create({ model: GPT, input: 'busy' });
    await home.waitFor((d) => d.stats.inFlight === 1);
    const refused = s.sb.responses.create({
      model: GPT,
      input: 'go on',
      previous_response_id: first.id,
    });
    await expect(refused).rejects.toThrow(/has 1 calls in flight \(maxInFlight 1\)/);
    expect(home.stats.requests).toBe(2);
    await busy;
    const chained = await s.sb.responses.create({
      model: GPT,
      input: 'go on',
      previous_response_id: first.id,
    });
    expect(chained.previous_response_id).toBe(first.id);
    expect(s.peak.a).toBe(1);
  });

  it('counts a stream until it is read to its end, then lets a waiting call go', async () => {
    s = await setup([{ chunkDelay: 5 }], { maxInFlight: 1 }, { queue: { maxWait: 10_000 } });
    const sim = s.upstream.deployment('a');
    const stream = await s.sb.chat.completions.create({ ...ask('a long answer'), stream: true });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const waiting = s.sb.chat.completions.create(ask('behind the stream'));
    // Headers and a first event came: the stream still holds the only slot.
    await sim.waitFor((d) => d.stats.requests === 1);
    expect(stateOf(s, 'a').inFlight.count).toBe(1);
    let read = 1;
    while (!(await it.next()).done) read++;
    expect(read).toBeGreaterThan(1);
    expect(sim.stats.requests).toBeLessThanOrEqual(2);
    const reply = await waiting;
    expect(reply.choices[0]!.message.content).toContain('behind the stream');
    expect(s.peak.a).toBe(1);
  });

  it('frees the slot of a stream that is aborted before it is read, or that breaks off', async () => {
    s = await setup([{ chunkDelay: 5 }], { maxInFlight: 1 }, { queue: { maxWait: 10_000 } });
    const state = stateOf(s, 'a');
    const aborted = await s.sb.chat.completions.create({ ...ask('unread'), stream: true });
    expect(state.inFlight.count).toBe(1);
    aborted.controller.abort();
    expect(state.inFlight.count).toBe(0);

    s.upstream.deployment('a').fail({ kind: 'drop-mid-stream', afterEvents: 2 });
    const broken = await s.sb.chat.completions.create({ ...ask('breaks off'), stream: true });
    await expect(
      (async () => {
        for await (const _ of broken) void _;
      })(),
    ).rejects.toThrow();
    expect(state.inFlight.count).toBe(0);
    state.markUp();
    const reply = await s.sb.chat.completions.create(ask('after'));
    expect(reply.choices[0]!.message.content).toContain('after');
  });

  it('reads maxInFlight from a YAML or JSON config, a whole ${VAR} as a number', () => {
    const yaml = `deployments:
  - provider: openai
    name: east
    maxInFlight: \${EAST_CAP}
    models: [{ name: gpt-4o, maxInFlight: 2 }, { name: gpt-4o-mini }]
`;
    const options = parseSwitchboardConfig(yaml, { source: 's.yaml', env: { EAST_CAP: '8' } });
    expect(options.deployments[0]).toMatchObject({
      maxInFlight: 8,
      models: [{ name: 'gpt-4o', maxInFlight: 2 }, { name: 'gpt-4o-mini' }],
    });
    const json = JSON.stringify({
      deployments: [{ provider: 'openai', name: 'e', models: [{ name: 'm', maxInFlight: 0 }] }],
    });
    expect(() => parseSwitchboardConfig(json, { source: 's.json', format: 'json' })).toThrow(
      /maxInFlight must be a positive integer/,
    );
  });

  it('rejects a cap that is not a positive integer, naming the field', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() =>
        createSwitchboard({
          deployments: [
            {
              provider: 'openai',
              name: 'a',
              baseURL: 'http://127.0.0.1:2/v1/',
              models: [{ name: GPT, maxInFlight: bad }],
            },
          ],
        }),
      ).toThrow(/deployments\[0\]\.models\[0\]\.maxInFlight must be a positive integer/);
    }
  });
});
