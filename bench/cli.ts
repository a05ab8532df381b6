/**
 * Command-line flags of `npm run bench`. The first group mirrors the Python original's
 * `tools/bench.py` (`-r -d -i -e -v -n --live`); the rest select and size this benchmark's own
 * sections.
 */

/** Sections of a full run, in the order they run. */
export const SECTIONS = [
  'report',
  'compare',
  'after-gc',
  'select',
  'retained',
  'strategies',
  'tiers',
  'quota',
  'fidelity',
  'gateway',
  'scheduling',
  'latency',
  'placement',
  'planning',
  'cache',
  'replicas',
] as const;
export type Section = (typeof SECTIONS)[number];

export interface BenchArgs {
  /** `-r`: requests per round of the original's report (and of each comparison round). */
  requests: number;
  /** `-d`: deployments, each a simulated upstream on its own port. */
  deployments: number;
  /** `-i`: most requests in flight at once. */
  inflight: number;
  /** `-e`: with `-v`, print progress and the histogram every N requests. */
  every: number;
  /** `-v`: print the histogram during the run and `stats()` at the end. */
  verbose: boolean;
  /** `-n`: do not reset usage between rounds. */
  noReset: boolean;
  /** `--live`: real deployments from the environment instead of simulated ones. */
  live: boolean;
  /** `--latency`: ms before a simulated deployment answers. */
  latency: number;
  /** `--rounds`: alternating rounds of the switchboard-vs-SDK comparison (each side). */
  rounds: number;
  /** `--bursts`: bursts of `-r` calls in each round of that comparison. */
  bursts: number;
  /** `--only`: the sections to run. */
  sections: Section[];
  /** `--inproc`: run the simulated upstreams in this process instead of a child process. */
  inproc: boolean;
  /** `--duration`: seconds of each strategy scenario. */
  duration: number;
  /** `--loads`: offered loads of the strategy scenarios, as shares of capacity. */
  loads: number[];
  /** `--strategies`: subset of the strategies to compare (default all). */
  strategies: string[] | undefined;
  /** `--window`: `usageWindow` of the switchboards of sections 1, 2 and 4. */
  window: 'fixed' | 'sliding';
  /** `--time-scale`: how much faster than real time the strategy scenarios' quota clock runs. */
  timeScale: number;
  /** `--instances`: switchboards of the multi-instance scenario (0 or 1 skips it). */
  instances: number;
  /** `--queue`: quota-clock seconds the strategy scenarios' switchboards wait for room (0 = fail fast). */
  queue: number;
  /** `--state`: shared state store of the multi-instance scenario (`memory` | `redis`). */
  state: 'memory' | 'redis';
  /** `--redis-url`: where `--state redis` connects. */
  redisUrl: string;
  /** `--json`: write the figures there. */
  json: string | undefined;
  /** `--soak`: run the soak for this many seconds instead of the sections. */
  soak: number | undefined;
  /** `--soak-every`: seconds between soak reports. */
  soakEvery: number;
  /** `--soak-rate`: calls per second of the soak. */
  soakRate: number;
  /** `--gateway-seconds`: seconds of each measured round of the gateway section. */
  gatewaySeconds: number;
  /** `--gateway-rounds`: alternating rounds per gateway of the gateway section. */
  gatewayRounds: number;
  /** `--quota-scenarios`: which scenarios of the quota section (steady, overload, shared). */
  quotaScenarios: string[] | undefined;
  /** `--quota-scale`: time scale of the quota section (a quota minute lasts 60 / N s). */
  quotaScale: number;
  /** `--quota-tpm`: TPM of the quota section's steady rows. */
  quotaTpm: number[] | undefined;
  /** `--quota-max-tokens`: `max_tokens` of the quota section's steady rows. */
  quotaMaxTokens: number[] | undefined;
  /** `--quota-modes`: accountings of the quota section (today, new, queue). */
  quotaModes: string[] | undefined;
  /** `--quota-trace`: print up to N upstream 429s per row with the switchboard's view. */
  quotaTrace: number;
  /** `--fidelity-kinds`: which upstream rules of the fidelity matrix (default all). */
  fidelityKinds: string[] | undefined;
  /** `--fidelity-shapes`: which load shapes of the fidelity matrix (default all). */
  fidelityShapes: string[] | undefined;
  /** `--fidelity-minutes`: measured quota minutes of each row of the fidelity matrix. */
  fidelityMinutes: number;
  /** `--replica-seconds`: seconds of each row of the replicas section. */
  replicaSeconds: number;
  /** `--replica-rows`: which rows of the replicas section (azure,claude,stop; default all). */
  replicaRows: string[] | undefined;
  /** `--replica-before`: the replicas section without leases (admission by the synced view). */
  replicaBefore: boolean;
  /** `--replica-warmup`: seconds a bucket (Claude) row sends uncounted before it is measured. */
  replicaWarmup: number;
  /** `--smoke`: a short run of every section, to catch crashes (no timing is asserted). */
  smoke: boolean;
  /** `--seed`: seed of the load generators (not of the selectors). */
  seed: number;
  /**
   * `--forced-gc`: a full collection before each round of sections 2, 2b and 2c, with nothing in
   * flight (off by default: it deoptimizes the code of both sides, see `roundStart`).
   */
  forcedGc: boolean;
  /** `--cpu-cycles`: recorded cycles of the CPU-per-call comparison (sections 2b, 2c, 2d). */
  cpuCycles: number;
  /**
   * `--against`: another checkout of the library (a directory, or a git revision of this one),
   * run beside this one in sections 2b-2d and 6b.
   */
  against: string | undefined;
}

