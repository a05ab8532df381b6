/**
 * A noise-free model of section 4 for design work: virtual time, the real ModelState and
 * selectors (through a real Switchboard with an injected clock), and a quota model that admits
 * exactly as the simulated deployments do (fixed windows that open on the first request after
 * the previous one expired; TPM per minute, RPM as rpm/6 per 10 s; admission after the latency).
 * No HTTP, no event-loop lag: differences between runs come from the design alone.
 *
 * A sixth argument stands for `redisState` without Redis: every scaled second (its sync interval) each
 * instance's published buckets and the others' sliding sum go through the store's own protocol
 * functions, and a mark-down reaches the others at their next sync.
 *
 * Run: node -r ts-node/register/transpile-only bench/lab.ts [load] [instances] [seconds] [fixed|sliding] [both|usage|cooldowns]
 */
import { createSwitchboard, type Switchboard } from '../src';
import { publishBuckets, sumOthers, type PublishedUsage } from '../src/state/redis/redis-protocol';
import { STRATEGIES } from './selectors';
import {
  DEFAULT_SETUP,
  capacity,
  promptSizes,
  type QuotaSetup,
  type WindowMode,
} from './strategies';
import { mean, pct, quietLogger, table } from './util';

const MODEL = 'gpt-4o-mini';

class Window {
  start = -Infinity;
  used = 0;
  constructor(readonly length: number) {}
  roll(now: number) {
    if (now >= this.start + this.length) {
      this.start = now;
      this.used = 0;
    }
  }
}

interface Event {
  t: number;
  seq: number;
  run: () => void;
}

class Queue {
  private heap: Event[] = [];
  private seq = 0;
  push(t: number, run: () => void) {
    const h = this.heap;
    h.push({ t, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p]!, h[i]!)) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }
  pop(): Event | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l]!, h[m]!)) m = l;
        if (r < h.length && less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return top;
  }
}
const less = (a: Event, b: Event) => a.t < b.t || (a.t === b.t && a.seq < b.seq);

export interface LabResult {
  strategy: string;
  calls: number;
  failed: number;
  r429: number;
  r429r: number;
  goodputShare: number;
}

export function lab(
  strategy: string,
  load: number,
  instances: number,
  seconds: number,
  setup: QuotaSetup = DEFAULT_SETUP,
  window: WindowMode = 'sliding',
  shared: ShareWhat | undefined = undefined,
): LabResult {
  let now = 0;
  const clock = () => now;
  const q = new Queue();
  const minute = 60_000 / setup.timeScale;
  const names = Array.from({ length: setup.deployments }, (_, i) => `q${i}`);
  const tokenWindows = names.map(() => new Window(minute));
  const requestWindows = names.map(() => new Window(minute / 6));
  const rpmLimit = Math.max(1, Math.floor(setup.rpm / 6));
  const sbs = Array.from({ length: instances }, () => {
    const sb = createSwitchboard({
      deployments: names.map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: 'http://127.0.0.1:2/v1/',
        apiKey: 'x',
        models: [
          {
            name: MODEL,
            tpm: setup.tpm,
            rpm: setup.rpm,
            cooldown: Math.round(10_000 / setup.timeScale),
          },
        ],
      })),
      selector: STRATEGIES[strategy]!.make(),
      // Sliding: the switchboard's own, on the virtual clock. Fixed: its reset timer would run on
      // real time, so there is none (ratelimitWindow 0) and the queue below resets usage instead.
      ...(window === 'sliding'
        ? { ratelimitWindow: minute, usageWindow: 'sliding' as const }
        : { ratelimitWindow: 0 }),
      clock,
      logger: quietLogger(),
    });
    return sb;
  });
  if (shared) {
    shareState(sbs, q, () => now, minute, Math.max(1, Math.round(1000 / setup.timeScale)), shared);
  }
  // Fixed window: each instance's reset every quota minute of virtual time, phases spread.
  const resetPhase = (k: number) => (k * minute) / instances + 0.37 * minute;
  if (window === 'fixed') {
    sbs.forEach((sb, k) => {
      const tick = (t: number) =>
        q.push(t, () => {
          sb.resetUsage();
          tick(t + minute);
        });
      tick(resetPhase(k));
    });
  }
  const sizes = promptSizes(20_000, 1);
  const meanTokens = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4)))) + setup.completionTokens;
  const rate = load * capacity(setup, meanTokens).perSecond;
  let calls = 0;
  let failed = 0;
  let r429 = 0;
  let r429r = 0;
  let tokens = 0;
  const end = seconds * 1000;

  const attempt = (sb: Switchboard, prompt: number, tried: Set<string>, n: number) => {
    const d = sb.picker.select(
      MODEL,
      undefined,
      tried.size ? new Set([...tried].map((x) => sb.deployments.get(x)!)) : undefined,
    );
    const state = d.models.get(MODEL)!;
    state.spend(prompt, 1);
    const k = names.indexOf(d.name);
    q.push(now + setup.latency, () => {
      const tw = tokenWindows[k]!;
      const rw = requestWindows[k]!;
      tw.roll(now);
      rw.roll(now);
      const charge = prompt + setup.completionTokens;
      const overT = tw.used + charge > setup.tpm;
      const overR = rw.used + 1 > rpmLimit;
      if (overT || overR) {
        r429++;
        if (overR) r429r++;
        const retry = Math.max(
          overR ? rw.start + rw.length - now : 0,
          overT ? tw.start + tw.length - now : 0,
        );
        state.spend(-prompt);
        state.markDown(Math.max(1, Math.ceil(retry)), 'rate_limit');
        if (n < 2) {
          tried.add(d.name);
          attempt(sb, prompt, tried, n + 1);
        } else failed++;
        return;
      }
      tw.used += charge;
      rw.used += 1;
      if (now <= end) tokens += charge;
      state.spend(charge - prompt);
      state.recordSuccess();
    });
  };

  const interval = 1000 / rate;
  for (let i = 0; i * interval < end; i++) {
    q.push(i * interval, () => {
      calls++;
      const prompt = Math.max(1, Math.ceil(sizes[i % sizes.length]! / 4));
      attempt(sbs[i % instances]!, prompt, new Set(), 1);
    });
  }
  for (let e = q.pop(); e && e.t <= end + 2000; e = q.pop()) {
    now = e.t;
    e.run();
  }
  for (const sb of sbs) void sb.close();
  return {
    strategy: STRATEGIES[strategy]!.label,
    calls,
    failed,
    r429,
    r429r,
    goodputShare: tokens / (seconds * ((setup.deployments * setup.tpm * setup.timeScale) / 60)),
  };
}

