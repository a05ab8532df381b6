/**
 * Section 2e: the launch after a full collection. A fresh switchboard per round over the
 * simulated deployments on sockets, a full GC before each round with nothing in flight, beside
 * fresh plain `openai` clients run the same way; each side in a process of its own (one side's
 * collections never throw away the other's code), their rounds alternating.
 *
 * Per round and side: the CPU time (`process.cpuUsage`, user + system) of the synchronous loop
 * launching the first burst's calls after the collection, and the same for another fresh side
 * launched right after the round with no forced collection (what the collection costs); each
 * also of the main thread alone (Linux's `/proc/thread-self/schedstat`), without the collector's
 * sweeping and the compiler's threads running beside the loop. CPU time, not wall time: on a
 * loaded machine a window of a few ms is mostly waiting for a core.
 *
 * Our deopts at the collection read no trace: the child (`--allow-natives-syntax`) asks V8
 * (`%GetOptimizationStatus`) which of the project's functions are optimized just before the
 * collection and which still are just after it; nothing runs in between, so what lost its code
 * lost it to the collection ("weak objects"). The project's functions: those in the heap (the
 * inspector's `queryObjects`) whose script (`%FunctionGetScriptId`) is a file of `src/` exporting a
 * function, taken after rounds 1 and 2 and kept if the same object both times (functions of a
 * module and methods; not one switchboard's closures, whose holding would keep its shapes alive).
 * Round 3 absorbs that census's own collections; none of the three is recorded.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { loadavg } from 'node:os';
import { join, relative, sep } from 'node:path';
import { types } from 'node:util';
import OpenAI from 'openai';
import { createSwitchboard } from '../src';
import { openaiDeployments, startUpstreams, type Endpoint } from './upstreams';
import { fixed, gc, median, quantile, quietLogger, table, TS_REGISTER } from './util';

/** One side's figures in one round. */
export interface AfterGcRound {
  /** CPU ms of the loop launching the first burst after the full collection: process, thread. */
  afterGc: [number, number];
  /** The same for another fresh side launched after the round, with no forced collection. */
  noGc: [number, number];
  /** The project's functions that lost their optimized code at the collection (file:name). */
  deopted: string[];
  /** The project's functions optimized just before it. */
  optimized: number;
  failed: number;
}

/** Sizes of the section: recorded rounds, bursts a round (the first measured), calls a burst. */
export interface AfterGcOptions {
  rounds: number;
  bursts: number;
  requests: number;
  deployments: number;
}

const SIDES = ['switchboard', 'direct'] as const;
type Side = (typeof SIDES)[number];
type Fn = (...args: never[]) => unknown;
type Sender = { send(i: number): Promise<unknown>; close(): Promise<void> };
const WARMUP = 3;
const SRC = join(__dirname, '..', 'src') + sep;
const params = (i: number) => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user' as const, content: `Can you tell me a fact about ${i}?` }],
});

/**
 * Runs the section and prints, per round, launch CPU ms after the GC and without it for both
 * sides and our functions deoptimized at the GC; then median, worst quartile and worst round.
 *
 * @example
 * ```ts
 * await afterGc({ rounds: 24, bursts: 3, requests: 1000, deployments: 10 });
 * ```
 */