const USAGE = `Usage: npm run bench -- [flags]

The original's flags (tools/bench.py):
  -r, --requests N      requests per round (default 1000)
  -d, --deployments N   deployments, each a simulated upstream on its own port (default 10)
  -i, --inflight N      max requests in flight (default 1000)
  -e, --every N         with -v, print progress every N requests (default 100)
  -v, --verbose         print the utilization histogram during the run and stats() after it
  -n, --no-reset        do not reset usage between rounds
      --live            real deployments from AZURE_OPENAI_ENDPOINT/AZURE_OPENAI_API_KEY
                        and/or OPENAI_API_KEY (report section only)

This benchmark's own:
      --latency MS      upstream latency of the simulated deployments (default 0)
      --rounds N        rounds per side of the switchboard-vs-SDK comparison (default 15);
                        section 2 runs them twice, as they come and after a full GC each;
                        section 2e (--only after-gc) as many after a full GC each
      --bursts N        bursts of -r calls in each round of sections 2 and 2e (default 3)
      --forced-gc       a forced full collection before each comparison round (sections 2b,
                        2c), with nothing in flight: V8 then drops the shapes of the last
                        round's objects and the code built on them, so every round restarts
                        from unoptimized code (default: rounds follow each other as a server's
                        traffic does)
      --cpu-cycles N    recorded cycles of the CPU-per-call comparison of sections 2b-2d
                        (default 240; 2c runs half as many per surface)
      --against DIR|REV another checkout of this library (e.g. main's, exported with
                        git archive, with a link to this checkout's node_modules), or a git
                        revision of this one (exported so, once, to the temporary directory),
                        run beside this one in sections 2-2d and 6b
      --only LIST       sections to run: ${SECTIONS.join(',')} (default all)
      --inproc          simulated upstreams in this process (default: a child process, so CPU
                        time per request measures the client side only)
      --duration S      seconds per strategy scenario (default 4)
      --loads LIST      offered loads of the strategy scenarios, as shares of capacity or
                        percentages (default 0.8,0.95,1.1; 95% = 0.95)
      --strategies LIST strategies to compare, by key: 2rc,2rc-fixed,random,rr,least,custom
                        (default all)
      --window W        usageWindow of the switchboards (report, compare, strategies):
                        sliding (default, as the library's) or fixed (all usage reset every
                        ratelimitWindow)
      --time-scale N    quota clock of the strategy scenarios, N times real time (default 60:
                        a quota minute lasts 1 s; lower it on a busy machine: calls per second
                        scale with it)
      --instances N     switchboards sharing the deployments (default 4; 0 or 1 skips them)
      --queue S         section 4's switchboards wait up to S seconds of the quota clock for
                        room (queue: { maxWait }) instead of failing fast (default 0: fail fast)
      --state NAME      state store of those instances: memory (default, uncoordinated) |
                        redis (redisState: syncInterval a scaled second, keys per run and
                        scenario; the uncoordinated rows run too, load by load, and a
                        table compares the two)
      --redis-url URL   with --state redis (default redis://127.0.0.1:6379)
      --json FILE       also write the figures as JSON
      --seed N          seed of the load generators (default 1)
      --quota-scenarios LIST
                        scenarios of the quota section: steady,overload,shared (default all)
      --quota-scale N   time scale of the quota section: a quota minute lasts 60/N s (default 20)
      --quota-tpm LIST  TPM of the quota section's steady rows (default 10000,60000)
      --quota-max-tokens LIST
                        max_tokens of the quota section's steady rows (default 256,1024)
      --quota-modes LIST
                        accountings of the quota section: today,new,queue (default all)
      --quota-trace N   print up to N upstream 429s per row, each with the switchboard's view of
                        that deployment when it sent the call
      --fidelity-kinds LIST
                        upstream rules of the fidelity matrix (section 6b):
                        azure-10s,azure-1s,openai,anthropic,azure-ptu (default all)
      --fidelity-shapes LIST
                        load shapes of the fidelity matrix: burst,steady,over (default all)
      --fidelity-minutes N
                        measured quota minutes of each matrix row, after one of warm-up
                        (default 3; virtual time, so a minute costs its calls, not 60 s)
      --replica-seconds N
                        seconds of each row of the replicas section (default 90; real time)
      --replica-rows LIST
                        rows of the replicas section: azure,claude,stop, or one load of
                        a kind, e.g. azure98,claude182, each with :one, :redis or :none for
                        one column (1 replica, 4 + Redis, 4 without shared state; default all)
      --replica-before  the replicas section without leases (admission by the synced view)
      --replica-warmup N
                        seconds a Claude row of the replicas section sends before it is counted,
                        so its buckets start as a steady load leaves them (default 0)
      --smoke           short run of every section; fails only if the bench itself crashes
      --soak S          soak test for S seconds instead of the sections
      --soak-every S    seconds between soak reports (default 10)
      --soak-rate N     soak calls per second (default 150)
      --gateway-seconds S  seconds per round of the gateway section (default 10)
      --gateway-rounds N   alternating rounds per gateway of the gateway section (default 3)
  -h, --help            this text
`;

