/**
 * The HTTP side of a simulated deployment's answers: one request/response pair with its
 * once-only outcome, body reading, delays and authentication.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { notifyWaiters, type SimulatedDeployment } from './simulated-deployment';
import type { CompletionPlan } from './wire/common';
import { anthropicErrorBody, openaiErrorBody } from './wire/errors';

/** Largest request body a deployment reads. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** The error shape an exchange answers in. */
export type Provider = 'openai' | 'anthropic';
type Outcome = 'ok' | 'rateLimited' | 'failed' | 'aborted';

/** Resolves true after `ms`, or false as soon as `signal` aborts. The timer is unref'd. */
export function delay(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (!(ms > 0)) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export function headerRecord(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function isAuthorized(headers: Record<string, string>, key: string): boolean {
  const bearer = /^bearer\s+(.+)$/i.exec(headers['authorization'] ?? '');
  return headers['api-key'] === key || headers['x-api-key'] === key || bearer?.[1] === key;
}

export async function readBody(
  req: IncomingMessage,
): Promise<{ text: string; tooLarge: boolean } | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    }
  } catch {
    return undefined;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), tooLarge: size > MAX_BODY_BYTES };
}

/** One request/response pair in flight, with its once-only outcome. */
export class Exchange {
  readonly controller = new AbortController();
  /** Runs once when the exchange ends after its request was admitted (quota reconciliation). */
  onSettle: (() => void) | undefined;
  private settled = false;

  constructor(
    readonly deployment: SimulatedDeployment | undefined,
    readonly provider: Provider,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly active: Set<Exchange>,
  ) {
    active.add(this);
    if (deployment) {
      deployment.stats.requests++;
      deployment.stats.inFlight++;
    }
    res.on('close', () => this.abort());
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get done(): boolean {
    return this.settled || this.res.destroyed;
  }

  /** The connection went away (client abort, or upstream closing) before the answer ended. */
  abort(): void {
    if (!this.settled) this.settle('aborted');
    this.controller.abort();
  }

  settle(outcome: Outcome, plan?: CompletionPlan): void {
    if (this.settled) return;
    this.settled = true;
    this.active.delete(this);
    this.onSettle?.();
    const deployment = this.deployment;
    if (!deployment) return;
    const stats = deployment.stats;
    stats.inFlight = Math.max(0, stats.inFlight - 1);
    if (outcome === 'ok') {
      stats.ok++;
      if (plan) {
        stats.promptTokens += plan.promptTokens;
        stats.completionTokens += plan.completionTokens;
        stats.totalTokens += plan.promptTokens + plan.completionTokens;
      }
    } else if (outcome === 'rateLimited') {
      stats.rateLimited++;
    } else {
      stats.failed++;
      if (outcome === 'aborted') stats.aborted++;
    }
    notifyWaiters(deployment);
  }

  countStatus(status: number): void {
    if (!this.deployment) return;
    const byStatus = this.deployment.stats.byStatus;
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    // A stream's status is sent long before it ends: waiters may be waiting for it.
    notifyWaiters(this.deployment);
  }

  /** Sends a complete JSON answer; errors settle as `failed` (429: `rateLimited`). */
  sendJson(
    status: number,
    body: unknown,
    headers: Record<string, string | number> = {},
    plan?: CompletionPlan,
  ): void {
    if (this.done) return;
    const payload = JSON.stringify(body);
    this.res.writeHead(status, {
      ...headers,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
    });
    this.res.end(payload);
    this.countStatus(status);
    this.settle(status < 400 ? 'ok' : status === 429 ? 'rateLimited' : 'failed', plan);
  }

  sendError(
    status: number,
    message: string,
    options: {
      headers?: Record<string, string | number>;
      type?: string;
      code?: string | null;
      param?: string | null;
      /** Azure's own error code (`DeploymentNotFound`): `error.code` on both routes. */
      azureCode?: string;
    } = {},
  ): void {
    const requestId = this.res.getHeader('request-id');
    const body =
      this.provider === 'anthropic'
        ? anthropicErrorBody(status, message, typeof requestId === 'string' ? requestId : undefined)
        : openaiErrorBody(status, message, options);
    if (options.azureCode !== undefined) {
      (body.error as Record<string, unknown>).code = options.azureCode;
    }
    this.sendJson(status, body, options.headers);
  }

  /** Writes one chunk and waits until it is handed to the socket; false if the exchange ended. */
  write(chunk: string | Buffer): Promise<boolean> {
    if (this.done || this.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => resolve(false);
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.res.write(chunk, (error) => {
        this.signal.removeEventListener('abort', onAbort);
        resolve(!error);
      });
    });
  }

  /** Ends the exchange as failed and destroys the connection (a reset if `reset`). */
  destroyConnection(reset: boolean): void {
    this.settle('failed');
    const socket = this.req.socket;
    if (reset && typeof socket.resetAndDestroy === 'function' && !socket.destroyed) {
      try {
        socket.resetAndDestroy();
        return;
      } catch {
        // fall back to a plain destroy
      }
    }
    socket.destroy();
  }
}