/** Share both (as `redisState` does), or one of the two alone. */
export type ShareWhat = 'both' | 'usage' | 'cooldowns';

/** What `redisState` shares, on the virtual clock: usage per bucket and cooldowns, every `syncMs`. */
function shareState(
  sbs: Switchboard[],
  q: Queue,
  clock: () => number,
  minute: number,
  syncMs: number,
  what: ShareWhat,
): void {
  const published: PublishedUsage[] = sbs.map(() => ({ at: 0, bucketMs: 0, models: {} }));
  const pending: Array<Map<string, number>> = sbs.map(() => new Map());
  sbs.forEach((sb, k) => {
    sb.registry.onModelEvent((state, event) => {
      if (event.type !== 'down') return;
      // Published at once; the others apply it at their next sync.
      pending.forEach((p, j) => {
        if (j !== k) p.set(state.deployment, Math.max(p.get(state.deployment) ?? 0, event.until));
      });
    });
  });
  const sync = (k: number, t: number) =>
    q.push(t, () => {
      const sb = sbs[k]!;
      const now = clock();
      const models: Record<string, number[]> = {};
      let bucketMs = 0;
      for (const d of sb.deployments.values()) {
        const quota = d.models.get(MODEL)!.quota;
        bucketMs = quota.bucketMs * 2;
        models[d.name] = publishBuckets(quota.ownBuckets(), quota.bucketMs, 2);
      }
      published[k] = { at: now, bucketMs, models };
      const sums = sumOthers(
        published.filter((_, j) => j !== k),
        now,
        minute,
      );
      for (const d of sb.deployments.values()) {
        const state = d.models.get(MODEL)!;
        if (what !== 'cooldowns')
          state.quota.shared = sums.get(d.name) ?? { tokens: 0, requests: 0 };
        const until = pending[k]!.get(d.name);
        if (what !== 'usage' && until !== undefined && until > state.cooldownUntil)
          state.applyCooldown(until);
      }
      pending[k]!.clear();
      sync(k, t + syncMs);
    });
  // Instances sync at different phases, as replicas started at different times do.
  sbs.forEach((_, k) => sync(k, (k * syncMs) / sbs.length));
}

if (require.main === module) {
  const load = Number(process.argv[2] ?? 0.95);
  const instances = Number(process.argv[3] ?? 1);
  const seconds = Number(process.argv[4] ?? 20);
  const window = process.argv[5] ?? 'sliding';
  if (window !== 'sliding' && window !== 'fixed') throw new Error(`window: fixed or sliding`);
  const share = process.argv[6];
  if (share !== undefined && !['both', 'usage', 'cooldowns'].includes(share)) {
    throw new Error('share: both, usage or cooldowns');
  }
  const shared = share as ShareWhat | undefined;
  const rows = Object.keys(STRATEGIES).map((s) =>
    lab(s, load, instances, seconds, DEFAULT_SETUP, STRATEGIES[s]!.window ?? window, shared),
  );
  console.log(
    `lab: load ${pct(load, 0)}, ${instances} instance(s)${shared ? ` sharing ${shared}` : ''}, ${seconds} s, ${window} window`,
  );
  console.log(
    table(
      ['strategy', 'calls', '429 / call', 'of which rpm', 'failed', 'goodput'],
      rows.map((r) => [
        r.strategy,
        String(r.calls),
        pct(r.r429 / r.calls, 2),
        pct(r.r429r / r.calls, 2),
        pct(r.failed / r.calls, 2),
        pct(r.goodputShare, 1),
      ]),
    ),
  );
}