export async function afterGc(o: AfterGcOptions): Promise<Record<Side, AfterGcRound[]>> {
  const up = await startUpstreams(
    Array.from({ length: o.deployments }, (_, n) => ({ name: `bench_${n}`, latency: 5 })),
    false,
  );
  const children = SIDES.map((side) =>
    fork(__filename, [side], {
      execArgv: ['--expose-gc', '--allow-natives-syntax', '--require', TS_REGISTER],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const ask = (k: number, msg: 'round' | object) =>
    new Promise<AfterGcRound>((resolve, reject) => {
      const child = children[k]!;
      const exited = (code: number | null) => reject(new Error(`${SIDES[k]} exited ${code}`));
      child.once('exit', exited).once('message', (m) => {
        child.off('exit', exited);
        resolve(m as AfterGcRound);
      });
      child.send(msg);
    });
  const out: Record<Side, AfterGcRound[]> = { switchboard: [], direct: [] };
  const load = [loadavg()[0]!.toFixed(2)];
  try {
    await Promise.all(SIDES.map((_, k) => ask(k, { endpoints: up.endpoints, ...o })));
    for (let r = 0; r < WARMUP + o.rounds; r++) {
      // The side that goes first alternates, so a drift of the machine falls on both alike.
      for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const row = await ask(k, 'round');
        if (r >= WARMUP) out[SIDES[k]!].push(row);
      }
    }
    load.push(loadavg()[0]!.toFixed(2));
  } finally {
    for (const child of children) child.kill();
    await up.close();
  }
  console.log(report(out, o, load));
  return out;
}

function report(out: Record<Side, AfterGcRound[]>, o: AfterGcOptions, load: string[]): string {
  const { switchboard: sb, direct } = out;
  const both = ([p, t]: [number, number]) => `${fixed(p, 1)} (${fixed(t, 1)})`;
  const rows = sb.map((s, k) => [
    String(k + 1),
    ...[s.afterGc, direct[k]!.afterGc, s.noGc, direct[k]!.noGc].map(both),
    `${s.deopted.length} of ${s.optimized}`,
  ]);
  const spread = (label: string, xs: number[]) => [
    label,
    ...[median(xs), quantile(xs, 0.75), Math.max(...xs)].map((x) => fixed(x, 1)),
  ];
  const lost = new Map<string, number>();
  for (const s of sb) for (const f of s.deopted) lost.set(f, (lost.get(f) ?? 0) + 1);
  const failed = [...sb, ...direct].reduce((a, r) => a + r.failed, 0);
  const head = ['round', 'switchboard after GC', 'direct after GC', 'switchboard no GC'];
  return [
    `${o.rounds} rounds (after ${WARMUP}) of ${o.bursts} bursts of ${o.requests} calls over ` +
      `${o.deployments} deployments on sockets, each side in its own process; CPU ms to launch ` +
      `a round's first burst, the process's (the main thread's); load average ${load.join(' → ')}`,
    '',
    table([...head, 'direct no GC', 'our deopts at the GC'], rows),
    '',
    table(
      ['CPU ms to launch a burst', 'median', 'worst quartile', 'worst round'],
      [
        ...(['afterGc', 'noGc'] as const).flatMap((when) =>
          SIDES.flatMap((side) =>
            [0, 1].map((t) =>
              spread(
                `${side}, ${when === 'noGc' ? 'no forced GC' : 'after a full GC'}` +
                  (t ? ', main thread' : ''),
                out[side].map((r) => r[when][t]!),
              ),
            ),
          ),
        ),
        spread(
          'our deopts at the GC (count)',
          sb.map((r) => r.deopted.length),
        ),
      ],
    ),
    lost.size === 0
      ? 'No function of src/ lost its optimized code at a GC.'
      : `Lost at a GC (rounds): ${[...lost].map(([f, n]) => `${f} (${n})`).join(', ')}`,
    ...(failed > 0 ? [`Failed calls: ${failed}`] : []),
  ].join('\n');
}

const natives = new Map<string, (f: Fn) => number>();
/** `%name(f)`: natives parse only in a process started with --allow-natives-syntax (the child). */
function v8(name: 'GetOptimizationStatus' | 'FunctionGetScriptId', f: Fn): number {
  let call = natives.get(name);
  if (!call) {
    call = new Function('f', `return %${name}(f)`) as (f: Fn) => number;
    natives.set(name, call);
  }
  return call(f);
}

/** Bit 4 of V8's optimization status: `f` runs optimized code (not marked for deopt). */
const optimized = (f: Fn): boolean => (v8('GetOptimizationStatus', f) & (1 << 4)) !== 0;

/** V8's queries take plain functions only (a bound one or a proxy aborts the process). */
const plain = (f: unknown): f is Fn =>
  typeof f === 'function' &&
  !types.isProxy(f) &&
  !Function.prototype.toString.call(f).includes('[native code]');

/** Every function alive in the heap whose script is a file of `src/`, by file:name. */
function census(): Map<Fn, string> {
  const files = new Map<number, string>();
  for (const [file, mod] of Object.entries(require.cache)) {
    if (!file.startsWith(SRC) || !mod) continue;
    const exports = mod.exports as object;
    // Data properties only: TypeScript's re-exports are accessors, and their script is another's.
    for (const key of Object.getOwnPropertyNames(exports)) {
      const f: unknown = Object.getOwnPropertyDescriptor(exports, key)!.value;
      if (plain(f)) files.set(v8('FunctionGetScriptId', f), relative(SRC, file));
    }
  }
  const session = new Session();
  session.connect();
  const box = globalThis as { afterGcCensus?: unknown[] };
  session.post('Runtime.evaluate', { expression: 'Function.prototype', objectGroup: 'c' }, (_, r) =>
    session.post('Runtime.queryObjects', { prototypeObjectId: r.result.objectId! }, (__, q) =>
      session.post('Runtime.callFunctionOn', {
        objectId: q.objects.objectId!,
        functionDeclaration: 'function () { globalThis.afterGcCensus = this; }',
      }),
    ),
  );
  session.post('Runtime.releaseObjectGroup', { objectGroup: 'c' });
  session.disconnect();
  const found = new Map<Fn, string>();
  for (const f of box.afterGcCensus ?? []) {
    const file = plain(f) ? files.get(v8('FunctionGetScriptId', f)) : undefined;
    if (file !== undefined) found.set(f as Fn, `${file}:${(f as Fn).name || '(anonymous)'}`);
  }
  delete box.afterGcCensus;
  return found;
}

/** ns this thread ran on a core (Linux: the scheduler's count), or NaN. */
function threadNs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]);
  } catch {
    return NaN;
  }
}

