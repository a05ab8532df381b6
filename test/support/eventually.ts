/** How {@link eventually} polls. */
export interface EventuallyOptions {
  /** Give up after this many ms (default 5 000: generous on a busy machine, still bounded). */
  timeout?: number;
  /** Wait between checks, in ms (default 5). */
  interval?: number;
  /** What is awaited, for the error message. */
  what?: string;
}

/**
 * Resolves once `condition` (sync or async) holds, checking again every `interval` ms; rejects
 * naming `what` after `timeout` ms. The one polling helper of the suite: use it only for what
 * cannot be awaited directly (another process, Redis, a port), and prefer an event or a
 * `waitFor` where one exists. A number as second argument is the timeout.
 *
 * @example
 * ```ts
 * await eventually(() => replica.model('oai0').isCooling(), { what: 'the cooldown to sync' });
 * ```
 */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  options: EventuallyOptions | number = {},
): Promise<void> {
  const {
    timeout = 5_000,
    interval = 5,
    what = 'condition',
  } = typeof options === 'number' ? { timeout: options } : options;
  // The deadline is a timer, not a clock reading: it fires however long each check takes.
  let expired = false;
  const deadline = setTimeout(() => (expired = true), timeout);
  try {
    while (!(await condition())) {
      if (expired) throw new Error(`${what} not met within ${timeout} ms`);
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  } finally {
    clearTimeout(deadline);
  }
}
