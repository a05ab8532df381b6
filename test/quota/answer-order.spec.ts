import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { isNoRoom } from '../../src/quota/no-room';
import { SimulatedUpstream, type SimulatedDeployment } from 'nestjs-switchboard/testing';
import { FakeClock, seeded } from '../support/random';
import { ask, GPT } from '../support/upstream';

const TPM = 60_000;
/** One prompt token and 999 reserved: 1000 a call, 60 fill the minute. */
const CALL = ask('x', { max_tokens: 999 });

/** One Azure deployment and a switchboard on one hand-driven clock. */
async function setup() {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'oai0', tpm: TPM, rpm: 60_000 }],
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    deployments: [
      {
        provider: 'openai',
        name: 'oai0',
        baseURL: upstream.deployment('oai0').openaiBaseURL,
        apiKey: 'sk-oai0',
        models: [{ name: GPT, tpm: TPM, rpm: 60_000 }],
      },
    ],
  });
  return { clock, upstream, sb, sim: upstream.deployment('oai0') };
}

/**
 * Sends `n` calls at once; the upstream admits them as they arrive and answers each after its
 * own latency (0.5-8 s, seeded), so answers come back in another order than they were sent.
 */
async function burst(
  s: Awaited<ReturnType<typeof setup>>,
  sim: SimulatedDeployment,
  n: number,
  seed: number,
): Promise<void> {
  const random = seeded(seed);
  const admitted = sim.heldAnswers;
  const calls = Array.from({ length: n }, () =>
    s.sb.chat.completions.create(CALL).then(
      () => 'ok',
      (e: unknown) => (isNoRoom(e) ? 'held back' : 'failed'),
    ),
  );
  const sent = await Promise.race([
    sim.waitFor((d) => d.heldAnswers === admitted + n).then(() => n),
    Promise.all(calls).then(() => -1),
  ]);
  expect(sent).toBe(n);
  const latencies = Array.from({ length: n }, (_, i) => ({ i, at: 500 + random() * 7_500 }));
  latencies.sort((a, b) => a.at - b.at);
  const start = s.clock.ms;
  for (const { i, at } of latencies) {
    s.clock.ms = start + at;
    sim.releaseAnswer(admitted + i);
    await calls[i];
  }
  expect(await Promise.all(calls)).toEqual(Array(n).fill('ok'));
}

describe('answers out of order', () => {
  let s: Awaited<ReturnType<typeof setup>>;
  afterEach(async () => {
    s.sim.releaseAll();
    await s.sb.close();
    await s.upstream.close();
  });

  it.each([1, 2, 3])(
    'sends nothing into a window a burst filled, whatever order its answers came in (seed %i)',
    async (seed) => {
      s = await setup();
      s.sim.holdAnswers();
      const t0 = s.clock.ms;
      await burst(s, s.sim, 60, seed);
      expect(s.sim.stats.byStatus[429] ?? 0).toBe(0);
      // Ten seconds after the burst the upstream's minute is still full: a second wave is held
      // back here, not sent into 429s.
      s.clock.ms = t0 + 10_000;
      s.sim.releaseAll();
      const second = await Promise.all(
        Array.from({ length: 60 }, () =>
          s.sb.chat.completions.create(CALL).then(
            () => 'ok',
            (e: unknown) => (isNoRoom(e) ? 'held back' : 'failed'),
          ),
        ),
      );
      const upstream429s = s.sim.stats.byStatus[429] ?? 0;
      process.stdout.write(
        `second wave (seed ${seed}): ${upstream429s} upstream 429s, ` +
          `${second.filter((r) => r === 'held back').length} held back\n`,
      );
      expect(upstream429s).toBeLessThanOrEqual(1);
      expect(second.filter((r) => r === 'held back').length).toBeGreaterThanOrEqual(59);
    },
  );
});
