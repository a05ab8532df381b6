/**
 * Section 11: capacity planning. A day of bursty traffic (a daily curve, a ten-fold burst of one
 * minute every hour, two models, two lanes, eight tenants) is written as a `recordTraffic` file
 * and planned with `nestjs-switchboard plan` in a child process of its own, so that its time and
 * its peak memory are the command's alone; then with `--find-tpm`. Beside it, the cost per call of
 * writing the record (the line's JSON and its buffering), which is all the call path pays.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TrafficRecorder } from '../src/traffic/traffic-recorder';
import type { PlanReport } from '../src/planning/plan';
import { seeded, table, TS_REGISTER } from './util';

export interface PlanningOptions {
  calls: number;
  seed: number;
  /** Also search the smallest quota (several replays). */
  findTpm: boolean;
}

export const CONFIG = `deployments:
${['sweden-central', 'east-us-2', 'france-central', 'west-us-3']
  .map(
    (name) => `  - provider: openai
    name: ${name}
    baseURL: https://${name}.openai.azure.com/openai/v1/
    apiKey: unused
    models:
      - { name: gpt-4o, tpm: 400000 }
      - { name: gpt-4o-mini, tpm: 150000 }`,
  )
  .join('\n')}
queue: { maxWait: 10000, batchMaxWait: 60000 }
fallbacks: { gpt-4o: [gpt-4o-mini] }
`;

/** Writes a day of `calls` bursty calls; resolves the file's path. */
export async function writeTrace(file: string, calls: number, seed: number): Promise<void> {
  const random = seeded(seed);
  const start = Date.UTC(2026, 0, 5);
  const day = 86_400_000;
  const out = createWriteStream(file);
  // Arrival times drawn from the day's shape: a daily curve (peak 4x the night) plus one
  // minute of ten times the rate every hour, by rejection sampling.
  const shape = (t: number) => {
    const hour = (t / 3_600_000) % 24;
    const curve = 1 + 1.5 * Math.max(0, Math.sin(((hour - 6) / 24) * 2 * Math.PI));
    return t % 3_600_000 < 60_000 ? curve * 10 : curve;
  };
  const times = new Float64Array(calls);
  for (let i = 0; i < calls;) {
    const t = random() * day;
    if (random() * 25 < shape(t)) times[i++] = Math.floor(start + t);
  }
  times.sort();
  let buffer = '';
  for (let i = 0; i < calls; i++) {
    const mini = random() < 0.3;
    const input = Math.round(200 + random() * random() * 3_000);
    const maxTokens = mini ? 256 : 512;
    const line = {
      t: times[i],
      model: mini ? 'gpt-4o-mini' : 'gpt-4o',
      input_tokens: input,
      cached_tokens: random() < 0.2 ? Math.floor(input / 2) : 0,
      output_tokens: Math.round(random() * maxTokens),
      max_tokens: maxTokens,
      lane: random() < 0.25 ? 'batch' : 'interactive',
      tenant: `tenant-${Math.floor(random() * 8)}`,
      status: 200,
      latency_ms: Math.round(300 + random() * 2_500),
    };
    buffer += JSON.stringify(line) + '\n';
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await new Promise((r) => out.once('drain', () => r(undefined)));
      buffer = '';
    }
  }
  out.write(buffer);
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
}

