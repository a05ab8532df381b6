import { ModelState } from '../../src/registry/model-state';
import { DeploymentQuota, type QuotaSettings } from '../../src/testing/quota';
import { FakeClock } from '../support/random';

/** A quota minute of 3 s, as the simulated deployments run it at time scale 20. */
const TIME_SCALE = 20;
const MINUTE = 60_000 / TIME_SCALE;
const TPM = 10_000;
/** Each call of the burst: 200 tokens, one every 20 ms (10 000 a second, 3 quota minutes' worth a quota minute). */
const CALL = 200;
const EVERY = 20;
/** ms from sending a call to its arrival upstream, and from there to its answer. */
const ARRIVE = 5;
const ANSWER = 15;
const STEP = 5;

/** Azure's reset headers in whole seconds, rounded up (the simulated deployments give ms). */
function coarse(headers: Record<string, string | number>): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(headers)) {
    out.set(k, k.startsWith('x-ratelimit-reset-') ? String(Math.ceil(Number(v))) : String(v));
  }
  return out;
}

interface Flight {
  /** The call's own admission: its answer is matched to what was sent before it. */
  admission: { input: number; output: number };
  sentAt: number;
  arrive: number;
  answer: number;
  headers?: Headers;
  ok?: boolean;
}

interface Outcome {
  sent: number;
  /** Calls the upstream refused (429). */
  rejected: number;
  /** Longest run (ms) in which a call waited while the upstream, by its own count, had room for it. */
  needlessWait: number;
}

/**
 * One deployment (TPM 10 000 in a fixed quota minute of 3 s that its first charge opens) and one
 * model state counting over a sliding minute of 3 s, on one injected clock. Another application
 * opens the upstream's window with 1 000 tokens at t0 + 50 ms (unseen by the switchboard); a
 * burst of calls, each waiting for room, starts `offset` ms before that window rolls and lasts
 * 2.5 windows. Answers carry whole-second reset headers.
 */
function burst(offset: number): Outcome {
  const clock = new FakeClock(1_700_000_000_000);
  const settings: QuotaSettings = {
    quota: 'faithful',
    rpm: 0,
    tpm: TPM,
    itpm: 0,
    otpm: 0,
    inferredMaxTokens: 0,
    chargeMaxTokens: true,
  };
  const upstream = new DeploymentQuota(() => settings, TIME_SCALE, 10_000);
  const demand = { requests: 1, tokens: CALL, inputTokens: CALL, outputTokens: 0 };
  const state = new ModelState({ name: 'm', tpm: TPM }, 'z', clock.now, { upstream: 'azure' });
  state.quota.slide(MINUTE);
  const call = { input: CALL, output: 0 };
  const flights: Flight[] = [];
  const waiting: number[] = [];
  const outcome: Outcome = { sent: 0, rejected: 0, needlessWait: 0 };
  const t0 = clock.ms;
  const opened = t0 + 50;
  const start = opened + MINUTE - offset;
  const end = start + 2.5 * MINUTE;
  let next = start;
  let run = 0;
  while (clock.ms < end + MINUTE || flights.length > 0) {
    const now = clock.ms;
    if (now === opened) {
      upstream.admit('openai', { ...demand, tokens: 1_000 }, now);
    }
    for (const f of flights) {
      if (f.headers === undefined && f.arrive <= now) {
        const admitted = upstream.admit('openai', demand, f.arrive);
        f.ok = admitted.ok;
        f.headers = coarse(admitted.headers);
      }
    }
    for (let i = 0; i < flights.length;) {
      const f = flights[i]!;
      if (f.answer > now) {
        i++;
        continue;
      }
      flights.splice(i, 1);
      state.quota.observe(f.headers!, f.admission, f.sentAt);
      if (f.ok) state.settle(f.admission, { input: CALL, output: 0 });
      else {
        outcome.rejected++;
        state.release(f.admission);
      }
    }
    while (next <= now && next < end) {
      waiting.push(next);
      next += EVERY;
    }
    while (waiting.length > 0 && state.hasRoom(call)) {
      waiting.shift();
      const admission = { ...call };
      const sentAt = state.admit(admission);
      outcome.sent++;
      flights.push({
        admission,
        sentAt,
        arrive: sentAt + ARRIVE,
        answer: sentAt + ARRIVE + ANSWER,
      });
    }
    // Would the upstream, as it counts now, take the next call after those on their way?
    const coming = flights.filter((f) => f.headers === undefined).length * CALL;
    const left = Number(upstream.headers('openai', now)['x-ratelimit-remaining-tokens']);
    if (waiting.length > 0 && left - coming >= CALL) {
      run += STEP;
      if (run > outcome.needlessWait) outcome.needlessWait = run;
    } else run = 0;
    clock.advance(STEP);
  }
  return outcome;
}

describe("the upstream's window rolls during a burst (whole-second reset headers)", () => {
  const offsets = [150, 225, 300, 375, 450, 525, 600];
  it.each(offsets)(
    'keeps the tightest end: no 429, no needless wait, burst %d ms before the roll',
    (offset) => {
      const o = burst(offset);
      expect(o.sent).toBeGreaterThan(100);
      expect(o.rejected).toBe(0);
      // An answer takes 20 ms; the end read from a reset rounded up to the second is up to a
      // second late: the burst then waits most of a second with the upstream's window empty.
      expect(o.needlessWait).toBeLessThanOrEqual(50);
    },
  );
});