export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = {
    requests: 1000,
    deployments: 10,
    inflight: 1000,
    every: 100,
    verbose: false,
    noReset: false,
    live: false,
    latency: 0,
    rounds: 15,
    bursts: 3,
    sections: [...SECTIONS],
    inproc: false,
    duration: 4,
    loads: [0.8, 0.95, 1.1],
    instances: 4,
    queue: 0,
    timeScale: 60,
    window: 'sliding',
    strategies: undefined,
    state: 'memory',
    redisUrl: 'redis://127.0.0.1:6379',
    json: undefined,
    soak: undefined,
    soakEvery: 10,
    soakRate: 150,
    gatewaySeconds: 10,
    gatewayRounds: 3,
    smoke: false,
    seed: 1,
    forcedGc: false,
    cpuCycles: 240,
    against: undefined,
    quotaScenarios: undefined,
    quotaScale: 20,
    quotaTpm: undefined,
    quotaMaxTokens: undefined,
    quotaModes: undefined,
    quotaTrace: 0,
    fidelityKinds: undefined,
    fidelityShapes: undefined,
    fidelityMinutes: 3,
    replicaSeconds: 90,
    replicaRows: undefined,
    replicaBefore: false,
    replicaWarmup: 0,
  };
  const given = new Set<string>();
  for (let k = 0; k < argv.length; k++) {
    const flag = argv[k]!;
    const value = (): string => {
      const v = argv[++k];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    const int = (min = 0): number => {
      const v = value();
      const n = Number(v);
      if (!Number.isInteger(n) || n < min)
        throw new Error(`${flag} expects an integer >= ${min}, got ${v}`);
      return n;
    };
    const num = (): number => {
      const v = value();
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} expects a number >= 0, got ${v}`);
      return n;
    };
    switch (flag) {
      case '-r':
      case '--requests':
        args.requests = int(1);
        break;
      case '-d':
      case '--deployments':
        args.deployments = int(1);
        break;
      case '-i':
      case '--inflight':
        args.inflight = int(1);
        break;
      case '-e':
      case '--every':
        args.every = int(1);
        break;
      case '-v':
      case '--verbose':
        args.verbose = true;
        break;
      case '-n':
      case '--no-reset':
        args.noReset = true;
        break;
      case '--live':
        args.live = true;
        break;
      case '--latency':
        args.latency = num();
        break;
      case '--rounds':
        args.rounds = int(1);
        break;
      case '--bursts':
        args.bursts = int(1);
        break;
      case '--only': {
        const list = value().split(',').filter(Boolean);
        for (const s of list) {
          if (!(SECTIONS as readonly string[]).includes(s)) {
            throw new Error(`--only: unknown section ${s} (known: ${SECTIONS.join(', ')})`);
          }
        }
        args.sections = list as Section[];
        break;
      }
      case '--inproc':
        args.inproc = true;
        break;
      case '--forced-gc':
        args.forcedGc = true;
        break;
      case '--cpu-cycles':
        args.cpuCycles = int(2);
        break;
      case '--against':
        args.against = value();
        break;
      case '--duration':
        args.duration = num();
        break;
      case '--loads':
        args.loads = value()
          .split(',')
          .map((s) => {
            // A share of capacity (0.95), or a percentage with its sign (95%).
            const n = s.endsWith('%') ? Number(s.slice(0, -1)) / 100 : Number(s);
            if (!(n > 0)) throw new Error(`--loads: ${s} is not a positive number`);
            if (n > 3) {
              throw new Error(
                `--loads: ${s} is ${n}x capacity; loads are shares (0.95) or percentages (95%)`,
              );
            }
            return n;
          });
        break;
      case '--strategies':
        args.strategies = value().split(',').filter(Boolean);
        break;
      case '--window': {
        const v = value();
        if (v !== 'fixed' && v !== 'sliding')
          throw new Error(`--window: fixed or sliding, got ${v}`);
        args.window = v;
        break;
      }
      case '--time-scale':
        args.timeScale = int(1);
        break;
      case '--instances':
        args.instances = int(0);
        break;
      case '--queue':
        args.queue = int(0);
        break;
      case '--state': {
        const v = value();
        if (v !== 'memory' && v !== 'redis') throw new Error(`--state: memory or redis, got ${v}`);
        args.state = v;
        break;
      }
      case '--redis-url':
        args.redisUrl = value();
        break;
      case '--json':
        args.json = value();
        break;
      case '--seed':
        args.seed = int(0);
        break;
      case '--quota-scale':
        args.quotaScale = int(1);
        break;
      case '--quota-tpm':
        args.quotaTpm = value().split(',').map(Number);
        break;
      case '--quota-max-tokens':
        args.quotaMaxTokens = value().split(',').map(Number);
        break;
      case '--quota-modes':
        args.quotaModes = value().split(',');
        break;
      case '--quota-trace':
        args.quotaTrace = int(0);
        break;
      case '--quota-scenarios':
        args.quotaScenarios = value().split(',');
        break;
      case '--fidelity-kinds':
        args.fidelityKinds = value().split(',').filter(Boolean);
        break;
      case '--fidelity-shapes':
        args.fidelityShapes = value().split(',').filter(Boolean);
        break;
      case '--fidelity-minutes':
        args.fidelityMinutes = int(1);
        break;
      case '--replica-seconds':
        args.replicaSeconds = int(1);
        break;
      case '--replica-rows':
        args.replicaRows = value().split(',').filter(Boolean);
        break;
      case '--replica-before':
        args.replicaBefore = true;
        break;
      case '--replica-warmup':
        args.replicaWarmup = int(0);
        break;
      case '--smoke':
        args.smoke = true;
        break;
      case '--soak':
        args.soak = num();
        break;
      case '--soak-every':
        args.soakEvery = num();
        break;
      case '--soak-rate':
        args.soakRate = num();
        break;
      case '--gateway-seconds':
        args.gatewaySeconds = num();
        break;
      case '--gateway-rounds':
        args.gatewayRounds = num();
        break;
      case '-h':
      case '--help':
        process.stdout.write(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`Unknown flag ${flag}\n\n${USAGE}`);
    }
    given.add(flag);
  }
  if (args.smoke) {
    // Small sizes that still go through every code path of every section.
    if (!given.has('-r') && !given.has('--requests')) args.requests = 100;
    if (!given.has('--rounds')) args.rounds = 1;
    if (!given.has('--duration')) args.duration = 1;
    if (!given.has('--cpu-cycles')) args.cpuCycles = 4;
    if (!given.has('--loads')) args.loads = [0.95];
    if (!given.has('--gateway-seconds')) args.gatewaySeconds = 1;
    if (!given.has('--gateway-rounds')) args.gatewayRounds = 1;
    if (!given.has('--replica-seconds')) args.replicaSeconds = 2;
    if (!given.has('--replica-rows')) args.replicaRows = ['smoke'];
    // One steady row goes through every path of the quota section; the others differ in sizes.
    if (!given.has('--quota-tpm')) args.quotaTpm = [10_000];
    if (!given.has('--quota-max-tokens')) args.quotaMaxTokens = [256];
    // Every kind of upstream, one shape, one measured minute: the matrix's every path, small.
    if (!given.has('--fidelity-shapes')) args.fidelityShapes = ['over'];
    if (!given.has('--fidelity-minutes')) args.fidelityMinutes = 1;
    if (!given.has('--strategies')) args.strategies = ['2rc', '2rc-fixed', 'random', 'custom'];
  }
  return args;
}
