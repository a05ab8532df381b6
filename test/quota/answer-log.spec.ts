import { admissionRecord } from '../../src/providers/admission-record';
import { AnswerLog } from '../../src/quota/answer-log';
import { seeded } from '../support/random';

const log = () => new AnswerLog(() => undefined, { span: 60_000 });
const uncapped = (input: number) => admissionRecord(input, 0, 1);

describe('AnswerLog: the uncapped calls in flight', () => {
  it('holds each uncapped call from its admission to its answer, once', () => {
    const answers = log();
    const [a, b, c] = [uncapped(1), uncapped(2), uncapped(3)];
    const capped = admissionRecord(4, 100);
    for (const x of [a, b, c, capped]) answers.admitted(x, 0);
    answers.admitted(b, 1); // admitted again: still once
    expect([...answers.uncapped].sort((x, y) => x.input - y.input)).toEqual([a, b, c]);
    answers.answered(a);
    answers.answered(a); // answered again: nothing more leaves
    expect(new Set(answers.uncapped)).toEqual(new Set([b, c]));
    answers.answered(capped);
    answers.answered(c);
    answers.answered(b);
    expect(answers.uncapped).toHaveLength(0);
  });

  it("knows a call by itself, not by a slot another ledger gave it, nor a copy's", () => {
    const east = log();
    const west = log();
    const [a, b] = [uncapped(1), uncapped(2)];
    east.admitted(a, 0);
    east.admitted(b, 0);
    // A copy carries b's slot on east; admitted to west it is west's own entry.
    const copy = { ...b };
    west.admitted(copy, 0);
    west.admitted(a, 0);
    expect(new Set(west.uncapped)).toEqual(new Set([copy, a]));
    east.answered(a);
    expect(east.uncapped).toEqual([b]);
    west.answered(copy);
    west.answered(a);
    expect(west.uncapped).toHaveLength(0);
    east.answered(b);
    expect(east.uncapped).toHaveLength(0);
  });

  it('agrees with a set over 5 000 random admissions and answers', () => {
    const random = seeded(7);
    const answers = log();
    const pool = Array.from({ length: 40 }, (_, i) => uncapped(i));
    const reference = new Set<ReturnType<typeof uncapped>>();
    const differ: Array<[number, number, number]> = [];
    for (let k = 0; k < 5_000; k++) {
      const x = pool[Math.floor(random() * pool.length)]!;
      if (random() < 0.55) {
        answers.admitted(x, k);
        reference.add(x);
      } else {
        answers.answered(x);
        reference.delete(x);
      }
      if (answers.uncapped.length !== reference.size) {
        differ.push([k, answers.uncapped.length, reference.size]);
      }
    }
    // Every step compared, in one expectation: the steps where the counts differed.
    expect(differ).toEqual([]);
    expect(new Set(answers.uncapped)).toEqual(reference);
  });
});
