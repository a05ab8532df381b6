/**
 * A simulated upstream in a worker thread, for the load suite: the switchboard under test keeps
 * the test's thread (and its heap) to itself, and the upstream runs on the other core.
 *
 * Started by {@link startUpstreamWorker}; answers `stats`, `reset` and `close` requests.
 */
import type { Server } from 'node:http';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { SimulatedUpstream } from '../../src/testing';

export interface WorkerStats {
  /** Per simulated deployment. */
  deployments: Record<string, { requests: number; ok: number; failed: number; tokens: number }>;
  /** Recorded requests whose `x-request-echo` header was compared with their last message. */
  echoChecked: number;
  /** Recorded requests where the two differ (first 10). */
  echoMismatches: string[];
}

type Request = { id: number; op: 'stats' | 'reset' | 'drop' | 'close' };

export interface UpstreamWorker {
  /** Base URLs by deployment name. */
  urls: Record<string, { openai: string; anthropic: string }>;
  stats(): Promise<WorkerStats>;
  reset(): Promise<void>;
  /** Closes idle keep-alive connections, so that the client's pool empties. */
  drop(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a worker thread serving simulated deployments `names`. */
export function startUpstreamWorker(names: string[]): Promise<UpstreamWorker> {
  // The worker runs outside Jest's module system: test/support/ts-register.js compiles this very
  // file there.
  const register = join(__dirname, '../support/ts-register.js');
  const worker = new Worker(
    `require(${JSON.stringify(register)}); require(${JSON.stringify(__filename)});`,
    { eval: true, workerData: { names } },
  );
  let next = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const failAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`upstream worker exited (${code})`)));
  const ask = <T>(op: Request['op']): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, op } satisfies Request);
    });
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', (message: any) => {
      if (message.type === 'ready') {
        worker.off('error', reject);
        resolve({
          urls: message.urls,
          stats: () => ask<WorkerStats>('stats'),
          reset: () => ask<void>('reset'),
          drop: () => ask<void>('drop'),
          close: async () => {
            await ask<void>('close');
            await worker.terminate();
          },
        });
        return;
      }
      const p = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) p?.reject(new Error(message.error));
      else p?.resolve(message.result);
    });
  });
}

async function serve(names: string[]): Promise<void> {
  const upstream = await SimulatedUpstream.start({
    deployments: names.map((name) => ({ name })),
    // The suite pauses between bursts (to measure the heap): see SimulatedUpstreamOptions.
    keepAliveTimeout: 60_000,
  });
  const stats = (): WorkerStats => {
    const out: WorkerStats = { deployments: {}, echoChecked: 0, echoMismatches: [] };
    for (const d of upstream.deployments) {
      const s = d.stats;
      out.deployments[d.name] = {
        requests: s.requests,
        ok: s.ok,
        failed: s.failed,
        tokens: s.totalTokens,
      };
      for (const r of d.requests) {
        const messages = (r.body as { messages?: Array<{ content?: unknown }> }).messages;
        const last = messages?.at(-1)?.content;
        out.echoChecked++;
        if (r.headers['x-request-echo'] !== last && out.echoMismatches.length < 10) {
          out.echoMismatches.push(
            `${d.name}: header ${r.headers['x-request-echo']} body ${String(last)}`,
          );
        }
      }
    }
    return out;
  };
  parentPort!.on('message', async ({ id, op }: Request) => {
    try {
      let result: unknown;
      if (op === 'stats') result = stats();
      else if (op === 'reset') upstream.deployments.forEach((d) => d.resetStats());
      // SimulatedUpstream does not expose its server: idle connections only matter to this suite.
      else if (op === 'drop')
        (upstream as unknown as { server: Server }).server.closeIdleConnections();
      else await upstream.close();
      parentPort!.postMessage({ id, result });
    } catch (error) {
      parentPort!.postMessage({ id, error: String(error) });
    }
  });
  const urls = Object.fromEntries(
    upstream.deployments.map((d) => [
      d.name,
      { openai: d.openaiBaseURL, anthropic: d.anthropicBaseURL },
    ]),
  );
  parentPort!.postMessage({ type: 'ready', urls });
}

if (!isMainThread && parentPort && (workerData as { names?: string[] })?.names) {
  void serve((workerData as { names: string[] }).names);
}
