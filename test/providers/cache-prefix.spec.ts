import { cachePrefixOf } from '../../src/providers/anthropic/cache-prefix';

const mark = { type: 'ephemeral' };

describe('cachePrefixOf', () => {
  it('is undefined for a call that marks no block', () => {
    expect(cachePrefixOf({ system: 'be brief', messages: [{ role: 'user', content: 'hi' }] })).toBe(
      undefined,
    );
    expect(
      cachePrefixOf({
        system: [{ type: 'text', text: 'x'.repeat(4_000) }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      }),
    ).toBe(undefined);
  });

  it('keys the prompt up to the last marked block, at four characters a token', () => {
    const handbook = 'h'.repeat(40_000);
    const one = cachePrefixOf({
      system: [{ type: 'text', text: handbook, cache_control: mark }],
      messages: [{ role: 'user', content: 'question one' }],
    });
    const two = cachePrefixOf({
      system: [{ type: 'text', text: handbook, cache_control: mark }],
      messages: [{ role: 'user', content: 'question two' }],
    });
    expect(one).toEqual({ key: expect.stringMatching(/^cache:[0-9a-f]{32}$/), tokens: 10_000 });
    expect(two).toEqual(one);
    // A mark in a message takes the prefix to there.
    const longer = cachePrefixOf({
      system: [{ type: 'text', text: handbook, cache_control: mark }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'abcd', cache_control: mark }] }],
    });
    expect(longer?.tokens).toBe(10_001);
    expect(longer?.key).not.toBe(one?.key);
  });

  it('keeps blocks apart: "ab" + "c" is not "a" + "bc"', () => {
    const of = (a: string, b: string) =>
      cachePrefixOf({
        system: [
          { type: 'text', text: a },
          { type: 'text', text: b, cache_control: mark },
        ],
        messages: [],
      });
    expect(of('ab', 'c')?.key).not.toBe(of('a', 'bc')?.key);
  });
});
