import { randomBytes } from 'node:crypto';
import { createSwitchboard, redisState, type Switchboard } from 'nestjs-switchboard';
import { peerFold, type PeerReport } from '../../src/state/peer-report';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { eventually } from '../support/eventually';
import { FakeClock } from '../support/random';
import { redisForFile } from '../support/redis-server';
import { CLAUDE } from '../support/upstream';

const REGIONS = ['claude-east', 'claude-west'] as const;
/** 6 000 characters: 1 500 input tokens a call. */
const PROMPT = 'x'.repeat(6_000);

let upstream: SimulatedUpstream;
let replicas: Switchboard[] = [];

const store = redisForFile();
afterEach(async () => {
  await Promise.all(replicas.map((sb) => sb.close()));
  replicas = [];
  await upstream?.close();
});

/** Two replicas, each serving two regions on one pool, sharing state through one Redis. */
async function setup() {
  // Time stands still: the buckets refill nothing while the calls go.
  const clock = new FakeClock(Date.now());
  upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: REGIONS.map((name) => ({ name, rpm: 1_000, itpm: 100_000, quotaPool: 'sub' })),
  });
  const prefix = `p${randomBytes(4).toString('hex')}:`;
  replicas = [0, 1].map(() =>
    createSwitchboard({
      clock: clock.now,
      ratelimitWindow: 60_000,
      state: redisState({ url: store.server.url, prefix, syncInterval: 3_600_000 }),
      deployments: REGIONS.map((name) => ({
        provider: 'anthropic' as const,
        name,
        baseURL: upstream.deployment(name).anthropicBaseURL,
        apiKey: `foundry-${name}`,
        models: [{ name: CLAUDE, rpm: 1_000, itpm: 100_000, quotaPool: 'sub' }],
      })),
    }),
  );
  await eventually(() => replicas.every((sb) => sb.state.health().lastSync !== undefined));
  const folds = replicas.map((sb) => peerFold({ deployments: sb.deployments }));
  /** One sync of replica `i`, folded into its models as its own syncs are. */
  const step = async (i: number): Promise<PeerReport> => {
    const report = await replicas[i]!.state.sync!();
    folds[i]!(report);
    return report;
  };
  const call = (sb: Switchboard) =>
    sb.messages.create({
      model: CLAUDE,
      max_tokens: 16,
      messages: [{ role: 'user', content: PROMPT }],
    });
  const pool = (sb: Switchboard, region: string) => sb.deployments.get(region)!.models.get(CLAUDE)!;
  return { prefix, step, call, pool };
}

describe('quota pools across replicas', () => {
  jest.setTimeout(30_000);

  it("publishes a pool's usage once, under the pool, and each replica sees the others' in every member", async () => {
    const { prefix, step, call, pool } = await setup();
    const [a, b] = replicas as [Switchboard, Switchboard];
    for (let i = 0; i < 4; i++) await call(a);
    for (let i = 0; i < 2; i++) await call(b);
    await step(0);
    await step(1);
    await step(0);

    const published = Object.values(await store.client.hgetall(`${prefix}usage`)).join('\n');
    expect(published).toContain('"%pool:sub"');
    expect(published).not.toContain(`claude-east:${CLAUDE}`);
    expect(published).not.toContain(`claude-west:${CLAUDE}`);

    const ownA = pool(a, 'claude-east').quota.localUsage();
    const ownB = pool(b, 'claude-west').quota.localUsage();
    expect(ownA.requests).toBe(4);
    expect(ownB.requests).toBe(2);
    // Each replica's pool holds the other's usage once, whichever member is asked.
    for (const region of REGIONS) {
      expect(pool(a, region).quota.shared).toMatchObject({
        tokens: ownB.tokens,
        requests: ownB.requests,
      });
      expect(pool(b, region).quota.shared).toMatchObject({
        tokens: ownA.tokens,
        requests: ownA.requests,
      });
      expect(pool(a, region).rpmUsage).toBe(6);
      expect(pool(b, region).rpmUsage).toBe(6);
    }
  });
});
