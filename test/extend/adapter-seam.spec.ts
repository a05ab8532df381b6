import { FakeClock } from '../support/random';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';
import type { APIPromise } from 'openai/core/api-promise';
import type {
  ModerationCreateParams,
  ModerationCreateResponse,
} from 'openai/resources/moderations';
import {
  createSwitchboard,
  SwitchboardError,
  type SessionParams,
  type Switchboard,
} from 'nestjs-switchboard';
import { defineAdapter } from 'nestjs-switchboard/extend';

// A third party's surface, written against the public API only: nothing under src/ knows it.
interface Moderations {
  create(
    body: ModerationCreateParams & SessionParams,
    options?: { signal?: AbortSignal },
  ): APIPromise<ModerationCreateResponse>;
}

const moderations = defineAdapter<Moderations, OpenAI>()({
  name: 'moderations',
  path: ['moderations'],
  provider: 'openai',
  operations: {
    create: {
      streams: () => false,
      send: (client, body, options) => client.moderations.create(body as never, options as never),
    },
  },
  admission: (body) => ({ input: Math.ceil(String(body.input).length / 4), output: 0 }),
  // This upstream reports what it counted, as a usage field beside the results.
  usage: (data) => {
    const used = (data as { usage?: { tokens: number } }).usage;
    return used ? { input: used.tokens, output: 0 } : undefined;
  },
  facade: (surface) => ({
    create: (body, options) => surface.call('create', body, options) as never,
  }),
});

/** Two fake deployments, `/a/v1` and `/b/v1`, that answer `POST /moderations`. */
function moderationServer(): Promise<{
  server: Server;
  url: string;
  seen: string[];
  fail: Set<string>;
}> {
  const seen: string[] = [];
  const fail = new Set<string>();
  const server = createServer((req, res) => {
    const name = (req.url ?? '').split('/')[1] ?? '?';
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      seen.push(name);
      if (req.url !== `/${name}/v1/moderations`) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"error":{"message":"no"}}');
        return;
      }
      if (fail.delete(name)) {
        res
          .writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '5000' })
          .end('{"error":{"message":"slow down"}}');
        return;
      }
      const body = JSON.parse(raw) as { input: string; model: string };
      res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': `mod_${name}` });
      res.end(
        JSON.stringify({
          id: `modr-${name}`,
          model: body.model,
          results: [{ flagged: body.input.includes('bad'), categories: {}, category_scores: {} }],
          usage: { tokens: body.input.length },
        }),
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, seen, fail });
    }),
  );
}

describe('a surface added from outside through the adapter seam', () => {
  let up: Awaited<ReturnType<typeof moderationServer>>;
  let sb: Switchboard;
  beforeAll(async () => {
    up = await moderationServer();
  });
  afterAll(() => new Promise<void>((resolve) => up.server.close(() => resolve())));
  beforeEach(() => {
    up.seen.length = 0;
    sb = createSwitchboard({
      deployments: ['a', 'b'].map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: `${up.url}/${name}/v1`,
        apiKey: 'k',
        // requestWindow: OpenAI's requests over 10 s, stated, rather than ramped up to from a
        // second's share (20 calls at once fail fast beyond the ramp's first step).
        models: [{ name: 'omni-moderation-latest', tpm: 10_000, rpm: 100, requestWindow: '10s' }],
      })),
      adapters: [moderations],
      ratelimitWindow: 0,
      // A held clock: these deployments are OpenAI's own (no Azure path), whose token buckets
      // drain with time, and the spec reads what the calls charged.
      clock: new FakeClock(Date.UTC(2026, 0, 1)).now,
    });
  });
  afterEach(() => sb.close());

  it('is mounted on the switchboard and calls through the real client', async () => {
    expect((sb as unknown as Record<string, unknown>).moderations).toBe(sb.surface(moderations));
    const result = await sb
      .surface(moderations)
      .create({ model: 'omni-moderation-latest', input: 'a bad word' });
    expect(result.results[0]!.flagged).toBe(true);
    expect(up.seen).toHaveLength(1);
  });

  it('balances, accounts from the answer and gives withResponse()', async () => {
    const calls = Array.from({ length: 20 }, (_, i) =>
      sb.surface(moderations).create({ model: 'omni-moderation-latest', input: `text ${i}` }),
    );
    const answers = await Promise.all(calls.map((c) => c.withResponse()));
    expect(new Set(up.seen)).toEqual(new Set(['a', 'b']));
    for (const { data, request_id } of answers) expect(request_id).toBe(`mod_${data.id.slice(5)}`);
    const used = ['a', 'b'].reduce(
      (n, name) => n + sb.deployments.get(name)!.models.get('omni-moderation-latest')!.tpmUsage,
      0,
    );
    expect(used).toBe(
      Array.from({ length: 20 }, (_, i) => `text ${i}`.length).reduce((x, y) => x + y),
    );
  });

  it('fails over on a 429 and cools the deployment down, like a built-in surface', async () => {
    const first = sb.selectDeployment({ model: 'omni-moderation-latest', sessionId: 's' }).name;
    up.fail.add(first);
    const { request_id } = await sb
      .surface(moderations)
      .create({ model: 'omni-moderation-latest', input: 'x', session_id: 's' })
      .withResponse();
    expect(request_id).not.toBe(`mod_${first}`);
    expect(sb.deployments.get(first)!.models.get('omni-moderation-latest')!.isCooling()).toBe(true);
  });

  it('a send() that does not return the SDK call as it is rejects with a clear error', async () => {
    const unwrapped = {
      ...moderations,
      operations: {
        create: {
          ...moderations.operations.create!,
          // The data only, as an adapter written for an older contract might give it.
          send: (client: OpenAI, body: Record<string, unknown>) =>
            client.moderations.create(body as never).then((data) => data) as never,
        },
      },
    };
    const other = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'a',
          baseURL: `${up.url}/a/v1`,
          apiKey: 'k',
          models: [{ name: 'm' }],
        },
      ],
      adapters: [unwrapped],
      failover: { attempts: 1 },
    });
    try {
      await expect(other.surface(unwrapped).create({ model: 'm', input: 'x' })).rejects.toThrow(
        /sb\.moderations: an operation's send\(\) must return the SDK call's APIPromise as it is/,
      );
    } finally {
      await other.close();
    }
  });

  it('a surface not mounted, or mounted where a name is taken, is a clear error', () => {
    const other = createSwitchboard({
      deployments: [{ provider: 'openai', name: 'x', apiKey: 'k', models: [{ name: 'm' }] }],
    });
    expect(() => other.surface(moderations)).toThrow(/'moderations' is not mounted/);
    void other.close();
    expect(() =>
      createSwitchboard({
        deployments: [{ provider: 'openai', name: 'x', apiKey: 'k', models: [{ name: 'm' }] }],
        adapters: [{ ...moderations, path: ['stats'] }],
      }),
    ).toThrow(SwitchboardError);
    expect(() =>
      createSwitchboard({
        deployments: [{ provider: 'openai', name: 'x', apiKey: 'k', models: [{ name: 'm' }] }],
        adapters: [{ ...moderations, path: ['chat', 'completions'] }],
      }),
    ).toThrow(/cannot be mounted at sb\.chat\.completions/);
  });
});
