/**
 * Child process of the replicas section: either the simulated upstream (`upstream`: one
 * `SimulatedUpstream`, admission at arrival, each answer held 0.5-8 s) or one replica (`replica`:
 * a switchboard with `redisState` or none, sending Poisson arrivals for the row's seconds). Takes
 * one command by IPC, answers `{ ok, result | error }`, and exits when the parent disconnects.
 */
import { createSwitchboard, redisState, type DeploymentConfig, type Switchboard } from '../src';
import { SimulatedUpstream, type SimulatedDeploymentOptions } from '../src/testing';
import { quietLogger, seeded } from './util';

/** What the parent asks the upstream child to serve. */
export interface UpstreamCommand {
  role: 'upstream';
  deployments: SimulatedDeploymentOptions[];
  /** Each answer is held this long after admission (ms), drawn uniformly. */
  answerMs: [number, number];
  seed: number;
}

/** What the parent asks one replica to send. */
export interface ReplicaCommand {
  role: 'replica';
  kind: 'azure' | 'claude';
  deployments: DeploymentConfig[];
  model: string;
  /** `undefined`: no shared state. */
  redis?: { url: string; prefix: string; leases: boolean };
  /** Calls per second this replica sends, on average (Poisson). */
  rate: number;
  seconds: number;
  /**
   * Epoch ms from which calls are counted (the row's `seconds` follow it); the calls before warm
   * the upstream up. `undefined`: from the start.
   */
  measureFrom?: number;
  maxWait: number;
  seed: number;
}

/** What one replica reports. */
export interface ReplicaReport {
  calls: number;
  ok: number;
  failed: number;
  /** Tokens of the answered calls (prompt + output). */
  tokens: number;
  /** Lease exchanges with the store (round trips; the syncs add one a second). */
  exchanges: number;
  health: Record<string, unknown>;
  /** Failed calls by error name and status. */
  failedBy: Record<string, number>;
}

/** Statistics the upstream child reports. */
export interface UpstreamReport {
  requests: number;
  rateLimited: number;
}

let upstream: SimulatedUpstream | undefined;
let sb: Switchboard | undefined;

type Command = UpstreamCommand | ReplicaCommand | { role: 'stats' } | { role: 'ping' };

process.on('message', (message: Command) => {
  run(message).then(
    (result) => process.send?.({ ok: true, result }),
    (error: unknown) => process.send?.({ ok: false, error: String(error) }),
  );
});

process.on('disconnect', () => {
  void Promise.all([sb?.close(), upstream?.close()]).finally(() => process.exit(0));
});

async function run(message: Command): Promise<unknown> {
  if (message.role === 'ping') return true;
  if (message.role === 'upstream') return serve(message);
  if (message.role === 'replica') return send(message);
  const stats = upstream!.deployments.map((d) => d.stats);
  return {
    requests: stats.reduce((s, x) => s + x.requests, 0),
    rateLimited: stats.reduce((s, x) => s + x.rateLimited, 0),
  } satisfies UpstreamReport;
}

async function serve(c: UpstreamCommand): Promise<Record<string, string>> {
  upstream = await SimulatedUpstream.start({ deployments: c.deployments });
  const random = seeded(c.seed);
  const [lo, hi] = c.answerMs;
  // The upstream admits (and counts) a call when it arrives; the answer takes its time after.
  for (const d of upstream.deployments) {
    d.holdAnswers();
    let seen = 0;
    const release = () => {
      for (; seen < d.heldAnswers; seen++) {
        const i = seen;
        setTimeout(() => d.releaseAnswer(i), lo + random() * (hi - lo)).unref();
      }
    };
    setInterval(release, 5).unref();
  }
  return Object.fromEntries(
    upstream.deployments.map((d) => [
      d.name,
      d.name.startsWith('claude') ? d.anthropicBaseURL : d.openaiBaseURL,
    ]),
  );
}

async function send(c: ReplicaCommand): Promise<ReplicaReport> {
  const random = seeded(c.seed);
  sb = createSwitchboard({
    deployments: c.deployments,
    logger: quietLogger(),
    queue: { maxWait: c.maxWait },
    ...(c.redis
      ? {
          state: redisState({
            url: c.redis.url,
            prefix: c.redis.prefix,
            ...(c.redis.leases ? {} : { leases: false as const }),
          }),
        }
      : {}),
  });
  const sw = sb;
  const report: ReplicaReport = {
    calls: 0,
    ok: 0,
    failed: 0,
    tokens: 0,
    exchanges: 0,
    health: {},
    failedBy: {},
  };
  const calls: Promise<void>[] = [];
  const from = c.measureFrom ?? Date.now();
  const end = from + c.seconds * 1000;
  const exchanges = () =>
    (sw.state.health()['leases'] as { exchanges?: number } | undefined)?.exchanges ?? 0;
  let exchangesBefore = 0;
  if (c.measureFrom !== undefined) {
    setTimeout(() => (exchangesBefore = exchanges()), Math.max(0, from - Date.now())).unref();
  }
  const between = (a: number, b: number) => Math.round(a + random() * (b - a));
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, (-Math.log(1 - random()) / c.rate) * 1000));
    if (Date.now() >= end) break;
    const counted = Date.now() >= from;
    // Prompts of 200-3 000 tokens (4 characters each), max_tokens 100-1 000.
    const prompt = 'x'.repeat(4 * between(200, 3_000));
    const maxTokens = between(100, 1_000);
    if (counted) report.calls++;
    const content = `${report.calls} ${Date.now()} ${prompt}`;
    const call =
      c.kind === 'azure'
        ? sw.chat.completions.create({
            model: c.model,
            max_tokens: maxTokens,
            messages: [{ role: 'user', content }],
          })
        : sw.messages.create({
            model: c.model,
            max_tokens: maxTokens,
            messages: [{ role: 'user', content }],
          });
    calls.push(
      (call as Promise<{ usage?: Record<string, number> }>).then(
        (answer) => {
          if (!counted) return;
          report.ok++;
          const u = answer.usage ?? {};
          report.tokens +=
            (u['total_tokens'] ?? 0) + (u['input_tokens'] ?? 0) + (u['output_tokens'] ?? 0);
        },
        (error: unknown) => {
          if (!counted) return;
          report.failed++;
          const e = error as { name?: string; status?: number };
          const key = `${e.name ?? 'Error'} ${e.status ?? ''}`.trim();
          report.failedBy[key] = (report.failedBy[key] ?? 0) + 1;
        },
      ),
    );
  }
  await Promise.all(calls);
  const health = sw.state.health();
  report.exchanges = exchanges() - exchangesBefore;
  report.health = health;
  return report;
}
