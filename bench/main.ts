/**
 * `npm run bench -- [flags]`: the switchboard's overhead, selection cost, balance and 429
 * avoidance, side by side with the alternatives. See `bench/RESULTS.md` and `--help`.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createSwitchboard, redisState } from '../src';
import { afterGc } from './after-gc';
import { parseArgs, type BenchArgs } from './cli';
import { gatewayBench } from './gateway';
import { clientOnly, compare, fixture, originalReport } from './overhead';
import { ownPath } from './own-path';
import { perSurface } from './surfaces';
import { retained } from './retained';
import { selectionScaling } from './selection';
import { quota, type Accounting } from './quota';
import { fidelity, LOAD_SHAPES, RULE_KINDS } from './fidelity';
import { loadAgainst } from './paired';
import { scheduling } from './scheduling';
import { soak } from './soak';
import { DEFAULT_SETUP, strategies, type StateFactory } from './strategies';
import { tiers } from './tiers';
import { hasGc } from './util';
import { latencyBench } from './latency';
import { placement } from './placement';
import { planning } from './planning';
import { replicaRows, replicasBench } from './replicas';
import { cacheBench } from './cache';

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
    console.log('note: run with node --expose-gc for forced collections (--forced-gc, the soak)');

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
        console.log('\n-- 2c. Overhead per API surface (canned answers, no sockets) --\n');
        figures.surfaces = await perSurface(args);
        console.log(
          "\n-- 2d. The switchboard's own path (a client that answers at once, no SDK) --\n",
        );
        figures.ownPath = await ownPath(args);
      }
    } finally {
      await fx.close();
    }
  }
  if (want('after-gc')) {
    console.log('\n-- 2e. The launch after a full GC: CPU and our deopts, per round --\n');
    if (args.smoke) {
      // Three warm-up rounds and two processes: some 10 s, more than the smoke run can spend.
      console.log('(skipped in a smoke run: npm run bench -- --only after-gc)');
    } else {
      figures.afterGc = await afterGc({
        rounds: args.rounds,
        bursts: args.bursts,
        requests: args.requests,
        deployments: args.deployments,
      });
    }
  }
  if (want('select')) {
    console.log('\n== 3. Selection cost by pool size ==\n');
    figures.select = selectionScaling(args.smoke ? [2, 10, 1000] : [2, 10, 100, 1000, 10_000], {
      per: args.smoke ? 10_000 : 100_000,
      batches: args.smoke ? 3 : 9,
    });
  }
  if (want('retained')) {
    console.log('\n== 3b. What switchboards built and closed leave behind ==\n');
    figures.retained = await retained(args.smoke ? 2_000 : 20_000);
  }
  if (want('strategies')) {
    console.log('\n== 4. Strategies under Azure-like quotas ==\n');
    figures.strategies = await strategies({
      window: args.window,
      seconds: args.duration,
      loads: args.loads,
      instances: args.instances,
      queue: args.queue,
      strategies: args.strategies,
      seed: args.seed,
      inproc: args.inproc,
      setup: { ...DEFAULT_SETUP, timeScale: args.timeScale },
      state: await stateFactory(args),
    });
  }
  if (want('tiers')) {
    console.log('\n== 5. PTU + PAYG: priority tiers vs a flat pool ==\n');
    figures.tiers = await tiers({
      seconds: args.duration,
      loads: args.smoke ? [0.5, 2] : [0.5, 1, 1.5, 2],
      seed: args.seed,
      inproc: args.inproc,
      window: args.window,
    });
  }
  if (want('quota')) {
    console.log('\n== 6. Routing on what the upstream enforces ==\n');
    const started = performance.now();
    figures.quota = await quota({
      seconds: args.duration,
      seed: args.seed,
      inproc: args.inproc,
      only: args.quotaScenarios,
      timeScale: args.quotaScale,
      tpms: args.quotaTpm,
      maxTokens: args.quotaMaxTokens,
      modes: args.quotaModes?.map((m) => (m === 'queue' ? 'new + queue' : m)) as
        Accounting[] | undefined,
      trace: args.quotaTrace,
    });
    console.log(`\n(section 6 took ${Math.round((performance.now() - started) / 1000)} s)`);
  }
  if (want('fidelity')) {
    console.log("\n== 6b. Quota fidelity matrix: each upstream's rules x load shape ==\n");
    const started = performance.now();
    const against = loadAgainst(args.against);
    figures.fidelity = await fidelity({
      seed: args.seed,
      kinds: oneOf('--fidelity-kinds', args.fidelityKinds, RULE_KINDS),
      shapes: oneOf('--fidelity-shapes', args.fidelityShapes, LOAD_SHAPES),
      minutes: args.fidelityMinutes,
      // A smoke run goes through every kind's path: no warm-up minute.
      warmupMinutes: args.smoke ? 0 : 1,
      create: createSwitchboard,
      ...(against && args.against ? { against: { label: args.against, create: against } } : {}),
    });
    console.log(`\n(section 6b took ${Math.round((performance.now() - started) / 1000)} s)`);
  }
  if (want('gateway')) {
    console.log('\n== 7. The gateway beside the Portkey gateway and a bare proxy ==\n');
    figures.gateway = await gatewayBench({
      seconds: args.gatewaySeconds,
      rounds: args.gatewayRounds,
      connections: 50,
      // A smoke run asserts no figure: no warm-up.
      warmup: args.smoke ? 0 : 1000,
      fastify: !args.smoke,
    });
  }
  if (want('scheduling')) {
    console.log('\n== 8. Scheduling: lanes and tenants ==\n');
    if (args.smoke) {
      // Its rows last several quota minutes by nature: more than the smoke run can spend.
      console.log('(skipped in a smoke run: npm run bench -- --only scheduling)');
    } else {
      figures.scheduling = await scheduling({ rounds: 2, seed: args.seed, inproc: args.inproc });
    }
  }
  if (want('latency')) {
    console.log('\n== 9. Latency-aware two random choices beside utilization alone ==\n');
    figures.latency = await latencyBench({
      // Smoke: one short round of 9a goes through the section; 9b is section 4's scenario.
      seconds: args.smoke ? 0.25 : args.duration,
      rounds: args.smoke ? 1 : 3,
      rate: 100,
      fastMs: 20,
      slowMs: 400,
      quotaSeconds: args.smoke ? 0 : args.duration,
      loads: [0.95, 1.1],
      seed: args.seed,
      inproc: args.inproc,
    });
  }
  if (want('placement')) {
    console.log('\n== 10. Placement: prompt-cache affinity and tags ==\n');
    figures.placement = await placement({ calls: args.smoke ? 60 : 600, seed: args.seed });
  }
  if (want('planning')) {
    console.log('\n== 11. Capacity planning: a day of recorded traffic, replayed ==\n');
    figures.planning = await planning({
      calls: args.smoke ? 5_000 : 1_000_000,
      seed: args.seed,
      findTpm: !args.smoke,
    });
  }
  if (want('cache')) {
    console.log('\n== 12. The response cache: a hit served from memory ==\n');
    figures.cache = await cacheBench({
      calls: args.smoke ? 2_000 : 20_000,
      rounds: args.smoke ? 1 : 5,
    });
  }
  if (want('replicas')) {
    console.log('\n== 13. Many replicas, one quota: separate processes on one redis-server ==\n');
    const all = replicaRows(args.replicaBefore);
    const picked = args.replicaRows;
    const rows =
      picked === undefined
        ? all
        : picked.includes('smoke')
          ? [
              {
                kind: 'azure' as const,
                load: 0.98,
                replicas: 2,
                state: 'redis' as const,
                leases: true,
              },
            ]
          : all.filter((r) => {
              if (r.stopStore) return picked.includes('stop');
              // A column: `:one` (1 replica), `:redis` (4 + Redis), `:none` (4, no shared state).
              const column = r.replicas === 1 ? 'one' : r.state === 'redis' ? 'redis' : 'none';
              const load = `${r.kind}${Math.round(r.load * 100)}`;
              return [r.kind, load, `${r.kind}:${column}`, `${load}:${column}`].some((p) =>
                picked.includes(p),
              );
            });
    figures.replicas = await replicasBench(rows, args.replicaSeconds, args.replicaWarmup);
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

/**
 * `--state redis`: each instance of the multi-instance scenario gets its own `redisState`. Keys
 * carry this run's id and the scenario's, so no scenario reads another's (or an earlier run's)
 * counters; the sync interval is a second of the scenario's scaled clock, as the store's default
 * of 1 s is of a real quota minute.
 */
