/**
 * One round of the original's benchmark: `requests` calls, at most `inflight` at once, each timed
 * from the moment it may start (after the in-flight semaphore) to its answer.
 */

export interface RoundResult {
  requests: number;
  failed: number;
  /** The original's "distribution overhead": start of the last call minus start of the first. */
  distributionMs: number;
  /** Mean of each call's own latency. */
  avgResponseMs: number;
  /** First start to last answer. */
  totalMs: number;
  /** Client CPU time (user + system) over the round, µs. */
  cpuUs: number;
}

/** Runs `send(0..requests-1)` with at most `inflight` in flight; `done(i)` after each answer. */
export async function runRound(
  send: (i: number) => Promise<unknown>,
  requests: number,
  inflight: number,
  done?: (i: number) => void,
): Promise<RoundResult> {
  const starts = new Float64Array(requests);
  const ends = new Float64Array(requests);
  let active = 0;
  let failed = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    active--;
    const next = waiting.shift();
    if (next) {
      active++;
      next();
    }
  };
  const one = async (i: number): Promise<void> => {
    if (active >= inflight) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    starts[i] = performance.now();
    try {
      await send(i);
    } catch {
      failed++;
    }
    ends[i] = performance.now();
    release();
    done?.(i);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const all: Array<Promise<void>> = new Array(requests);
  for (let i = 0; i < requests; i++) all[i] = one(i);
  await Promise.all(all);
  const totalMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  let sum = 0;
  for (let i = 0; i < requests; i++) sum += ends[i]! - starts[i]!;
  return {
    requests,
    failed,
    distributionMs: starts[requests - 1]! - starts[0]!,
    avgResponseMs: sum / requests,
    totalMs,
    cpuUs: cpu.user + cpu.system,
  };
}

/** The original's closing lines. */
export function originalLines(r: RoundResult): string {
  return [
    `Distribution overhead: ${r.distributionMs.toFixed(2)}ms`,
    `Average response latency: ${r.avgResponseMs.toFixed(2)}ms`,
    `Total latency: ${r.totalMs.toFixed(2)}ms`,
    `Requests per second: ${((r.requests / r.distributionMs) * 1000).toFixed(2)}`,
    `Overhead per request: ${(r.distributionMs / r.requests).toFixed(2)}ms (${((r.distributionMs / r.requests) * 1000).toFixed(2)} µs)`,
  ].join('\n');
}