/** Runs the plan command in a child process; its wall time (s), peak RSS (MB) and report. */
function planInChild(
  file: string,
  config: string,
  extra: string[],
): { seconds: number; rssMb: number; report: PlanReport } {
  const script = `
    const { runPlanCli } = require(${JSON.stringify(resolve(__dirname, '../src/planning/run-plan.ts'))});
    const started = performance.now();
    const out = [];
    runPlanCli(${JSON.stringify(['plan', file, '--config', config, '--json', ...extra])},
        { out: (t) => out.push(t), err: (t) => process.stderr.write(t + '\\n') })
      .then((status) => {
        if (status !== 0) process.exit(status);
        process.stdout.write(JSON.stringify({
          seconds: (performance.now() - started) / 1000,
          rssMb: process.resourceUsage().maxRSS / 1024,
          report: JSON.parse(out.join('')),
        }));
      });`;
  const text = execFileSync(process.execPath, ['--require', TS_REGISTER, '-e', script], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(text) as { seconds: number; rssMb: number; report: PlanReport };
}

/** Microseconds per recorded call: building its line and buffering it, as the call path does. */
function recordCost(calls: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'record-'));
  const logger = { log() {}, warn() {}, error() {}, debug() {} };
  const recorder = new TrafficRecorder(join(dir, 'traffic.jsonl'), logger, Date.now);
  const request = {
    body: { model: 'gpt-4o', max_tokens: 512 },
    stream: false,
    admission: { input: 1_000, output: 512 },
    metered: true,
    hideUsageEvents: false,
  };
  const deployment = { name: 'sweden-central', provider: 'openai' } as never;
  const call = { t: Date.now(), lane: 'interactive' as const, tenant: 'acme' };
  const record = (n: number) => {
    for (let i = 0; i < n; i++) {
      const trace = recorder.attempt(deployment, 'gpt-4o', request, call)!;
      trace.response({ usage: { prompt_tokens: 1_000 + (i % 100), completion_tokens: 200 } });
    }
  };
  // Warmed up first: the figure is the steady cost, not the first calls' compilation.
  record(calls / 10);
  const started = performance.now();
  record(calls);
  const us = ((performance.now() - started) * 1000) / calls;
  void recorder.close().then(() => rmSync(dir, { recursive: true, force: true }));
  return us;
}

export async function planning(o: PlanningOptions): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'plan-bench-'));
  try {
    const file = join(dir, 'traffic.jsonl');
    const config = join(dir, 'switchboard.yaml');
    writeFileSync(config, CONFIG);
    await writeTrace(file, o.calls, o.seed);
    console.log(
      `A day of ${o.calls} bursty calls (daily curve, a 10x minute every hour; gpt-4o 70 %, ` +
        `gpt-4o-mini 30 %, a quarter batch, 8 tenants) on 4 deployments of gpt-4o (400k TPM) ` +
        `and gpt-4o-mini (150k TPM), queue { maxWait: 10 s }, fallbacks gpt-4o -> gpt-4o-mini.`,
    );
    const plain = planInChild(file, config, []);
    const rows = plain.report.deployments.map((d) => [
      d.deployment,
      d.model,
      String(d.sent),
      String(d.upstream429s),
      `${(d.utilization * 100).toFixed(1)} %`,
    ]);
    console.log(table(['deployment', 'model', 'sent', 'upstream 429s', 'utilization'], rows));
    const c = plain.report.callers;
    console.log(
      `callers: ${c.failed} failed, wait p50 ${c.waitP50Ms} ms, p95 ${c.waitP95Ms} ms\n` +
        `replay: ${plain.seconds.toFixed(1)} s for ${o.calls} calls ` +
        `(${((plain.seconds * 1e6) / o.calls).toFixed(1)} us per call), peak memory ${Math.round(plain.rssMb)} MB`,
    );
    const figures: Record<string, unknown> = {
      calls: o.calls,
      seconds: plain.seconds,
      rssMb: plain.rssMb,
      report: plain.report,
    };
    if (o.findTpm) {
      const found = planInChild(file, config, ['--find-tpm']);
      console.log(
        `--find-tpm: ${Object.entries(found.report.suggestion ?? {})
          .map(([m, s]) => `${m} ${s.tpm ?? 'none'} TPM`)
          .join(', ')} across the 4 deployments (${found.seconds.toFixed(1)} s, ` +
          `peak memory ${Math.round(found.rssMb)} MB)`,
      );
      figures.findTpm = {
        seconds: found.seconds,
        rssMb: found.rssMb,
        suggestion: found.report.suggestion,
      };
    }
    const us = recordCost(o.calls > 10_000 ? 200_000 : 20_000);
    console.log(`recordTraffic: ${us.toFixed(2)} us per call on the call path (line and buffer)`);
    figures.recordUsPerCall = us;
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