async function stateFactory(
  args: BenchArgs,
): Promise<{ name: string; factory: StateFactory } | undefined> {
  if (args.state !== 'redis') return undefined;
  await pingRedis(args.redisUrl);
  const run = randomBytes(4).toString('hex');
  const scaledSecond = (timeScale: number) => Math.max(1, Math.round(1000 / timeScale));
  return {
    name:
      `redis ${redact(args.redisUrl)}, syncInterval ${scaledSecond(args.timeScale)} ms ` +
      `(a scaled second), prefix switchboard-bench:${run}:<scenario>:`,
    factory: ({ id, setup }) =>
      redisState({
        url: args.redisUrl,
        prefix: `switchboard-bench:${run}:${id}:`,
        syncInterval: scaledSecond(setup.timeScale),
        // A busy machine answers slower than a production Redis; the rows compare coordination.
        timeout: 1000,
      }),
  };
}

/** Fail at once when Redis is not there: redisState would carry on alone, and so would the rows. */
async function pingRedis(url: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw new Error(
      `--state redis: cannot reach ${redact(url)} (${error instanceof Error ? error.message : String(error)})`,
    );
  } finally {
    client.disconnect();
  }
}

/** The values of a list flag, each checked against `known`. */
function oneOf<T extends string>(
  flag: string,
  values: readonly string[] | undefined,
  known: readonly T[],
): T[] | undefined {
  for (const v of values ?? []) {
    if (!(known as readonly string[]).includes(v))
      throw new Error(`${flag}: unknown ${v} (known: ${known.join(', ')})`);
  }
  return values as T[] | undefined;
}

const redact = (url: string): string => url.replace(/\/\/[^@]*@/, '//***@');

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
