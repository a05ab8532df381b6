/**
 * Every bound on what a client controls, in the library: session ids, echoed strings, the queue's
 * length, retry-after, and a configuration file's keys and aliases.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  createSwitchboard,
  parseSwitchboardConfig,
  SwitchboardConfigError,
  SwitchboardError,
  type Switchboard,
} from 'nestjs-switchboard';
import { clip } from '../../src/errors/clip';
import { httpErrorFor, retryHeaders } from '../../src/relay/http-error';
import { CapacityQueue } from '../../src/scheduling/capacity-queue';
import { DEFAULT_MAX_QUEUED } from '../../src/scheduling/queue-view';
import { noRoomError } from '../../src/quota/no-room';
import { MAX_BODY_DEPTH, nestedDeeperThan } from '../../src/relay/body-checks';
import { plainHttpWarning } from '../../src/registry/plain-http';
import {
  MAX_SESSION_ID_LENGTH,
  SessionAffinity,
  sessionKey,
} from '../../src/selection/session-affinity';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('session ids', () => {
  it('a short id is kept as it is; a long one as its SHA-256, the same every time', () => {
    const short = 'u'.repeat(MAX_SESSION_ID_LENGTH);
    expect(sessionKey(short)).toBe(short);
    const long = 'u'.repeat(5_000_000);
    const key = sessionKey(long);
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(sessionKey(`${long}`)).toBe(key);
    expect(sessionKey(key)).toBe(key);
    expect(sessionKey(`${long}x`)).not.toBe(key);
  });

  it('the session map finds a long id again and holds only its hash', () => {
    const lru = new SessionAffinity(4);
    const long = 'a'.repeat(1_000_000);
    lru.set(long, 'east');
    expect(lru.get('a'.repeat(1_000_000))).toBe('east');
    expect([...lru.entries()].map(([k]) => k.length)).toEqual([71]);
    expect(lru.delete(long)).toBe(true);
    expect(lru.size).toBe(0);
  });

  describe('through the switchboard', () => {
    let upstream: SimulatedUpstream;
    let sb: Switchboard;
    beforeAll(async () => {
      upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }, { name: 'b' }] });
      sb = createSwitchboard({
        deployments: ['a', 'b'].map((name) => ({
          provider: 'openai' as const,
          name,
          baseURL: upstream.deployment(name).openaiBaseURL,
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini' }],
        })),
        logger: quiet,
      });
    });
    afterAll(async () => {
      await sb?.close();
      await upstream?.close();
    });

    it('a call with a 1 MB session_id keeps it as its hash, and selectDeployment finds it', async () => {
      const sessionId = 's'.repeat(1024 * 1024);
      await sb.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
        session_id: sessionId,
      });
      const keys = [...sb.registry.sessions.entries()].map(([k]) => k);
      expect(keys).toEqual([sessionKey(sessionId)]);
      const [, deployment] = [...sb.registry.sessions.entries()][0]!;
      expect(sb.selectDeployment({ model: 'gpt-4o-mini', sessionId }).name).toBe(deployment);
      expect(sb.registry.sessions.size).toBe(1);
    });
  });
});

describe('echoed strings', () => {
  it('clip keeps a short string and cuts a long one to a prefix and its length', () => {
    expect(clip('gpt-4o-mini')).toBe('gpt-4o-mini');
    const cut = clip('m'.repeat(1_000_000));
    expect(cut).toBe(`${'m'.repeat(64)}… (1000000 characters)`);
  });

  it('an unknown 1 MB model name or response id comes back in a short SwitchboardError', async () => {
    const sb = createSwitchboard({
      // Two deployments: an unknown response id could be on either, and is refused.
      deployments: ['a', 'b'].map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: 'http://127.0.0.1:2/v1',
        apiKey: 'k',
        models: [{ name: 'gpt-4o-mini' }],
      })),
      logger: quiet,
    });
    try {
      const error = await sb.chat.completions
        .create({ model: 'm'.repeat(1024 * 1024), messages: [] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SwitchboardError);
      expect((error as SwitchboardError).status).toBe(404);
      expect((error as Error).message.length).toBeLessThan(300);
      const response = await sb.responses
        .create({ model: 'gpt-4o-mini', input: 'x', previous_response_id: 'r'.repeat(1024 * 1024) })
        .catch((e: unknown) => e);
      expect(response).toBeInstanceOf(SwitchboardError);
      expect((response as Error).message.length).toBeLessThan(500);
    } finally {
      await sb.close();
    }
  });
});

describe('the queue', () => {
  it(`holds at most ${DEFAULT_MAX_QUEUED} calls per model when maxQueued is not set`, async () => {
    const queue = new CapacityQueue({ maxWait: 60_000 });
    const waits: Promise<unknown>[] = [];
    for (let i = 0; i < DEFAULT_MAX_QUEUED; i++) {
      expect(queue.canJoin('m')).toBe(true);
      waits.push(
        queue
          .wait('m', () => ({ waitMs: 60_000 }), {
            onTimeout: () => new Error('timeout'),
            onAbort: () => new Error('abort'),
          })
          .catch((e: unknown) => e),
      );
    }
    expect(queue.length('m')).toBe(DEFAULT_MAX_QUEUED);
    expect(queue.canJoin('m')).toBe(false);
    expect(queue.canJoin('other')).toBe(true);
    queue.close(() => new SwitchboardError('closed', { code: 'unavailable' }));
    const settled = await Promise.all(waits);
    expect(settled.every((e) => (e as SwitchboardError).status === 503)).toBe(true);
  });

  it('an explicit maxQueued still wins', () => {
    const queue = new CapacityQueue({ maxWait: 1_000, maxQueued: 0 });
    expect(queue.canJoin('m')).toBe(false);
  });
});

describe('httpErrorFor: the one mapping from a failed call to an HTTP answer', () => {
  const admission = { input: 10, output: 5 };

  it("a caller's mistake stays 400, an unknown model 404, configuration 500, all without retry-after", () => {
    expect(httpErrorFor(new SwitchboardError('bad'))).toMatchObject({ status: 400, headers: {} });
    expect(httpErrorFor(new SwitchboardError('none', { code: 'model_not_found' }))).toMatchObject({
      status: 404,
      headers: {},
    });
    expect(httpErrorFor(new SwitchboardError('cfg', { code: 'config' }))).toMatchObject({
      status: 500,
      headers: {},
    });
    expect(httpErrorFor(new TypeError('session_id must be a string'))).toMatchObject({
      status: 400,
    });
  });

  it('a closed switchboard (or a queue closed at shutdown) is 503 with retry-after', () => {
    const answer = httpErrorFor(
      new SwitchboardError('switchboard is closed', { code: 'unavailable' }),
    );
    expect(answer).toMatchObject({
      status: 503,
      headers: { 'retry-after': '1', 'retry-after-ms': '1000' },
      unexpected: false,
    });
  });

  it("a no-room 429 says when room is expected, from the error's own figure, capped", () => {
    const soon = httpErrorFor(noRoomError(OpenAI.RateLimitError, 'gpt', admission, 1_250.4));
    expect(soon).toMatchObject({
      status: 429,
      headers: { 'retry-after': '2', 'retry-after-ms': '1251' },
      fromUpstream: false,
    });
    for (const wait of [1e300, Infinity, 3_600_000]) {
      const far = httpErrorFor(noRoomError(Anthropic.RateLimitError, 'claude', admission, wait));
      expect(far.headers).toEqual({ 'retry-after': '60', 'retry-after-ms': '60000' });
    }
    const own = httpErrorFor(noRoomError(OpenAI.RateLimitError, 'gpt', admission, 5_000), {
      maxRetryAfterMs: 2_000,
    });
    expect(own.headers).toEqual({ 'retry-after': '2', 'retry-after-ms': '2000' });
  });

  it("an upstream's 429 keeps its wait up to the cap; other statuses pass with their body", () => {
    const hour = new OpenAI.RateLimitError(
      429,
      { message: 'slow down' },
      'slow down',
      new Headers({ 'retry-after': '3600' }),
    );
    expect(httpErrorFor(hour)).toMatchObject({
      status: 429,
      headers: { 'retry-after': '60', 'retry-after-ms': '60000' },
    });
    const ms = new OpenAI.RateLimitError(429, {}, 'x', new Headers({ 'retry-after-ms': '0.3' }));
    expect(httpErrorFor(ms).headers).toEqual({ 'retry-after': '1', 'retry-after-ms': '1' });
    const none = new OpenAI.RateLimitError(429, {}, 'x', new Headers());
    expect(httpErrorFor(none).headers).toEqual({ 'retry-after': '1', 'retry-after-ms': '1000' });
    const bad = new OpenAI.BadRequestError(400, { message: 'no' }, 'no', new Headers());
    expect(httpErrorFor(bad)).toMatchObject({ status: 400, fromUpstream: true, headers: {} });
  });

  it('a timeout is 504, a connection failure 502, anything else 500 and unexpected', () => {
    expect(httpErrorFor(new OpenAI.APIConnectionTimeoutError()).status).toBe(504);
    expect(httpErrorFor(new Anthropic.APIConnectionError({ message: 'x' })).status).toBe(502);
    expect(httpErrorFor(Object.assign(new Error('read'), { code: 'ECONNRESET' })).status).toBe(502);
    expect(httpErrorFor(new Error('bug'))).toMatchObject({ status: 500, unexpected: true });
  });

  it('retryHeaders writes integers: seconds rounded up, at least 1', () => {
    expect(retryHeaders(0.2)).toEqual({ 'retry-after': '1', 'retry-after-ms': '1' });
    expect(retryHeaders(1_001)).toEqual({ 'retry-after': '2', 'retry-after-ms': '1001' });
    expect(retryHeaders(Number.NaN)).toEqual({ 'retry-after': '60', 'retry-after-ms': '60000' });
  });
});

describe('a configuration file', () => {
  const problems = (text: string, format: 'yaml' | 'json' = 'yaml'): readonly string[] => {
    try {
      parseSwitchboardConfig(text, { source: 'sb.yaml', format, env: {} });
    } catch (error) {
      expect(error).toBeInstanceOf(SwitchboardConfigError);
      return (error as SwitchboardConfigError).problems;
    }
    throw new Error('expected a SwitchboardConfigError');
  };
  const deployment = [
    'deployments:',
    '  - provider: openai',
    '    name: east',
    '    apiKey: k',
    '    models: [{ name: gpt-4o-mini }]',
  ];

  it('an alias no anchor defines is reported with its field, not thrown as a ReferenceError', () => {
    const found = problems(
      [
        ...deployment,
        '  - provider: openai',
        '    name: west',
        '    apiKey: *westKey',
        '    models: [{ name: gpt-4o-mini }]',
      ].join('\n'),
    );
    expect(found).toEqual([
      'sb.yaml: deployments[1].apiKey refers to *westKey, but no anchor &westKey comes before it (line 8)',
    ]);
  });

  it('__proto__, constructor and prototype keys are refused with their path, in YAML and JSON', () => {
    const yaml = problems(
      [...deployment, '    __proto__: { tpm: 5 }', 'constructor: 1'].join('\n'),
    );
    expect(yaml).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^sb\.yaml: deployments\[0\]\.__proto__ is not a configuration field/,
        ),
        expect.stringMatching(/^sb\.yaml: constructor is not a configuration field/),
      ]),
    );
    const json = problems(
      '{"deployments": [], "queue": {"maxWait": 1, "prototype": {}}, "__proto__": {"x": 1}}',
      'json',
    );
    expect(json).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/queue\.prototype is not a configuration field/),
        expect.stringMatching(/__proto__ is not a configuration field/),
      ]),
    );
  });
});

describe('plain http:// to a remote host', () => {
  it('is warned about; https and loopback are not', () => {
    expect(plainHttpWarning('east', 'http://10.0.0.5/openai/v1/')).toBe(
      "deployment 'east' sends its API key over plain http:// to 10.0.0.5: use https://",
    );
    expect(plainHttpWarning('east', 'https://east.openai.azure.com/openai/v1/')).toBeUndefined();
    for (const local of ['http://127.0.0.1:8080/v1', 'http://localhost/v1', 'http://[::1]:2/v1']) {
      expect(plainHttpWarning('local', local)).toBeUndefined();
    }
    expect(plainHttpWarning('none', undefined)).toBeUndefined();
  });

  it('the switchboard logs one warning line per such deployment when it is built', async () => {
    const warnings: string[] = [];
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'remote',
          baseURL: 'http://gpu-box.internal/v1',
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini' }],
        },
        {
          provider: 'openai',
          name: 'local',
          baseURL: 'http://127.0.0.1:2/v1',
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini' }],
        },
      ],
      logger: {
        log: () => undefined,
        warn: (m: unknown) => void warnings.push(String(m)),
        error: () => undefined,
      },
    });
    await sb.close();
    expect(warnings.filter((w) => w.includes('plain http://'))).toEqual([
      "deployment 'remote' sends its API key over plain http:// to gpu-box.internal: use https://",
    ]);
  });
});

describe('a deeply nested body', () => {
  it('is measured in one pass, brackets inside strings left out', () => {
    expect(nestedDeeperThan('{"a":[[1]]}', 2)).toBe(true);
    expect(nestedDeeperThan('{"a":[[1]]}', 3)).toBe(false);
    expect(nestedDeeperThan('{"a":"[[[[\\"[[["}', 1)).toBe(false);
    expect(nestedDeeperThan(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`, 512)).toBe(true);
  });

  it('100 000 levels deep with a switchboard field: a 400 through sb.fetch, logged once', async () => {
    const warnings: string[] = [];
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'a',
          baseURL: 'http://127.0.0.1:2/v1',
          apiKey: 'k',
          models: [{ name: 'gpt-4o-mini' }],
        },
      ],
      logger: { ...quiet, warn: (line: string) => void warnings.push(line) },
    });
    try {
      const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      const res = await sb.fetch('https://sb.example/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"model":"gpt-4o-mini","session_id":"s","messages":[],"metadata":${deep}}`,
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toBe(
        `The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`,
      );
      expect(warnings).toEqual([
        `sb.fetch refused a request body: The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`,
      ]);
    } finally {
      await sb.close();
    }
  });
});
