import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { upstreamCounts } from '../support/answered';
import { FakeClock } from '../support/random';
import { GPT } from '../support/upstream';

/** Virtual time moves in steps of this many ms. */
const STEP = 250;
/** How long an admitted call takes to answer (virtual ms): calls overlap, none goes alone. */
const ANSWER_MS = 3_000;

/**
 * An Azure OpenAI standard deployment of 100 000 TPM that reserves 4 096 output tokens for a
 * call without `max_tokens` (its documented charge: prompt plus the output cap, the deployment's
 * own when the call sets none), and a switchboard that is not told so (no `outputReservation`),
 * with a queue; one clock.
 */
async function setup() {
  const clock = new FakeClock();
  const upstream = await SimulatedUpstream.start({
    clock: clock.now,
    deployments: [{ name: 'oai0', tpm: 100_000, rpm: 60_000, inferredMaxTokens: 4_096 }],
  });
  const sb: Switchboard = createSwitchboard({
    clock: clock.now,
    ratelimitWindow: 60_000,
    queue: { maxWait: 600_000 },
    deployments: [
      {
        provider: 'openai',
        name: 'oai0',
        baseURL: upstream.deployment('oai0').openaiBaseURL,
        apiKey: 'sk-oai0',
        models: [{ name: GPT, tpm: 100_000, rpm: 60_000 }],
      },
    ],
  });
  const state = sb.deployments.get('oai0')!.models.get(GPT)!;
  return { clock, upstream, sb, state, sims: [upstream.deployment('oai0')] };
}

describe('uncapped calls waiting in a queue', () => {
  jest.setTimeout(60_000);
  let s: Awaited<ReturnType<typeof setup>> | undefined;
  afterEach(async () => {
    await s?.sb.close();
    await s?.upstream.close();
    s = undefined;
  });

  it('are sent again at the reservation a refusal taught, not into the same 429s', async () => {
    s = await setup();
    const { clock, sb, state } = s;
    let failed = 0;
    let done = 0;
    const calls = Array.from({ length: 40 }, (_, i) =>
      sb.chat.completions
        .create({ model: GPT, messages: [{ role: 'user', content: `call ${i}` }] })
        .then(
          () => (done += 1),
          () => (failed += 1),
        ),
    );
    const sim = s.sims[0]!;
    sim.holdAnswers();
    const admittedAt: number[] = [];
    let learned = 0;
    const start = clock.ms;
    while (done + failed < 40 && clock.ms - start < 600_000) {
      // Turns of the event loop, for the calls on their way to reach the upstream.
      for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
      while (admittedAt.length < sim.heldAnswers) admittedAt.push(clock.ms);
      admittedAt.forEach((at, i) => at <= clock.ms - ANSWER_MS && sim.releaseAnswer(i));
      // What the first wave's refusals taught, before any call goes alone.
      if (clock.ms - start === STEP) learned = state.quota.outputReservation;
      clock.advance(STEP);
      sb.queue!.kick(GPT);
    }
    await Promise.all(calls);
    const { sent, rejected } = upstreamCounts(s.sims);
    process.stdout.write(
      `40 uncapped at once, no outputReservation, with a queue: ${rejected} of ${sent} sent got ` +
        `a 429, ${done} done, ${failed} failed, reservation learned from the refusals ${learned}, ` +
        `${(clock.ms - start) / 1000} s\n`,
    );
    expect(failed).toBe(0);
    expect(done).toBe(40);
    // 100 000 tokens hold 24 calls of 4 106: the first wave's 16 beyond are refused once, and
    // teach the reservation (648 by default) nearly whole; what the queue sends again goes at it,
    // when the window ends, not into the same 429s.
    expect(rejected).toBe(16);
    expect(learned).toBeGreaterThan(3_900);
    expect(sent).toBe(56);
  });
});
