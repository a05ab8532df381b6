/**
 * Section 3: the cost of one `selectDeployment` as the pool grows, with and without a session id,
 * and of a call's routing (room for its admission charge). Pure CPU: the deployments point
 * nowhere and are never called.
 */
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../src';
import { RoomGate } from '../src/selection/pick';
import { fixed, gc, median, quietLogger, seeded, table } from './util';

const MODEL = 'gpt-4o-mini';

export interface SelectionFigures {
  deployments: number;
  /** ns per call, median of the batches. */
  plainNs: number;
  /** ns per routing of a call with an admission charge (its room read at one clock reading). */
  callNs: number;
  /** ns per call with a session id the switchboard already knows (an LRU hit). */
  knownSessionNs: number;
  /** ns per call with a session id it has never seen (select, then remember). */
  newSessionNs: number;
  /** ns per call with a quarter of the deployments over quota (samples may come up unhealthy). */
  quarterFullNs: number;
}

function build(n: number): Switchboard {
  const deployments: DeploymentConfig[] = Array.from({ length: n }, (_, i) => ({
    provider: 'openai',
    name: `d${i}`,
    baseURL: 'http://127.0.0.1:2/v1/',
    apiKey: 'x',
    models: [{ name: MODEL, tpm: 30_000, rpm: 300 }],
  }));
  return createSwitchboard({ deployments, logger: quietLogger(), ratelimitWindow: 0 });
}

/** Median ns per call of `fn` over `batches` batches of `per` calls, after a warm-up batch. */
function time(fn: (k: number) => unknown, per: number, batches: number): number {
  let sink = 0;
  for (let k = 0; k < per; k++) sink ^= fn(k) === undefined ? 1 : 0;
  const out: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < per; k++) sink ^= fn(k) === undefined ? 1 : 0;
    out.push(Number(process.hrtime.bigint() - t0) / per);
  }
  if (sink === 42) console.log(''); // keep the calls observable
  return median(out);
}

export function selectionScaling(
  sizes: readonly number[],
  options: { per: number; batches: number },
): SelectionFigures[] {
  const rows: SelectionFigures[] = [];
  const sessions = Array.from({ length: 512 }, (_, i) => `session-${i}`);
  const fresh = Array.from({ length: options.per }, (_, i) => `new-${i}`);
  const pools = sizes.map((n) => {
    const sb = build(n);
    // Utilization spread as in real traffic, so that the choice between two draws matters.
    const rng = seeded(n);
    for (const d of sb.deployments.values()) {
      d.models.get(MODEL)!.spend(Math.floor(rng() * 20_000), Math.floor(rng() * 150));
    }
    return sb;
  });
  // One query for every plain select: a literal made per call is the caller's cost, and V8 may
  // start allocating such literals in the old generation (pretenuring) partway through a run,
  // which then slowed every size alike by ~70 ns in some runs and not in others.
  const query = { model: MODEL };
  // A call's routing: room for 900 prompt tokens and 256 reserved, asked at one clock reading.
  const gate = new RoomGate({ input: 900, output: 256 }, undefined, Date.now);
  gc();
  // The plain select and a call's routing, the figures compared across sizes: one batch per size
  // in turn, the order rotating, so that a slow spell of the machine falls on every size alike.
  const plain: number[][] = sizes.map(() => []);
  const routed: number[][] = sizes.map(() => []);
  for (let b = 0; b < options.batches; b++) {
    for (let k = 0; k < sizes.length; k++) {
      const i = (b + k) % sizes.length;
      const sb = pools[i]!;
      plain[i]!.push(time(() => sb.selectDeployment(query), options.per, 1));
      routed[i]!.push(time(() => sb.picker.withRoom(MODEL, undefined, gate), options.per, 1));
    }
  }
  for (const [index, n] of sizes.entries()) {
    const sb = pools[index]!;
    const plainNs = median(plain[index]!);
    const callNs = median(routed[index]!);
    for (const s of sessions) sb.selectDeployment({ model: MODEL, sessionId: s });
    const knownSessionNs = time(
      (k) => sb.selectDeployment({ model: MODEL, sessionId: sessions[k & 511]! }),
      options.per,
      options.batches,
    );
    let round = 0;
    const newSessionNs = time(
      (k) =>
        sb.selectDeployment({
          model: MODEL,
          sessionId: fresh[k]! + (k === 0 ? `-${round++}` : ''),
        }),
      options.per,
      options.batches,
    );
    // A quarter of the pool over quota: sampling sometimes draws an unhealthy one.
    let i = 0;
    for (const d of sb.deployments.values()) if (i++ % 4 === 0) d.models.get(MODEL)!.spend(0, 300);
    const quarterFullNs = time(() => sb.selectDeployment(query), options.per, options.batches);
    rows.push({ deployments: n, plainNs, callNs, knownSessionNs, newSessionNs, quarterFullNs });
  }
  for (const sb of pools) void sb.close();
  const base = rows.find((r) => r.deployments === 10) ?? rows[0]!;
  console.log(
    table(
      [
        'deployments',
        'select (ns)',
        'x vs 10',
        "a call's routing (ns)",
        'x vs 10',
        'known session (ns)',
        'new session (ns)',
        '1/4 full (ns)',
      ],
      rows.map((r) => [
        String(r.deployments),
        fixed(r.plainNs, 0),
        fixed(r.plainNs / base.plainNs, 2),
        fixed(r.callNs, 0),
        fixed(r.callNs / base.callNs, 2),
        fixed(r.knownSessionNs, 0),
        fixed(r.newSessionNs, 0),
        fixed(r.quarterFullNs, 0),
      ]),
    ),
  );
  console.log('(median of batches; the Python original: 12 µs at 10 deployments, 826 µs at 1000)');
  return rows;
}
