import { z } from 'zod';
import { name, wholeNumber } from '../runtime/option-values';
import { timerMillis } from './value-checks';

/*
 * The pieces the options' schemas share: durations, functions, fallback lists. Each answers
 * every failure with one message that says what to write.
 */

/** True for a function of any shape. */
export const isFunction = (v: unknown): v is (...args: never[]) => unknown =>
  typeof v === 'function';

/**
 * A function option, `what` naming its shape for the message.
 *
 * @example
 * ```ts
 * const retryIf = fn('a function (error) => boolean').optional();
 * ```
 */
export const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>(isFunction, `must be ${what}`);

/**
 * A duration in ms that Node's timers can hold; `least` 1 when 0 makes no sense.
 *
 * @example
 * ```ts
 * const cooldown = millis('a non-negative number of milliseconds');
 * ```
 */
export const millis = (what: string, least: 0 | 1 = 0) =>
  timerMillis(wholeNumber(`must be ${what}`, least));

/**
 * A deadline in ms, above 0.
 *
 * @example
 * ```ts
 * const timeout = positiveMillis.optional();
 * ```
 */
export const positiveMillis = millis('a positive number of milliseconds', 1);

/**
 * Models mapped to the models tried instead (`fallbacks`, `contentFilterFallbacks`).
 *
 * @example
 * ```ts
 * const fallbacks = fallbackMap("must map a model to its fallback models, such as { 'gpt-4o': ['gpt-4o-mini'] }");
 * ```
 */
export const fallbackMap = (error: string) =>
  z.record(
    name,
    z
      .array(name, { error: 'must be a list of model names' })
      .min(1, { error: 'must list at least one fallback model' }),
    { error },
  );
