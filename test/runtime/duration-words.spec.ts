import { durationInWords } from '../../src/runtime/duration-words';

describe('durationInWords', () => {
  it.each([
    [0, '0 ms'],
    [850, '850 ms'],
    [42_000, '42 s'],
    [425_000, '7 min 5 s'],
    [68_755_766, '19 h 6 min'],
    [3_600_000, '1 h'],
    [273_600_000, '3 d 4 h'],
  ])('%d ms reads %s', (ms, words) => {
    expect(durationInWords(ms)).toBe(words);
  });

  it('rounds up, so that a wait is never shown shorter than it is', () => {
    expect(durationInWords(59_999)).toBe('1 min');
    expect(durationInWords(61_001)).toBe('1 min 2 s');
  });
});
