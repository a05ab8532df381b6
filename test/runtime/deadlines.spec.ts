import { Deadlines, type DeadlineEntry } from '../../src/runtime/deadlines';

/** An entry that records when (by the fake clock) it expired. */
function entry(log: Array<[string, number]>, name: string): DeadlineEntry {
  return { expire: () => log.push([name, Date.now()]) };
}

describe('Deadlines on fake timers', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => {
    jest.clearAllTimers();
    jest.useRealTimers();
  });

  it('expires each entry once, at its own deadline, on one timer per duration', () => {
    const deadlines = new Deadlines();
    const log: Array<[string, number]> = [];
    deadlines.add(entry(log, 'a'), 1_000);
    jest.advanceTimersByTime(300);
    deadlines.add(entry(log, 'b'), 1_000);
    deadlines.add(entry(log, 'c'), 200);
    expect(jest.getTimerCount()).toBe(2); // one per duration, not one per entry
    jest.advanceTimersByTime(199);
    expect(log).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(log).toEqual([['c', 1_000_500]]);
    jest.advanceTimersByTime(499);
    expect(log).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(log).toEqual([
      ['c', 1_000_500],
      ['a', 1_001_000],
    ]);
    jest.advanceTimersByTime(300);
    expect(log.map(([name]) => name)).toEqual(['c', 'a', 'b']);
    expect(log[2]![1]).toBe(1_001_300);
    jest.advanceTimersByTime(10_000);
    expect(log).toHaveLength(3);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a removed entry never expires, and an emptied list leaves no timer', () => {
    const deadlines = new Deadlines();
    const log: Array<[string, number]> = [];
    const a = entry(log, 'a');
    const b = entry(log, 'b');
    deadlines.add(a, 1_000);
    deadlines.add(b, 1_000);
    deadlines.remove(a);
    jest.advanceTimersByTime(1_000);
    expect(log).toEqual([['b', 1_001_000]]);
    deadlines.remove(b); // already expired: nothing happens
    const c = entry(log, 'c');
    deadlines.add(c, 5_000);
    deadlines.remove(c);
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(10_000);
    expect(log).toHaveLength(1);
  });

  it('a head removed before its deadline: the next entry still expires on time, not early', () => {
    const deadlines = new Deadlines();
    const log: Array<[string, number]> = [];
    const a = entry(log, 'a');
    deadlines.add(a, 1_000);
    jest.advanceTimersByTime(600);
    deadlines.add(entry(log, 'b'), 1_000);
    deadlines.remove(a);
    jest.advanceTimersByTime(400); // a's deadline: nothing is due
    expect(log).toEqual([]);
    jest.advanceTimersByTime(600);
    expect(log).toEqual([['b', 1_001_600]]);
  });

  it('an entry added from an expiring one waits its full duration', () => {
    const deadlines = new Deadlines();
    const log: Array<[string, number]> = [];
    const again: DeadlineEntry = {
      expire: () => {
        log.push(['first', Date.now()]);
        deadlines.add(entry(log, 'second'), 1_000);
      },
    };
    deadlines.add(again, 1_000);
    jest.advanceTimersByTime(1_000);
    jest.advanceTimersByTime(999);
    expect(log).toEqual([['first', 1_001_000]]);
    jest.advanceTimersByTime(1);
    expect(log).toEqual([
      ['first', 1_001_000],
      ['second', 1_002_000],
    ]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('many distinct durations, all removed, leave nothing behind', () => {
    const deadlines = new Deadlines();
    const entries = Array.from({ length: 500 }, (_, i) => {
      const e: DeadlineEntry = { expire: () => undefined };
      deadlines.add(e, 1_000 + i);
      return e;
    });
    expect(jest.getTimerCount()).toBe(500);
    for (const e of entries) deadlines.remove(e);
    expect(jest.getTimerCount()).toBe(0);
    expect((deadlines as unknown as { lists: Map<number, unknown> }).lists.size).toBe(0);
  });
});