/** CPU ms of the loop launching `n` calls (process, main thread), and how many failed. */
async function burst(side: Sender, n: number): Promise<[[number, number], number]> {
  const calls = new Array<Promise<unknown>>(n);
  const [c0, t0] = [process.cpuUsage(), threadNs()];
  for (let i = 0; i < n; i++) calls[i] = side.send(i);
  const [c, t] = [process.cpuUsage(c0), threadNs()];
  const settled = await Promise.allSettled(calls);
  const failed = settled.filter((s) => s.status === 'rejected').length;
  return [[(c.user + c.system) / 1000, (t - t0) / 1e6], failed];
}

/** A child: one side, a fresh switchboard (or fresh clients) per round and another after it. */
function child(side: Side): void {
  let open: () => Sender;
  let o: AfterGcOptions;
  let counted: Array<[Fn, string]> = [];
  let first: Map<Fn, string> | undefined;
  let rounds = 0;
  const round = async (): Promise<AfterGcRound> => {
    let sender = open();
    const mine = counted.filter(([f]) => optimized(f));
    gc();
    const deopted = mine.filter(([f]) => !optimized(f)).map(([, name]) => name);
    const [afterGc, failed] = await burst(sender, o.requests);
    let lost = failed;
    for (let b = 1; b < o.bursts; b++) lost += (await burst(sender, o.requests))[1];
    await sender.close();
    sender = open();
    const [noGc, failedAgain] = await burst(sender, o.requests);
    await sender.close();
    rounds++;
    if (side === 'switchboard' && rounds === 1) first = census();
    if (side === 'switchboard' && rounds === 2) {
      const again = census();
      counted = [...first!].filter(([f]) => again.has(f));
      first = undefined;
    }
    return { afterGc, noGc, deopted, optimized: mine.length, failed: lost + failedAgain };
  };
  process.on('message', (m: 'round' | (AfterGcOptions & { endpoints: Endpoint[] })) => {
    if (m === 'round') {
      // A failed round ends the child: the parent's question then fails with its exit.
      round().then(
        (row) => process.send!(row),
        (error: unknown) => console.error(error) ?? process.exit(1),
      );
      return;
    }
    o = m;
    open = opener(side, m.endpoints);
    process.send!({});
  });
}

/** A fresh switchboard, or fresh plain clients round-robin, over the deployments. */
function opener(side: Side, endpoints: readonly Endpoint[]): () => Sender {
  const model = { name: params(0).model, tpm: 10_000_000, rpm: 60_000 };
  if (side === 'switchboard') {
    return () => {
      const sb = createSwitchboard({
        deployments: openaiDeployments(endpoints, model, 1),
        logger: quietLogger(),
      });
      return { send: (i) => sb.chat.completions.create(params(i)), close: () => sb.close() };
    };
  }
  return () => {
    const clients = endpoints.map(
      (e) => new OpenAI({ baseURL: e.openaiBaseURL, apiKey: 'bench', maxRetries: 0 }),
    );
    const close = () => Promise.resolve();
    return { send: (i) => clients[i % clients.length]!.chat.completions.create(params(i)), close };
  };
}

if (require.main === module) child(process.argv[2] as Side);
