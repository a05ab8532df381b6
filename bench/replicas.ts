/**
 * Section `replicas`: many replicas, one quota. N replicas run as separate processes on one
 * `redis-server` (or without shared state), the simulated upstream in its own process, on real
 * time: Poisson arrivals, prompts of 200-3 000 tokens, `max_tokens` 100-1 000, answers held
 * 0.5-8 s after the upstream admitted them, `queue.maxWait` 10 s. Each row reports the share of
 * calls sent that got the upstream's 429, the callers that failed, goodput (answered calls per
 * offered), and the lease exchanges with the store per call. `--replica-seconds` sets a row's
 * length (default 90).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { DeploymentConfig } from '../src';
import { RedisServer } from '../test/support/redis-server';
import type { ReplicaCommand, ReplicaReport, UpstreamReport } from './replica-child';
import { pct, sleep, table, TS_REGISTER } from './util';

/** One row: who sends, how much, and what happens to the store. */
export interface ReplicaRow {
  kind: 'azure' | 'claude';
  /** Offered load as a share of the deployments' summed capacity. */
  load: number;
  replicas: number;
  state: 'redis' | 'none';
  /** Admission by leases (`false`: by the synced view alone, as before leases). */
  leases: boolean;
  /** Stop the store halfway through the row. */
  stopStore?: boolean;
}

/** What a row measured. */
export interface ReplicaResult extends ReplicaRow {
  offered: number;
  sent: number;
  upstream429: number;
  failed: number;
  /** Answered calls per offered call. */
  goodput: number;
  /** Lease exchanges per offered call. */
  exchangesPerCall: number;
  storeDown: boolean;
  /** The 1-minute load average as the row started and as it ended. */
  load1: [number, number];
  /** Failed callers by error (name and status). */
  failedBy: Record<string, number>;
}

/** Mean prompt + output cap of a call (tokens): 1 600 + 550. */
const AZURE_CHARGE = 1_600 + 550;
/** Mean prompt of a call (tokens), what Claude's ITPM counts. */
const CLAUDE_INPUT = 1_600;
const AZURE = { deployments: 3, tpm: 60_000, rpm: 360 };
const CLAUDE = { deployments: 2, rpm: 1_000, itpm: 80_000, otpm: 24_000 };

/** The acceptance rows: Azure 80/98/130 %, Claude 98/137/182 %, the store stopped at 98 %. */
export function replicaRows(before: boolean): ReplicaRow[] {
  const rows: ReplicaRow[] = [];
  for (const load of [0.8, 0.98, 1.3]) {
    if (!before) rows.push({ kind: 'azure', load, replicas: 1, state: 'none', leases: false });
    rows.push({ kind: 'azure', load, replicas: 4, state: 'redis', leases: !before });
    if (!before) rows.push({ kind: 'azure', load, replicas: 4, state: 'none', leases: false });
  }
  for (const load of [0.98, 1.37, 1.82]) {
    if (!before) rows.push({ kind: 'claude', load, replicas: 1, state: 'none', leases: false });
    rows.push({ kind: 'claude', load, replicas: 4, state: 'redis', leases: !before });
  }
  rows.push({
    kind: 'azure',
    load: 0.98,
    replicas: 4,
    state: 'redis',
    leases: !before,
    stopStore: true,
  });
  return rows;
}

/** Runs `rows` for `seconds` each and prints the table. */
export async function replicasBench(
  rows: readonly ReplicaRow[],
  seconds: number,
  warmupSeconds = 0,
): Promise<ReplicaResult[]> {
  const results: ReplicaResult[] = [];
  for (const row of rows) {
    const r = await runRow(row, seconds, warmupSeconds);
    results.push(r);
    console.log(
      `  ${describe(r)}: ${r.offered} offered, ${r.sent} sent, ${pct(r.upstream429 / Math.max(1, r.sent))} got 429, ` +
        `${pct(r.failed / Math.max(1, r.offered))} callers failed, goodput ${pct(r.goodput)}, ` +
        `${r.exchangesPerCall.toFixed(2)} lease exchanges a call, load ${r.load1.map((l) => l.toFixed(1)).join(' → ')}, ` +
        `store down seen: ${r.storeDown}, failed by ${JSON.stringify(r.failedBy)}`,
    );
  }
  console.log();
  const printed = table(
    [
      'row',
      'offered',
      'sent',
      '429 of sent',
      'callers failed',
      'goodput',
      'exchanges/call',
      'load',
    ],
    results.map((r) => [
      describe(r),
      String(r.offered),
      String(r.sent),
      pct(r.upstream429 / Math.max(1, r.sent)),
      pct(r.failed / Math.max(1, r.offered)),
      pct(r.goodput),
      r.exchangesPerCall.toFixed(2),
      r.load1.map((l) => l.toFixed(1)).join('-'),
    ]),
  );
  console.log(printed);
  return results;
}

function describe(r: ReplicaRow): string {
  const who =
    r.replicas === 1
      ? '1 replica'
      : `${r.replicas} replicas${r.state === 'redis' ? (r.leases ? ' + Redis, leases' : ' + Redis, no leases') : ', no shared state'}`;
  return `${r.kind} ${Math.round(r.load * 100)} %, ${who}${r.stopStore ? ', store stopped halfway' : ''}`;
}

