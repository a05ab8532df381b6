/**
 * `npm run bench -- [flags]`: the switchboard's overhead, selection cost, balance and 429
 * avoidance, side by side with the alternatives. See `bench/RESULTS.md` and `--help`.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs, type BenchArgs } from './cli';
import { clientOnly, compare, fixture, originalReport } from './overhead';
import { selectionScaling } from './selection';
import { soak } from './soak';
import { DEFAULT_SETUP, strategies, type StateFactory } from './strategies';
import { hasGc } from './util';
import type { StateStore } from '../src';

async function main(): Promise<void> {
  const args: BenchArgs = parseArgs(process.argv.slice(2));
  if (args.smoke) {
    // CI calls the smoke run: a hang must fail it too, not wait for CI's own limit.
    setTimeout(() => {
      console.error('bench smoke run: still running after 5 minutes, giving up');
      process.exit(1);
    }, 300_000).unref();
  }
  const figures: Record<string, unknown> = {
    startedAt: new Date().toISOString(),
    node: process.version,
    cpus: (await import('node:os')).availableParallelism(),
    argv: process.argv.slice(2),
  };
  if (!hasGc())
    console.log('note: run with node --expose-gc for forced collections between rounds');

  // A soak runs alone; a smoke run goes through every section, small, then a short soak.
  const want = (s: string) => args.soak === undefined && (args.sections as string[]).includes(s);
  if (want('report') || want('compare')) {
    const fx = await fixture(args);
    try {
      if (want('report')) {
        console.log("\n== 1. The original's report ==\n");
        figures.report = await originalReport(args, fx);
      }
      if (want('compare')) {
        console.log('\n== 2. Switchboard vs direct openai SDK calls ==\n');
        figures.compare = await compare(args, fx);
        console.log('\n-- 2b. The same, client CPU only (canned answers, no sockets) --\n');
        figures.clientOnly = await clientOnly(args);
      }
    } finally {
      await fx.close();
    }
  }
  if (want('select')) {
    console.log('\n== 3. Selection cost by pool size ==\n');
    figures.select = selectionScaling(args.smoke ? [2, 10, 1000] : [2, 10, 100, 1000, 10_000], {
      per: args.smoke ? 10_000 : 100_000,
      batches: args.smoke ? 3 : 9,
    });
  }
  if (want('strategies')) {
    console.log('\n== 4. Strategies under Azure-like quotas ==\n');
    if (args.state === 'redis' && args.window === 'sliding') {
      console.log(
        '--state redis: the store resets usage at its own aligned windows: using --window fixed.',
      );
    }
    figures.strategies = await strategies({
      window: args.state === 'redis' ? 'fixed' : args.window,
      seconds: args.duration,
      loads: args.loads,
      instances: args.instances,
      strategies: args.strategies,
      seed: args.seed,
      inproc: args.inproc,
      state: await stateFactory(args),
    });
  }
  if (args.soak !== undefined || args.smoke) {
    if (args.soak === undefined) console.log('\n== Soak (smoke: a few seconds) ==\n');
    figures.soak = await soak({
      seconds: args.soak ?? 4,
      every: args.soak === undefined ? 2 : args.soakEvery,
      rate: args.soakRate,
      seed: args.seed,
      inproc: args.inproc,
    });
  }
  if (args.json) {
    writeFileSync(args.json, JSON.stringify(figures, null, 2) + '\n');
    console.log(`\nFigures written to ${args.json}`);
  }
}

/** `--state redis`: `redisState` from ../src, loaded dynamically: it may not be exported yet. */
async function stateFactory(
  args: BenchArgs,
): Promise<{ name: string; factory: StateFactory } | undefined> {
  if (args.state !== 'redis') return undefined;
  const src = (await import('../src')) as Record<string, unknown>;
  const redisState = src.redisState;
  if (typeof redisState !== 'function') {
    console.log(
      '--state redis: redisState is not exported by src/ (yet): the uncoordinated scenario runs with memory state.',
    );
    return undefined;
  }
  // A fresh key prefix per scenario (instance 0 comes first), so no scenario sees the last one's;
  // the sync interval runs on the scenarios' scaled clock (1 s of a real quota minute).
  let prefix = '';
  let scenarios = 0;
  const syncInterval = Math.max(1, Math.round(1000 / DEFAULT_SETUP.timeScale));
  return {
    name: `redis ${args.redisUrl.replace(/\/\/[^@]*@/, '//***@')}, syncInterval ${syncInterval} ms`,
    factory: (instance: number) => {
      if (instance === 0) prefix = `switchboard-bench-${process.pid}-${++scenarios}:`;
      return (redisState as (o: object) => StateStore)({
        url: args.redisUrl,
        prefix,
        syncInterval,
      });
    },
  };
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
