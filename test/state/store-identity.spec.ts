import { inspect } from 'node:util';
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { defaultPrefix, redactUrl, secretScrubber } from '../../src/state/redis/redis-options';
import { openaiDeployments } from '../support/configs';
import { eventually } from '../support/eventually';
import { RedisServer } from '../support/redis-server';
import { RecordingLogger } from './cluster';

let server: RedisServer;
const open: Switchboard[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((sb) => sb.close()));
});
afterAll(() => server.close());

function replica(deployments = openaiDeployments(2), prefix?: string, url = server.url) {
  const logger = new RecordingLogger();
  const state = redisState({ url, syncInterval: 20, timeout: 100, ...(prefix ? { prefix } : {}) });
  const sb = createSwitchboard({ deployments, logger, state });
  open.push(sb);
  return { sb, state, logger };
}

const model = (sb: Switchboard, d: string) => sb.deployments.get(d)!.models.get('gpt-4o-mini')!;

describe('the default key prefix', () => {
  it('is the same for replicas of one configuration, in any order, and differs for another', () => {
    const a = openaiDeployments(2);
    const other = a.map((d) => ({
      ...d,
      baseURL: d.baseURL!.replace('127.0.0.1:2', 'example.net'),
    }));
    const prefixOf = (deployments: typeof a) => replica(deployments).state.health().prefix;
    expect(prefixOf(a)).toMatch(/^switchboard:[0-9a-f]{12}:$/);
    expect(prefixOf([...a].reverse())).toBe(prefixOf(a));
    expect(prefixOf(other)).not.toBe(prefixOf(a));
    expect(prefixOf(a.slice(0, 1))).not.toBe(prefixOf(a));
    expect(replica(a, 'mine:').state.health().prefix).toBe('mine:');
    expect(
      defaultPrefix([{ name: 'east', endpoint: 'https://east.example/v1/', models: ['b', 'a'] }]),
    ).toBe(
      defaultPrefix([{ name: 'east', endpoint: 'https://east.example/v1/', models: ['a', 'b'] }]),
    );
  });

  it('lets replicas of one application share, and keeps another application apart', async () => {
    const a = replica();
    const b = replica();
    const elsewhere = replica(
      openaiDeployments(2).map((d) => ({ ...d, baseURL: `${d.baseURL!}other/` })),
    );
    model(a.sb, 'd0').spend(42, 1);
    await eventually(() => model(b.sb, 'd0').tpmUsage === 42);
    // Give the third as many syncs as the second needed, and more.
    const seen = elsewhere.state.health().lastSync;
    await eventually(() => elsewhere.state.health().lastSync !== seen);
    await eventually(() => model(b.sb, 'd0').tpmUsage === 42);
    expect(model(elsewhere.sb, 'd0').tpmUsage).toBe(0);
  });
});

describe('the Redis password', () => {
  it('never shows in inspect(sb), inspect(store), JSON, health or logs, connected or not', async () => {
    const url = (host: string) => `redis://:hunter2%40x@${host}`;
    const up = replica(undefined, undefined, url(`127.0.0.1:${server.port}`));
    const down = replica(undefined, undefined, url('127.0.0.1:1'));
    await eventually(() => up.state.health().lastSync !== undefined);
    await eventually(() => down.state.health().status === 'degraded');
    for (const { sb, state, logger } of [up, down]) {
      const shown = [
        inspect(sb, { depth: Infinity, showHidden: true }),
        inspect(state, { depth: Infinity }),
        JSON.stringify(state),
        JSON.stringify(state.health()),
        JSON.stringify(logger.lines),
      ].join('\n');
      expect(shown).not.toMatch(/hunter2/);
      expect(inspect(state)).toContain('redis://***@127.0.0.1');
    }
    expect(down.logger.warnings(/Redis/)).toHaveLength(1);
  });

  // Every form ioredis takes a password in, connected (the test server takes any password) or
  // not (TLS to a plain server): the health and every view of the store are checked.
  it.each([
    ['before the host', (hp: string) => `redis://:hunter2@${hp}`],
    ['with a user', (hp: string) => `redis://default:hunter2@${hp}/0`],
    ['in the query', (hp: string) => `redis://${hp}/0?password=hunter2`],
    [
      'among other query parameters',
      (hp: string) => `redis://${hp}/0?db=0&password=hunter2&family=4`,
    ],
    ['with an unencoded @', (hp: string) => `redis://:hun@ter2@${hp}`],
    ['over TLS', (hp: string) => `rediss://u:hunter2@${hp}`],
  ])('given %s, never shows in inspect, JSON, health or logs', async (_form, url) => {
    const { sb, state, logger } = replica(undefined, undefined, url(`127.0.0.1:${server.port}`));
    // Synced (a server without a password takes any) or failed (TLS to a plain server).
    await eventually(
      () => state.health().lastSync !== undefined || state.health().status === 'degraded',
    );
    const shown = [
      inspect(sb, { depth: Infinity, showHidden: true }),
      inspect(state, { depth: Infinity }),
      JSON.stringify(state),
      JSON.stringify(state.health()),
      JSON.stringify(logger.lines),
      String(state.health().lastError ?? ''),
    ].join('\n');
    expect(shown).not.toMatch(/hunter2|hun@ter2|ter2@/);
    expect(inspect(state)).toContain('127.0.0.1');
  });

  it('is taken out of URLs and of any text', () => {
    expect(redactUrl('redis://redis:6379/0?password=hunter2')).toBe(
      'redis://redis:6379/0?password=***',
    );
    expect(redactUrl('redis://:p@ss@redis:6379')).toBe('redis://***@redis:6379');
    expect(redactUrl('redis://u:pw@redis/0?username=u&password=x%40y')).toBe(
      'redis://***@redis/0?username=***&password=***',
    );
    expect(secretScrubber('redis://redis/0?password=x%40y')('AUTH x@y; AUTH x%40y')).toBe(
      'AUTH ***; AUTH ***',
    );
    expect(secretScrubber('redis://:p@ss@redis')('AUTH p@ss')).toBe('AUTH ***');
    expect(redactUrl('redis://user:pa%3Ass@redis:6379/0')).toBe('redis://***@redis:6379/0');
    expect(redactUrl('rediss://redis:6380')).toBe('rediss://redis:6380');
    const scrub = secretScrubber('redis://user:pa%3Ass@redis:6379');
    expect(scrub('AUTH pa:ss failed; AUTH pa%3Ass failed')).toBe(
      'AUTH *** failed; AUTH *** failed',
    );
    expect(secretScrubber('redis://redis:6379')('nothing to hide')).toBe('nothing to hide');
  });
});
