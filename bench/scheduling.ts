/**
 * Section 8: scheduling. Simulated Azure OpenAI deployments with a 3-s quota minute (time scale
 * 20), calls of 200 tokens at admission (30 per minute per deployment).
 *
 * - Lanes: a flood of batch calls while a chat UI sends a tenth of the capacity, once with every
 *   call in one first-come-first-served line (no lanes) and once with the flood in the batch
 *   lane; the chat calls' time to answer, p50 and p95, beside the flood's.
 * - Tenants: four tenants, the first with a burst of four minutes' worth, the others joining
 *   200 ms apart with two minutes' worth each; per-tenant calls answered over the two minutes
 *   after all have joined, and Jain's index of them (1 = equal shares, 1/4 = one tenant takes
 *   all), without tenants (one line) and with them (deficit round robin).
 */
import { createSwitchboard, TwoRandomChoices, type Switchboard } from '../src';
import { startUpstreams, openaiDeployments, type Upstreams } from './upstreams';
import { fixed, quantile, quietLogger, seeded, sleep, table } from './util';

const MODEL = 'gpt-4o-mini';
const TIME_SCALE = 20;
const MINUTE = 60_000 / TIME_SCALE;
/** 40 characters: 10 prompt tokens; with max_tokens 190, 200 tokens at admission. */
const PROMPT = 'x'.repeat(40);
const TPM = 6_100;
const PER_MINUTE = 30;

export interface SchedulingOptions {
  /** Alternating rounds per side. */
  rounds: number;
  seed: number;
  inproc: boolean;
}

interface LaneRow {
  mode: 'no lanes' | 'lanes';
  chatP50: number;
  chatP95: number;
  batchP50: number;
  batchP95: number;
  failed: number;
  upstream429: number;
}

interface TenantRow {
  mode: 'no tenants' | 'tenants';
  /** Calls answered per tenant over the measured span. */
  answered: number[];
  jain: number;
}

/** Jain's fairness index of `xs`: (Σx)² / (n Σx²). */
export function jain(xs: readonly number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares);
}

export async function scheduling(o: SchedulingOptions): Promise<Record<string, unknown>> {
  console.log(
    `Simulated Azure OpenAI deployments (tpm ${TPM}, time scale ${TIME_SCALE}: a quota minute ` +
      `lasts ${MINUTE / 1000} s, latency 20 ms), calls of 200 tokens at admission ` +
      `(${PER_MINUTE} per minute per deployment), queue { maxWait: 60 s }. ${o.rounds} ` +
      `alternating round(s) per side.`,
  );
  const upstreams = await startUpstreams(
    ['s0', 's1'].map((name) => ({
      name,
      tpm: TPM,
      rpm: 6_000,
      timeScale: TIME_SCALE,
      latency: 20,
      completionTokens: 20,
    })),
    o.inproc,
  );
  const laneRows: LaneRow[] = [];
  const tenantRows: TenantRow[] = [];
  try {
    for (let round = 0; round < o.rounds; round++) {
      for (const mode of ['no lanes', 'lanes'] as const) {
        laneRows.push(await lanes(upstreams, mode, o.seed + round));
      }
      for (const mode of ['no tenants', 'tenants'] as const) {
        tenantRows.push(await tenants(upstreams, mode, o.seed + round));
      }
    }
  } finally {
    await upstreams.close();
  }
  console.log(
    `\nLanes: 2 deployments (${2 * PER_MINUTE} calls per minute); 150 batch calls at once, a ` +
      `chat call every 500 ms (a tenth of the capacity) while they last. Time to answer, ms.`,
  );
  console.log(
    table(
      ['mode', 'chat p50', 'chat p95', 'batch p50', 'batch p95', 'failed', 'upstream 429s'],
      laneRows.map((r) => [
        r.mode,
        fixed(r.chatP50, 0),
        fixed(r.chatP95, 0),
        fixed(r.batchP50, 0),
        fixed(r.batchP95, 0),
        String(r.failed),
        String(r.upstream429),
      ]),
    ),
  );
  console.log(
    `\nTenants: 1 deployment (${PER_MINUTE} calls per minute); tenant A sends ${4 * PER_MINUTE} ` +
      `calls at once, B, C, D ${2 * PER_MINUTE} each, 200 ms apart. Calls answered per tenant ` +
      `over the two minutes after D joined.`,
  );
  console.log(
    table(
      ['mode', 'A', 'B', 'C', 'D', "Jain's index"],
      tenantRows.map((r) => [r.mode, ...r.answered.map(String), fixed(r.jain, 3)]),
    ),
  );
  return { timeScale: TIME_SCALE, lanes: laneRows, tenants: tenantRows };
}

