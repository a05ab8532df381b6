import { createSwitchboard, type DeploymentConfig, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import '../support/quiet-logs';

const MODEL = 'gpt-4o';
/** Azure enforces RPM as rpm / 6 per 10 s: 600 rpm is 100 requests per 10 s. */
const PTU_RPM = 600;
const STEP = 500;

/**
 * One PTU deployment (priority 0) and two pay-as-you-go ones (priority 1) on simulated upstreams
 * with Azure's quota windows. Upstream and switchboard share a clock the test moves: a run is a
 * sequence of batches, `perStep` concurrent calls every 500 ms of simulated time, so the figures
 * are counts, not timings.
 */
describe('PTU first, pay-as-you-go takes the overflow', () => {
  // Hundreds of real HTTP calls: a busy machine may need more than Jest's default 5 s.
  jest.setTimeout(120_000);
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock();
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'ptu', rpm: PTU_RPM },
        { name: 'payg0', rpm: 600 },
        { name: 'payg1', rpm: 600 },
      ],
      clock: clock.now,
    });
    const deployment = (name: string, priority: number): DeploymentConfig => ({
      provider: 'openai',
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      priority,
      models: [{ name: MODEL, rpm: 600 }],
    });
    sb = createSwitchboard({
      deployments: [deployment('ptu', 0), deployment('payg0', 1), deployment('payg1', 1)],
      clock: clock.now,
      random: seeded(5),
    });
  });
  afterEach(async () => {
    await sb.close();
    await upstream.close();
  });

  /** Offers `perStep` calls every 500 ms for `seconds` of simulated time; returns the failures. */
  async function offer(perStep: number, seconds: number): Promise<number> {
    let failures = 0;
    for (let t = 0; t < (seconds * 1000) / STEP; t++) {
      const results = await Promise.allSettled(
        Array.from({ length: perStep }, (_, i) =>
          sb.chat.completions.create({
            model: MODEL,
            messages: [{ role: 'user', content: `call ${t}.${i}` }],
          }),
        ),
      );
      failures += results.filter((r) => r.status === 'rejected').length;
      clock.advance(STEP);
    }
    return failures;
  }

  it('sends nothing to pay-as-you-go below the PTU tier capacity (60 % of it)', async () => {
    // 3 calls per 500 ms = 60 per 10 s against 100 per 10 s.
    const failures = await offer(3, 30);
    const ptu = upstream.deployment('ptu').stats;
    expect(failures).toBe(0);
    expect(ptu.ok).toBe(180);
    expect(ptu.rateLimited).toBe(0);
    expect(upstream.deployment('payg0').stats.requests).toBe(0);
    expect(upstream.deployment('payg1').stats.requests).toBe(0);
  });

  it('keeps the PTU tier full at 200 % of its capacity and spills the rest', async () => {
    const seconds = 30;
    // 10 calls per 500 ms = 200 per 10 s against 100 per 10 s.
    const failures = await offer(10, seconds);
    const offered = (10 * seconds * 1000) / STEP;
    const capacity = (PTU_RPM / 6) * (seconds / 10);
    const ptu = upstream.deployment('ptu').stats;
    const payg = upstream.deployment('payg0').stats.ok + upstream.deployment('payg1').stats.ok;
    const figures = {
      offered,
      capacity,
      ptuServed: ptu.ok,
      ptuShareOfCapacity: ptu.ok / capacity,
      ptu429: ptu.rateLimited,
      ptu429Share: ptu.rateLimited / ptu.requests,
      payg,
      failures,
    };
    process.stdout.write(`PTU + PAYG at 200 %: ${JSON.stringify(figures)}\n`);
    expect(ptu.ok / capacity).toBeGreaterThanOrEqual(0.9);
    expect(ptu.rateLimited / ptu.requests).toBeLessThanOrEqual(0.05);
    expect(failures / offered).toBeLessThanOrEqual(0.005);
    expect(ptu.ok + payg).toBe(offered - failures);
    expect(payg).toBeGreaterThan(0);
  });
});

describe('weights within a tier over real calls', () => {
  jest.setTimeout(60_000);
  it('gives weights 3:1 a 3:1 share within ±20 % over 400 calls with unlimited quotas', async () => {
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }, { name: 'b' }] });
    const sb = createSwitchboard({
      deployments: (['a', 'b'] as const).map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        weight: name === 'a' ? 3 : 1,
        models: [{ name: MODEL }],
      })),
      random: seeded(8),
    });
    try {
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 20 }, () =>
            sb.chat.completions.create({
              model: MODEL,
              messages: [{ role: 'user', content: 'w' }],
            }),
          ),
        );
      }
      const a = upstream.deployment('a').stats.ok;
      const b = upstream.deployment('b').stats.ok;
      process.stdout.write(
        `weights 3:1 over 400 calls: a=${a} b=${b} ratio=${(a / b).toFixed(2)}\n`,
      );
      expect(a + b).toBe(400);
      expect(a / b).toBeGreaterThanOrEqual(2.4);
      expect(a / b).toBeLessThanOrEqual(3.6);
    } finally {
      await sb.close();
      await upstream.close();
    }
  });
});
