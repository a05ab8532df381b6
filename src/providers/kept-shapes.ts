import { DeadlineList, type DeadlineEntry } from '../runtime/deadlines';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { AttemptCall, AttemptHooks, AttemptOutcome } from './attempt-types';

/** What an attempt kept for its shape is made of: no deployment, no switchboard. */
export const ATTEMPT_STAND_INS: [
  AttemptCall,
  Deployment,
  ModelState,
  AttemptHooks,
  AttemptOutcome,
] = [
  { request: { stream: false } } as unknown as AttemptCall,
  { timeout: 1 } as unknown as Deployment,
  { firstTokenTimeout: 0 } as unknown as ModelState,
  { firstTokenTimeout: 0 } as AttemptHooks,
  { resolve: () => {}, reject: () => {} },
];

/**
 * A deadline list of no switchboard, through one entry's wait: a list lives only while an attempt
 * of its duration waits, so with nothing in flight its shape dies, and with it the optimized code
 * of every attempt's start (which adds the attempt to a list) and answer (which takes it out).
 *
 * @example
 * ```ts
 * keepShape(deadlineListOfStandIns);
 * ```
 */
export function deadlineListOfStandIns(): DeadlineList {
  const list = new DeadlineList(1, new Map());
  const entry: DeadlineEntry = { expire: () => {} };
  list.push(entry);
  list.unlink(entry);
  return list;
}

/** The SDK's promise of the latest answered request (see {@link keepAnswered}). */
const answered: { sent: unknown } = { sent: undefined };

/**
 * Keeps `sent`, the SDK's promise of an answered request that is not a stream, until the next
 * answer replaces it. The SDK makes a request's objects (its promise, its options) per request:
 * with nothing in flight, a full collection takes their shapes, and with them the optimized code
 * of every attempt's send, which inlines the SDK's `create` (and of all that inlines the send:
 * the attempt's start, the dispatch's first step). One answered request keeps those shapes. It
 * holds its answer and its SDK client, nothing of a switchboard, until the next answer.
 *
 * @example
 * ```ts
 * if (!request.stream) keepAnswered(this.sent);
 * ```
 */
export function keepAnswered(sent: unknown): void {
  answered.sent = sent;
}
