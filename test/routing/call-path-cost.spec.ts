import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import OpenAI from 'openai';
import { ask, rig, type Rig } from '../support/upstream';

/**
 * What one call costs beyond the same call on a plain SDK client, in counts that no machine load
 * moves: promises and timers made per call (`async_hooks`), over real HTTP to simulated
 * deployments. A regression here is a closure, promise chain or timer added to every call.
 */
describe('the call path', () => {
  let r: Rig;
  let direct: OpenAI;
  beforeAll(async () => {
    // Many uncapped calls: charged no reservation, they all fit the minute.
    r = await rig({ openai: 1, quota: { tpm: 300_000, rpm: 3_000, outputReservation: 0 } });
    direct = new OpenAI({
      baseURL: r.upstream.deployment('oai0').openaiBaseURL,
      apiKey: 'sk-direct',
      maxRetries: 0,
    });
  });
  afterAll(() => r.close());

  /**
   * Whether the code that called `setTimeout` is the switchboard's: undici's own timers come and go
   * with the state of its connections, whoever calls.
   */
  function setBySwitchboard(): boolean {
    const caller = callerFiles().find(
      (f) => !f.startsWith('node:') && !f.includes('call-path-cost'),
    );
    return caller !== undefined && /[/\\]src[/\\]/.test(caller) && !caller.includes('node_modules');
  }

  /**
   * The files of the calling frames, read off V8's call sites: a formatted stack would go through
   * Jest's source maps for every frame of every timer, most of this spec's time.
   */
  function callerFiles(): string[] {
    const format = Error.prepareStackTrace;
    Error.prepareStackTrace = (_error, sites) => sites.map((site) => site.getFileName() ?? '');
    try {
      const holder: { stack?: string[] } = {};
      Error.captureStackTrace(holder, callerFiles);
      return holder.stack ?? [];
    } finally {
      Error.prepareStackTrace = format;
    }
  }

  /**
   * The wave whose calls are under way, as their async context: a timer counts only when it is set
   * on their behalf. Jest runs many spec files in one worker, and a timer that another file's
   * switchboard re-arms whenever it fires is set by the switchboard's code too, during any wave.
   */
  const wave = new AsyncLocalStorage<object>();

  /** Promises per call, and timers the switchboard sets per call, over `n` calls at once. */
  async function perCall(
    call: (i: number) => Promise<unknown>,
    n = 100,
  ): Promise<{ promises: number; timers: number }> {
    let promises = 0;
    let timers = 0;
    const calls = {};
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') promises++;
        else if (type === 'Timeout' && wave.getStore() === calls && setBySwitchboard()) timers++;
      },
    });
    hook.enable();
    try {
      await wave.run(calls, () => Promise.all(Array.from({ length: n }, (_, i) => call(i))));
    } finally {
      hook.disable();
      // Enabled, an AsyncLocalStorage stays so for the whole worker, whose later spec files
      // would each pay for it on every promise they make.
      wave.disable();
    }
    return { promises: promises / n, timers: timers / n };
  }

  /**
   * The fewest per call over alternating waves, once both sides have filled the connection pool
   * they share: the simulated deployments run in this process, so a wave that opens connections
   * counts the server's side of them too.
   */
  async function fewest(
    sides: Record<'sb' | 'sdk', (i: number) => Promise<unknown>>,
  ): Promise<Record<'sb' | 'sdk', { promises: number; timers: number }>> {
    const best = {
      sb: { promises: Infinity, timers: Infinity },
      sdk: { promises: Infinity, timers: Infinity },
    };
    for (let wave = 0; wave < 5; wave++) {
      for (const side of ['sdk', 'sb'] as const) {
        const counts = await perCall(sides[side]);
        if (wave < 2) continue;
        best[side].promises = Math.min(best[side].promises, counts.promises);
        best[side].timers = Math.min(best[side].timers, counts.timers);
      }
    }
    return best;
  }

  it('makes at most 4 promises more than a direct SDK call, and no timer per attempt', async () => {
    const { sb: viaSb, sdk: viaSdk } = await fewest({
      sdk: (i) => direct.chat.completions.create(ask(`fact ${i}`)),
      sb: (i) => r.sb.chat.completions.create(ask(`fact ${i}`)),
    });
    // The call's own promise (an APIPromise), its dispatch's, the wait for the response's head,
    // and the caller's `then`: nothing else, whatever the SDK makes.
    expect(viaSb.promises - viaSdk.promises).toBeLessThanOrEqual(4);
    // Every attempt waits for its deadline on one shared timer per duration, not one of its own:
    // one timer for a wave, and a new one only when the list empties mid-wave (on a loaded
    // machine the first answers can come before the last calls are sent). A timer per attempt
    // reads 1.
    expect(viaSb.timers).toBeLessThanOrEqual(0.05);
    expect(viaSdk.timers).toBe(0);
  });
});
