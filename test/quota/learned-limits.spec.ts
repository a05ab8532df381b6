import { oneDeployment } from '../support/one-deployment';
import { ask, CLAUDE, GPT } from '../support/upstream';

/** A header set as an answer (or a proxy rewriting it) would carry it. */
const headers = (h: Record<string, number>) =>
  new Headers(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)])));

/** Virtual ms between attempts while the model is refused. */
const STEP = 1_000;

describe('a limit learned from one answer cannot lock a model out', () => {
  jest.setTimeout(60_000);

  it.each([
    ['configured', { tpm: 60_000 }],
    ['learned', {}],
  ])(
    'OpenAI: after x-ratelimit-limit-tokens: 1, tpm %s, calls succeed within a window',
    async (_, limits) => {
      const s = await oneDeployment('openai', { tpm: 60_000, rpm: 600 }, { name: GPT, ...limits });
      try {
        const call = () =>
          s.sb.chat.completions.create(ask('hello', { max_tokens: 50 })).then(
            () => true,
            () => false,
          );
        // The first answer (a proxy rewrote its headers) says the deployment takes 1 token a minute.
        s.state.quota.observe(
          headers({ 'x-ratelimit-limit-tokens': 1, 'x-ratelimit-remaining-tokens': 0 }),
        );
        expect(s.state.quota.limits.tpm.value).toBe(1);
        const start = s.clock.ms;
        let back = -1;
        while (s.clock.ms - start <= 60_000) {
          if (await call()) {
            back = s.clock.ms - start;
            break;
          }
          s.clock.advance(STEP);
        }
        process.stdout.write(
          `OpenAI, tpm ${_}: calls succeed again ${back} ms after the reading\n`,
        );
        expect(back).toBeGreaterThanOrEqual(0);
        expect(back).toBeLessThanOrEqual(60_000);
        // The answers after it said the limit again: the next calls go at once.
        expect(s.state.quota.limits.tpm.value).toBe(60_000);
        expect(await call()).toBe(true);
        expect(await call()).toBe(true);
      } finally {
        await s.sb.close();
        await s.upstream.close();
      }
    },
  );

  it.each([
    ['configured', { itpm: 30_000, otpm: 8_000 }],
    ['learned', {}],
  ])(
    'Anthropic: after input-tokens-limit: 1, itpm %s, calls succeed within a window',
    async (_, limits) => {
      const s = await oneDeployment(
        'anthropic',
        { rpm: 50, itpm: 30_000, otpm: 8_000 },
        { name: CLAUDE, ...limits },
      );
      try {
        const call = () =>
          s.sb.messages
            .create({
              model: CLAUDE,
              max_tokens: 64,
              messages: [{ role: 'user', content: 'hello' }],
            })
            .then(
              () => true,
              () => false,
            );
        s.state.quota.observe(
          headers({
            'anthropic-ratelimit-input-tokens-limit': 1,
            'anthropic-ratelimit-input-tokens-remaining': 0,
            'anthropic-ratelimit-requests-remaining': 40,
          }),
        );
        expect(s.state.quota.limits.itpm.value).toBe(1);
        const start = s.clock.ms;
        let back = -1;
        while (s.clock.ms - start <= 60_000) {
          if (await call()) {
            back = s.clock.ms - start;
            break;
          }
          s.clock.advance(STEP);
        }
        process.stdout.write(
          `Anthropic, itpm ${_}: calls succeed again ${back} ms after the reading\n`,
        );
        expect(back).toBeGreaterThanOrEqual(0);
        expect(back).toBeLessThanOrEqual(60_000);
        expect(s.state.quota.limits.itpm.value).toBe(30_000);
        expect(await call()).toBe(true);
      } finally {
        await s.sb.close();
        await s.upstream.close();
      }
    },
  );

  it('a configured limit lowered by a header holds while answers renew it, then lapses', async () => {
    const s = await oneDeployment('openai', { tpm: 60_000 }, { name: GPT, tpm: 60_000 });
    try {
      const low = headers({
        'x-ratelimit-limit-tokens': 30_000,
        'x-ratelimit-remaining-tokens': 30_000,
      });
      s.state.quota.observe(low);
      s.clock.advance(40_000);
      s.state.quota.observe(low);
      s.clock.advance(40_000);
      expect(s.state.quota.limits.tpm.value).toBe(30_000);
      s.clock.advance(20_001);
      expect(s.state.quota.hasRoom({ input: 10, output: 10 })).toBe(true);
      expect(s.state.quota.limits.tpm.value).toBe(60_000);
    } finally {
      await s.sb.close();
      await s.upstream.close();
    }
  });
});