async function runRow(
  row: ReplicaRow,
  seconds: number,
  warmupSeconds: number,
): Promise<ReplicaResult> {
  const load1 = loadavg()[0]!;
  const children: ChildProcess[] = [];
  const redis = row.state === 'redis' ? await RedisServer.start() : undefined;
  try {
    const up = child(children);
    const azure = row.kind === 'azure';
    const names = Array.from({ length: azure ? AZURE.deployments : CLAUDE.deployments }, (_, i) =>
      azure ? `oai${i}` : `claude${i}`,
    );
    const urls = (await ask(up, {
      role: 'upstream',
      deployments: names.map((name) =>
        azure
          ? { name, tpm: AZURE.tpm, rpm: AZURE.rpm, completionTokens: 300 }
          : { name, rpm: CLAUDE.rpm, itpm: CLAUDE.itpm, otpm: CLAUDE.otpm, completionTokens: 300 },
      ),
      answerMs: [500, 8_000],
      seed: 7,
    })) as Record<string, string>;
    const model = azure ? 'gpt-4o-mini' : 'claude-sonnet-5';
    const deployments: DeploymentConfig[] = names.map((name) =>
      azure
        ? {
            provider: 'openai',
            name,
            baseURL: urls[name]!,
            apiKey: 'bench',
            timeout: 30_000,
            models: [{ name: model, tpm: AZURE.tpm, rpm: AZURE.rpm }],
          }
        : {
            provider: 'anthropic',
            name,
            baseURL: urls[name]!,
            apiKey: 'bench',
            timeout: 30_000,
            models: [{ name: model, rpm: CLAUDE.rpm, itpm: CLAUDE.itpm, otpm: CLAUDE.otpm }],
          },
    );
    // Calls a second at 100 %: the binding limit (Azure's tokens with the output cap charged,
    // Claude's input tokens).
    const capacity = azure
      ? (AZURE.deployments * AZURE.tpm) / AZURE_CHARGE / 60
      : (CLAUDE.deployments * CLAUDE.itpm) / CLAUDE_INPUT / 60;
    const prefix = `bench-${randomBytes(4).toString('hex')}:`;
    const replicas = Array.from({ length: row.replicas }, () => child(children));
    // Every replica has loaded before the clock of the row starts.
    await Promise.all(replicas.map((c) => ask(c, { role: 'ping' })));
    // A bucket's row first sends its load uncounted, so that it is measured from where a steady
    // load leaves the buckets rather than from full ones (a window forgets each minute).
    const warmup = row.kind === 'claude' ? warmupSeconds * 1000 : 0;
    const measureFrom = Date.now() + warmup;
    const reports = replicas.map(
      (c, i) =>
        ask(c, {
          role: 'replica',
          kind: row.kind,
          deployments,
          model,
          redis: redis && { url: redis.url, prefix, leases: row.leases },
          rate: (capacity * row.load) / row.replicas,
          seconds,
          measureFrom: warmup > 0 ? measureFrom : undefined,
          maxWait: 10_000,
          seed: 1_000 + i,
        } satisfies ReplicaCommand) as Promise<ReplicaReport>,
    );
    let before: UpstreamReport = { requests: 0, rateLimited: 0 };
    if (warmup > 0) {
      await sleep(measureFrom - Date.now());
      before = (await ask(up, { role: 'stats' })) as UpstreamReport;
    }
    if (row.stopStore && redis) {
      await sleep((seconds * 1000) / 2);
      await redis.stop();
    }
    const done = await Promise.all(reports);
    const after = (await ask(up, { role: 'stats' })) as UpstreamReport;
    const stats = {
      requests: after.requests - before.requests,
      rateLimited: after.rateLimited - before.rateLimited,
    };
    const failedBy: Record<string, number> = {};
    for (const r of done) {
      for (const [k, v] of Object.entries(r.failedBy)) failedBy[k] = (failedBy[k] ?? 0) + v;
    }
    const offered = done.reduce((s, r) => s + r.calls, 0);
    return {
      ...row,
      offered,
      sent: stats.requests,
      upstream429: stats.rateLimited,
      failed: done.reduce((s, r) => s + r.failed, 0),
      goodput: done.reduce((s, r) => s + r.ok, 0) / Math.max(1, offered),
      exchangesPerCall: done.reduce((s, r) => s + r.exchanges, 0) / Math.max(1, offered),
      storeDown: done.some((r) => r.health['status'] === 'degraded'),
      load1: [load1, loadavg()[0]!],
      failedBy,
    };
  } finally {
    for (const c of children) c.disconnect();
    await redis?.close();
    await sleep(200);
  }
}

function child(children: ChildProcess[]): ChildProcess {
  const c = fork(join(__dirname, 'replica-child.ts'), [], {
    execArgv: ['--require', TS_REGISTER],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(c);
  return c;
}

function ask(c: ChildProcess, message: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    c.once('message', (reply: { ok: boolean; result?: unknown; error?: string }) =>
      reply.ok ? resolve(reply.result) : reject(new Error(reply.error)),
    );
    c.once('exit', (code) => reject(new Error(`a bench child exited (${code})`)));
    c.send(message as object);
  });
}
