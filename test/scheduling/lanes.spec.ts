/**
 * Lanes and tenants against simulated Azure OpenAI deployments whose quota minute lasts 3 s
 * (time scale 20), through the real openai client: interactive calls before a batch flood, batch
 * at the whole capacity when alone, and one tenant's burst that does not starve another. The
 * switchboard and the deployments share one clock the test moves: waits are virtual time.
 */
import { TwoRandomChoices } from 'nestjs-switchboard';
import { ask, GPT, rig, type Rig } from '../support/upstream';
import { eventually } from '../support/eventually';
import { FakeClock, seeded } from '../support/random';

/** A quota minute of 3 s. */
const MINUTE = 3_000;
/** 40 characters: 10 prompt tokens, + 190 reserved = 200 tokens a call; 30 calls fill 6 100. */
const PROMPT = 'x'.repeat(40);
const TPM = 6_100;
const PER_WINDOW = 30;
/** How far the clock moves at a time: a sixtieth of the minute. */
const STEP = 50;

/** A rig on a clock of its own, and the calls made through {@link call}. */
interface LanesRig extends Rig {
  clock: FakeClock;
  started: number;
  settled: number;
}

async function lanesRig(deployments: number, queue: object): Promise<LanesRig> {
  const clock = new FakeClock();
  const r = await rig({
    openai: deployments,
    quota: { tpm: TPM, rpm: 6_000 },
    simulated: { tpm: TPM, rpm: 6_000, timeScale: 20, latency: 0 },
    clock: clock.now,
    upstreamClock: clock.now,
    ratelimitWindow: MINUTE,
    selector: new TwoRandomChoices({ random: seeded(27) }),
    queue: { maxWait: 30_000, ...queue },
  });
  return { ...r, clock, started: 0, settled: 0 };
}

/** A call of 200 tokens; resolves to the virtual ms it took. */
const call = (
  r: LanesRig,
  id: string,
  extra: { lane?: 'interactive' | 'batch'; tenant?: string } = {},
): Promise<number> => {
  const t = r.clock.now();
  r.started++;
  return r.sb.chat.completions
    .create(ask(`${PROMPT.slice(id.length)}${id}`, { max_tokens: 190, ...extra }))
    .then(() => r.clock.now() - t)
    .finally(() => r.settled++);
};

/** Every call made has its answer or waits in the queue: nothing is on its way. */
function still(r: LanesRig): Promise<void> {
  return eventually(() => r.settled + r.sb.queue!.length(GPT) === r.started, {
    what: 'every call to be answered or queued',
  });
}

/**
 * Moves the clock by `ms`, a step at a time, each once nothing is on its way, and lets the queue
 * serve after each step (its own timer waits in real time for the room that virtual time made).
 */
async function advance(r: LanesRig, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= STEP) {
    await still(r);
    r.clock.advance(Math.min(STEP, left));
    r.sb.queue!.kick(GPT);
  }
  await still(r);
}

/** Moves the clock until `calls` have all settled, for at most ten virtual minutes. */
async function until(r: LanesRig, calls: Promise<unknown>): Promise<void> {
  let done = false;
  calls.then(
    () => (done = true),
    () => (done = true),
  );
  for (let waited = 0; !done; waited += STEP) {
    if (waited > 200 * MINUTE) throw new Error('calls still waiting after ten virtual minutes');
    await advance(r, STEP);
  }
}

const p95 = (xs: readonly number[]) =>
  [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.95) - 1]!;

function sent(r: Rig): number {
  return r.upstream.deployments.reduce((n, d) => n + d.stats.requests, 0);
}

