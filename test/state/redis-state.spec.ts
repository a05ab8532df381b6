import Redis from 'ioredis';
import {
  createSwitchboard,
  memoryState,
  redisState,
  SwitchboardError,
  type RedisStateOptions,
} from 'nestjs-switchboard';
import type { RedisClientLike, StateStore } from 'nestjs-switchboard/extend';
import type * as Src from 'nestjs-switchboard';
import { openaiDeployments } from '../support/configs';
import { RedisServer } from '../support/redis-server';
import { RecordingLogger } from './cluster';
import { eventually } from '../support/eventually';

let server: RedisServer;

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(() => server.close());

describe('redisState() options', () => {
  it.each([
    [{}, /Invalid redisState\(\) options: needs exactly one of `url`/],
    [{ url: 'redis://a', client: {} as RedisClientLike }, /client must be an ioredis Redis/],
    [{ url: 'redis://a', client: new Redis({ lazyConnect: true }) }, /exactly one of `url`/],
    [{ url: 'localhost:6379' }, /url must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ client: {} as RedisClientLike }, /client must be an ioredis Redis or Cluster client/],
    [{ url: 'redis://a', prefix: '' }, /prefix must be a non-empty string/],
    [
      { url: 'redis://a', syncInterval: 0 },
      /syncInterval must be a positive number of milliseconds/,
    ],
    [{ url: 'redis://a', sessionTtl: -1 }, /sessionTtl must be a positive number of milliseconds/],
    [{ url: 'redis://a', responseTtl: 0 }, /responseTtl must be a positive number of milliseconds/],
    [
      { url: 'redis://a', timeout: Number.NaN },
      /timeout must be a positive number of milliseconds/,
    ],
    [{ url: 'redis://a', syncIntervall: 50 } as RedisStateOptions, /unknown key 'syncIntervall'/],
    [
      { url: 6379, timeout: '1s' } as unknown as RedisStateOptions,
      /url must be a redis:\/\/ .*; timeout must be a positive number of milliseconds/,
    ],
  ])('rejects %p', (options, message) => {
    expect(() => redisState(options)).toThrow(SwitchboardError);
    expect(() => redisState(options)).toThrow(message);
  });

  it('says to install ioredis when it is missing, and does not need it for a client', () => {
    jest.isolateModules(() => {
      jest.doMock('ioredis', () => {
        throw Object.assign(new Error("Cannot find module 'ioredis'"), {
          code: 'MODULE_NOT_FOUND',
        });
      });
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const isolated = require('../../src') as typeof Src;
      expect(() => isolated.redisState({ url: 'redis://localhost:6379' })).toThrow(
        /needs the ioredis package: run `npm install ioredis`/,
      );
      expect(() => isolated.redisState({ url: 'redis://localhost:6379' })).toThrow(
        isolated.SwitchboardError,
      );
      const client = { eval: () => Promise.resolve(null) } as unknown as RedisClientLike;
      expect(() => isolated.redisState({ client })).not.toThrow();
    });
    jest.dontMock('ioredis');
  });

  it('serves one switchboard', async () => {
    const state = redisState({ url: server.url });
    const sb = createSwitchboard({ deployments: openaiDeployments(1), state });
    expect(() => createSwitchboard({ deployments: openaiDeployments(1), state })).toThrow(
      /serves one switchboard/,
    );
    await sb.close();
  });
});

describe('redisState() lifecycle', () => {
  it('connects on start, not when built, and closes its own connection', async () => {
    const redis = new Redis(server.url);
    const clients = async () =>
      String(await redis.client('LIST'))
        .split('\n')
        .filter(Boolean);
    const baseline = (await clients()).length;
    const state = redisState({ url: server.url, syncInterval: 20 });
    expect(state.health()).toMatchObject({ status: 'up', connection: 'not started' });
    expect((await clients()).length).toBe(baseline);
    const sb = createSwitchboard({ deployments: openaiDeployments(2), state });
    await eventually(() => state.health().lastSync !== undefined);
    expect((await clients()).some((line) => line.includes('name=switchboard'))).toBe(true);
    await sb.close();
    await sb.close();
    await eventually(async () => (await clients()).length === baseline);
    redis.disconnect();
  });

  it('uses a client it is given and leaves it open', async () => {
    const client = new Redis(server.url);
    const typed: RedisClientLike = client; // an ioredis client fits the structural type
    const logger = new RecordingLogger();
    const sb = createSwitchboard({
      deployments: openaiDeployments(2),
      logger,
      state: redisState({ client: typed, syncInterval: 20, prefix: 'given:' }),
    });
    sb.deployments.get('d0')!.models.get('gpt-4o-mini')!.spend(42, 1);
    await eventually(async () => (await client.hlen('given:usage')) === 1);
    await sb.close();
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
    expect(logger.warnings()).toEqual([]);
  });

  it('leaves the usage window to the switchboard: it slides, nothing resets at a boundary', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
    try {
      jest.setSystemTime(120_000 + 59_000);
      const state = redisState({ url: 'redis://127.0.0.1:1', syncInterval: 10_000 });
      expect(state.resetsUsage).toBeUndefined();
      const sb = createSwitchboard({
        deployments: openaiDeployments(1),
        ratelimitWindow: 60_000,
        state,
      });
      const model = sb.deployments.get('d0')!.models.get('gpt-4o-mini')!;
      model.spend(100, 1);
      jest.advanceTimersByTime(1_000); // 180 000: an aligned minute boundary
      expect(model.tpmUsage).toBe(100);
      model.spend(5, 1);
      jest.advanceTimersByTime(59_500); // the first charge is a minute old (plus a bucket)
      expect(model.tpmUsage).toBe(5);
      jest.advanceTimersByTime(1_000);
      expect(model.tpmUsage).toBe(0);
      const closing = sb.close();
      await jest.runOnlyPendingTimersAsync();
      await closing;
    } finally {
      jest.useRealTimers();
    }
  });

  it('memoryState() stays the default', async () => {
    const sb = createSwitchboard({ deployments: openaiDeployments(1) });
    expect(sb.state.health()).toEqual({ status: 'up', store: 'memory' });
    const store: StateStore = memoryState();
    expect(store.resetsUsage).toBeUndefined();
    await sb.close();
  });

  it('never shows a password in health or logs', async () => {
    const logger = new RecordingLogger();
    const state = redisState({ url: 'redis://:hunter2@127.0.0.1:1', timeout: 50 });
    const sb = createSwitchboard({ deployments: openaiDeployments(1), logger, state });
    await eventually(() => state.health().status === 'degraded');
    expect(JSON.stringify(state.health())).not.toContain('hunter2');
    expect(JSON.stringify(logger.lines)).not.toContain('hunter2');
    expect(logger.warnings(/Redis/)).toHaveLength(1);
    await sb.close();
  });
});
