/**
 * `npx ts-node --transpile-only bench/shared-state.ts [--redis-url URL] [--duration S]
 * [--loads 0.95,1.1] [--instances 4] [--seed N] [--repeat N]`
 *
 * Several switchboards over the same Azure-like simulated deployments (the strategies section's
 * setup: quotas enforced per scaled minute), with and without `redisState`: upstream 429 share
 * and calls that failed for the caller. Without `--redis-url`, starts a throwaway `redis-server`
 * on a free loopback port.
 *
 * Everything runs on the bench's scaled clock (a quota minute lasts 60 / timeScale s), so the
 * store's `syncInterval` is scaled as well: the default 1 s of a real 60 s window becomes
 * 1000 / timeScale ms here. A second redis row syncs 6x less often (a 6 s interval in real time).
 */
import { randomBytes } from 'node:crypto';
import { redisState, type StateStore } from '../src';
import { RedisServer } from '../test/support/redis-server';
import { STRATEGIES } from './selectors';
import {
  capacity,
  DEFAULT_SETUP,
  promptSizes,
  scenario,
  type ScenarioResult,
  type StateFactory,
} from './strategies';
import { startUpstreams } from './upstreams';
import { fixed, mean, pct, table } from './util';

interface Args {
  redisUrl: string | undefined;
  duration: number;
  loads: number[];
  instances: number;
  seed: number;
  repeat: number;
  align: boolean;
}

function parse(argv: readonly string[]): Args {
  const args: Args = {
    redisUrl: undefined,
    duration: 6,
    loads: [0.95, 1.1],
    instances: 4,
    seed: 1,
    repeat: 1,
    align: false,
  };
  for (let k = 0; k < argv.length; k++) {
    const flag = argv[k]!;
    if (flag === '--align') {
      args.align = true;
      continue;
    }
    const value = argv[++k];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--redis-url') args.redisUrl = value;
    else if (flag === '--duration') args.duration = Number(value);
    else if (flag === '--loads') args.loads = value.split(',').map(Number);
    else if (flag === '--instances') args.instances = Number(value);
    else if (flag === '--seed') args.seed = Number(value);
    else if (flag === '--repeat') args.repeat = Number(value);
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

/** A fresh prefix per scenario, so that no scenario sees the last one's usage. */
function redisFactory(url: string, syncInterval: number): StateFactory {
  let prefix = '';
  return (instance: number): StateStore => {
    if (instance === 0) prefix = `bench-${randomBytes(4).toString('hex')}:`;
    return redisState({ url, prefix, syncInterval });
  };
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  const setup = DEFAULT_SETUP;
  const server = args.redisUrl === undefined ? await RedisServer.start() : undefined;
  const url = args.redisUrl ?? server!.url;
  const sizes = promptSizes(20_000, args.seed);
  const meanTokens = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4)))) + setup.completionTokens;
  const cap = capacity(setup, meanTokens);
  const scaledSecond = Math.round(1000 / setup.timeScale);
  console.log(
    `${args.instances} switchboards (2rc), ${setup.deployments} simulated deployments of tpm ${setup.tpm} / rpm ${setup.rpm}, ` +
      `time scale ${setup.timeScale}; capacity ${fixed(cap.perSecond, 0)} calls/s (${cap.bound}-bound); ` +
      `${args.duration} s per scenario; redis at ${url.replace(/\/\/[^@]*@/, '//***@')}`,
  );
  const modes: Array<{ label: string; instances?: number; state?: StateFactory }> = [
    { label: '1 switchboard (reference)', instances: 1 },
    { label: 'memory (uncoordinated)' },
    {
      label: `redis, syncInterval ${scaledSecond} ms (= 1 s real)`,
      state: redisFactory(url, scaledSecond),
    },
    {
      label: `redis, syncInterval ${6 * scaledSecond} ms (= 6 s real)`,
      state: redisFactory(url, 6 * scaledSecond),
    },
  ];
  const upstreams = await startUpstreams(
    Array.from({ length: setup.deployments }, (_, n) => ({
      name: `q${n}`,
      tpm: setup.tpm,
      rpm: setup.rpm,
      timeScale: setup.timeScale,
      latency: setup.latency,
      completionTokens: setup.completionTokens,
    })),
    false,
  );
  const all: Array<{ mode: string; load: number; runs: ScenarioResult[] }> = [];
  const minute = 60_000 / setup.timeScale;
  const run = async (mode: (typeof modes)[number], load: number, seconds: number) => {
    if (args.align) {
      // Start on a clock-aligned quota minute: the simulated deployments open their windows with
      // the first request, so every mode's windows (the switchboard's own timer, or redisState's
      // clock-aligned ones) then line up with the upstream's alike.
      const wait = minute - (Date.now() % minute);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    return scenario({
      upstreams,
      setup,
      strategy: STRATEGIES['2rc']!.label,
      selector: STRATEGIES['2rc']!.make,
      instances: mode.instances ?? args.instances,
      load,
      seconds,
      sizes,
      meanTokens,
      state: mode.state,
    });
  };
  try {
    // Warm-up (JIT, sockets), not reported: the first scenario of a process is always worse.
    for (const mode of modes) await run(mode, args.loads[0]!, 2);
    for (const load of args.loads) {
      const rows = modes.map((mode) => ({ mode: mode.label, load, runs: [] as ScenarioResult[] }));
      all.push(...rows);
      // Modes take turns, so that drift in the machine's load spreads over all of them.
      for (let r = 0; r < args.repeat; r++) {
        for (let m = 0; m < modes.length; m++)
          rows[m]!.runs.push(await run(modes[m]!, load, args.duration));
      }
      console.log(
        `\nOffered load ${pct(load, 0)} (${fixed(rows[0]!.runs[0]!.offeredPerSecond, 0)} calls/s):`,
      );
      console.log(
        table(
          [
            'state',
            'calls',
            'upstream 429s / call',
            'failed for caller',
            'goodput',
            'util mean / max',
          ],
          rows.map(({ mode, runs }) => [
            mode,
            String(sum(runs, (r) => r.calls)),
            `${sum(runs, (r) => r.upstream429)} (${pct(
              avg(runs, (r) => r.share429),
              2,
            )})`,
            `${sum(runs, (r) => r.failed)} (${pct(
              avg(runs, (r) => r.failedShare),
              2,
            )})`,
            pct(
              avg(runs, (r) => r.goodputShare),
              0,
            ),
            `${fixed(
              avg(runs, (r) => r.utilMean),
              3,
            )} / ${fixed(Math.max(...runs.map((r) => r.utilMax)), 3)}`,
          ]),
        ),
      );
    }
  } finally {
    await upstreams.close();
    await server?.close();
  }
}

const sum = (rs: ScenarioResult[], f: (r: ScenarioResult) => number) =>
  rs.reduce((s, r) => s + f(r), 0);
const avg = (rs: ScenarioResult[], f: (r: ScenarioResult) => number) => sum(rs, f) / rs.length;

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