describe('lanes', () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
  });

  it("lane and tenant are the switchboard's: never sent upstream; a lane it does not know is a TypeError", async () => {
    r = await rig({ openai: 1 });
    await r.sb.chat.completions.create(ask('tagged', { lane: 'batch', tenant: 'acme' }));
    const [sentBody] = r.upstream.deployments[0]!.requests.map((q) => q.body as object);
    expect(sentBody).not.toHaveProperty('lane');
    expect(sentBody).not.toHaveProperty('tenant');
    const wrong = { lane: 'urgent' } as unknown as { lane: 'batch' };
    await expect(r.sb.chat.completions.create(ask('x', wrong))).rejects.toThrow(
      new TypeError("lane must be 'interactive' or 'batch', got 'urgent'"),
    );
    const notText = { tenant: 42 } as unknown as { tenant: string };
    await expect(r.sb.chat.completions.create(ask('x', notText))).rejects.toThrow(
      new TypeError('tenant must be a string, got number'),
    );
    expect(r.upstream.deployments[0]!.stats.requests).toBe(1);
  });

  it('under a flood of 100 batch calls, interactive calls spaced over it wait far less, and every batch call completes within its maxWait', async () => {
    const batchMaxWait = 20_000;
    const rig = await lanesRig(2, { batchMaxWait });
    r = rig;
    // The chat UI is already in use when the job starts: about a tenth of the capacity (60
    // calls per 3 s), one call every 500 ms for as long as the flood lasts.
    const chats: Promise<number>[] = [call(rig, 'chat-0')];
    await advance(rig, 50);
    const batch = Array.from({ length: 100 }, (_, i) =>
      call(rig, `job-${i}`, { lane: 'batch', tenant: 'nightly' }),
    );
    let settled = false;
    Promise.all(batch).then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let i = 1; !settled && i < 40; i++) {
      await advance(rig, 500);
      chats.push(call(rig, `chat-${i}`));
    }
    await until(rig, Promise.all([...batch, ...chats]));
    const batchTimes = await Promise.all(batch);
    const chatTimes = await Promise.all(chats);
    expect(chatTimes.length).toBeGreaterThanOrEqual(8);
    expect(p95(chatTimes)).toBeLessThanOrEqual(p95(batchTimes) / 4);
    expect(Math.max(...batchTimes)).toBeLessThan(batchMaxWait);
    expect(rig.sb.failures()).toEqual({});
  });

  it('batch calls alone take the whole capacity; with interactive traffic present they leave the headroom', async () => {
    const alone = await lanesRig(2, { batchHeadroom: 0.15 });
    r = alone;
    const flood = Array.from({ length: 80 }, (_, i) =>
      call(alone, `alone-${i}`, { lane: 'batch' }).catch(() => -1),
    );
    await eventually(() => sent(alone) === 2 * PER_WINDOW, { what: 'the first window to fill' });
    // Both deployments full: nothing held back for interactive calls that are not there.
    expect(alone.sb.queue!.length(GPT)).toBe(80 - 2 * PER_WINDOW);
    await alone.close();
    await Promise.all(flood);

    const shared = await lanesRig(2, { batchHeadroom: 0.15 });
    r = shared;
    await call(shared, 'chat');
    const beside = Array.from({ length: 80 }, (_, i) =>
      call(shared, `beside-${i}`, { lane: 'batch' }).catch(() => -1),
    );
    // 85 % of 6 100 tokens is 5 185: 25 calls of 200 per deployment (the chat's 200 included).
    await eventually(() => sent(shared) === 1 + 49, {
      what: 'the batch calls to reach the headroom',
    });
    expect(shared.sb.queue!.length(GPT)).toBe(80 - 49);
    // The headroom is there for interactive calls: one goes at once, past the waiting batch.
    await call(shared, 'chat-2');
    expect(shared.sb.queue!.length(GPT, 'batch')).toBe(80 - 49);
    await shared.close();
    await Promise.all(beside);
  });
});

describe('tenants', () => {
  let r: Rig | undefined;
  afterEach(() => r?.close());

  it("a tenant's 10 calls, 200 ms after another tenant's burst of three windows' worth, finish in at most half its time", async () => {
    const rig = await lanesRig(1, {});
    r = rig;
    const start = rig.clock.now();
    const burst = Array.from({ length: 3 * PER_WINDOW }, (_, i) =>
      call(rig, `a-${i}`, { tenant: 'acme' }).then(() => rig.clock.now() - start),
    );
    await advance(rig, 200);
    const small = Array.from({ length: 10 }, (_, i) =>
      call(rig, `b-${i}`, { tenant: 'bolt' }).then(() => rig.clock.now() - start),
    );
    await until(rig, Promise.all([...burst, ...small]));
    const burstDone = Math.max(...(await Promise.all(burst)));
    const smallDone = Math.max(...(await Promise.all(small)));
    expect(smallDone).toBeLessThanOrEqual(burstDone / 2);
    expect(rig.sb.failures()).toEqual({});
  });
});
