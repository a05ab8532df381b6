/**
 * Lanes and tenants against simulated Azure OpenAI deployments whose quota minute lasts 3 s
 * (time scale 20), through the real openai client: interactive calls before a batch flood, batch
 * at the whole capacity when alone, and one tenant's burst that does not starve another.
 */
import { TwoRandomChoices } from '../../src';
import { ask, GPT, rig, type Rig } from '../support/upstream';
import { eventually } from '../support/eventually';
import { seeded } from '../support/random';

/** A quota minute of 3 s. */
const MINUTE = 3_000;
/** 40 characters: 10 prompt tokens, + 190 reserved = 200 tokens a call; 30 calls fill 6 100. */
const PROMPT = 'x'.repeat(40);
const TPM = 6_100;
const PER_WINDOW = 30;

function lanesRig(deployments: number, queue: object): Promise<Rig> {
  return rig({
    openai: deployments,
    quota: { tpm: TPM, rpm: 6_000 },
    simulated: { tpm: TPM, rpm: 6_000, timeScale: 20, latency: 20 },
    ratelimitWindow: MINUTE,
    selector: new TwoRandomChoices({ random: seeded(27) }),
    queue: { maxWait: 30_000, ...queue },
  });
}

const call = (
  r: Rig,
  id: string,
  extra: { lane?: 'interactive' | 'batch'; tenant?: string } = {},
): Promise<number> => {
  const t = performance.now();
  return r.sb.chat.completions
    .create(ask(`${PROMPT.slice(id.length)}${id}`, { max_tokens: 190, ...extra }))
    .then(() => performance.now() - t);
};

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
    r = await lanesRig(2, { batchMaxWait });
    const rig = r;
    // The chat UI is already in use when the job starts: about a tenth of the capacity (60
    // calls per 3 s), one call every 500 ms for as long as the flood lasts.
    const chats: Promise<number>[] = [call(rig, 'chat-0')];
    await new Promise((resolve) => setTimeout(resolve, 50));
    const batch = Array.from({ length: 100 }, (_, i) =>
      call(rig, `job-${i}`, { lane: 'batch', tenant: 'nightly' }),
    );
    let settled = false;
    void Promise.all(batch).finally(() => (settled = true));
    for (let i = 1; !settled && i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      chats.push(call(rig, `chat-${i}`));
    }
    const batchTimes = await Promise.all(batch);
    const chatTimes = await Promise.all(chats);
    expect(chatTimes.length).toBeGreaterThanOrEqual(8);
    expect(p95(chatTimes)).toBeLessThanOrEqual(p95(batchTimes) / 4);
    expect(Math.max(...batchTimes)).toBeLessThan(batchMaxWait);
    expect(rig.sb.failures()).toEqual({});
  }, 30_000);

  it('batch calls alone take the whole capacity; with interactive traffic present they leave the headroom', async () => {
    r = await lanesRig(2, { batchHeadroom: 0.15 });
    const alone = r;
    const flood = Array.from({ length: 80 }, (_, i) =>
      call(alone, `alone-${i}`, { lane: 'batch' }).catch(() => -1),
    );
    await eventually(() => sent(alone) === 2 * PER_WINDOW, { what: 'the first window to fill' });
    // Both deployments full: nothing held back for interactive calls that are not there.
    expect(alone.sb.queue!.length(GPT)).toBe(80 - 2 * PER_WINDOW);
    await alone.close();
    await Promise.all(flood);

    r = await lanesRig(2, { batchHeadroom: 0.15 });
    const shared = r;
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
  }, 30_000);
});

describe('tenants', () => {
  let r: Rig | undefined;
  afterEach(() => r?.close());

  it("a tenant's 10 calls, 200 ms after another tenant's burst of three windows' worth, finish in at most half its time", async () => {
    r = await lanesRig(1, {});
    const rig = r;
    const start = performance.now();
    const burst = Array.from({ length: 3 * PER_WINDOW }, (_, i) =>
      call(rig, `a-${i}`, { tenant: 'acme' }).then(() => performance.now() - start),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const small = Array.from({ length: 10 }, (_, i) =>
      call(rig, `b-${i}`, { tenant: 'bolt' }).then(() => performance.now() - start),
    );
    const burstDone = Math.max(...(await Promise.all(burst)));
    const smallDone = Math.max(...(await Promise.all(small)));
    expect(smallDone).toBeLessThanOrEqual(burstDone / 2);
    expect(rig.sb.failures()).toEqual({});
  }, 30_000);
});