function board(upstreams: Upstreams, count: number, seed: number): Switchboard {
  return createSwitchboard({
    deployments: openaiDeployments(
      upstreams.endpoints.slice(0, count),
      { name: MODEL, tpm: TPM, rpm: 6_000 },
      TIME_SCALE,
    ),
    selector: new TwoRandomChoices({ random: seeded(seed) }),
    ratelimitWindow: MINUTE,
    queue: { maxWait: 60_000 },
    logger: quietLogger(),
  });
}

const ask = (id: string, extra: object) => ({
  model: MODEL,
  max_tokens: 190,
  messages: [{ role: 'user' as const, content: `${PROMPT.slice(id.length)}${id}` }],
  ...extra,
});

async function upstream429s(upstreams: Upstreams): Promise<number> {
  const stats = await upstreams.stats();
  return Object.values(stats).reduce((n, s) => n + (s.byStatus[429] ?? 0), 0);
}

async function lanes(upstreams: Upstreams, mode: LaneRow['mode'], seed: number): Promise<LaneRow> {
  await upstreams.reset();
  const sb = board(upstreams, 2, seed);
  let failed = 0;
  const timed = (id: string, extra: object): Promise<number | undefined> => {
    const t = performance.now();
    return sb.chat.completions.create(ask(id, extra)).then(
      () => performance.now() - t,
      () => {
        failed++;
        return undefined;
      },
    );
  };
  try {
    const chats = [timed('chat-0', {})];
    await sleep(50);
    const lane = mode === 'lanes' ? { lane: 'batch' } : {};
    const flood = Array.from({ length: 150 }, (_, i) => timed(`job-${i}`, lane));
    let done = false;
    void Promise.all(flood).then(() => (done = true));
    for (let i = 1; !done; i++) {
      await sleep(500);
      chats.push(timed(`chat-${i}`, {}));
    }
    const chat = (await Promise.all(chats)).filter((x): x is number => x !== undefined);
    const batch = (await Promise.all(flood)).filter((x): x is number => x !== undefined);
    return {
      mode,
      chatP50: quantile(chat, 0.5),
      chatP95: quantile(chat, 0.95),
      batchP50: quantile(batch, 0.5),
      batchP95: quantile(batch, 0.95),
      failed,
      upstream429: await upstream429s(upstreams),
    };
  } finally {
    await sb.close();
  }
}

async function tenants(
  upstreams: Upstreams,
  mode: TenantRow['mode'],
  seed: number,
): Promise<TenantRow> {
  await upstreams.reset();
  const sb = board(upstreams, 1, seed);
  const answers: number[][] = [[], [], [], []];
  const send = (tenant: number, count: number) =>
    Array.from({ length: count }, (_, i) =>
      sb.chat.completions
        .create(ask(`${tenant}-${i}`, mode === 'tenants' ? { tenant: `t${tenant}` } : {}))
        .then(
          () => answers[tenant]!.push(performance.now()),
          () => undefined,
        ),
    );
  const all = send(0, 4 * PER_MINUTE);
  for (let t = 1; t < 4; t++) {
    await sleep(200);
    all.push(...send(t, 2 * PER_MINUTE));
  }
  const from = performance.now();
  await sleep(2 * MINUTE);
  const to = performance.now();
  // The rest is not measured: closing fails what still waits.
  await sb.close();
  await Promise.all(all);
  const answered = answers.map((times) => times.filter((t) => t >= from && t < to).length);
  return { mode, answered, jain: jain(answered) };
}
