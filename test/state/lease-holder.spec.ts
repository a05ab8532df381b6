import { PoolLevel } from '../../src/quota/pool-level';
import { rulesFor } from '../../src/quota/rules/rules-for';
import { levelHolder, specsOf } from '../../src/state/leases/lease-holder';
import { FakeClock } from '../support/random';

/** The meters a level's lease book keeps: name, kind, limit and length of each. */
function metersOf(level: PoolLevel) {
  return specsOf(levelHolder(level)).map((s) => [s.meter, s.kind, s.limit(), s.lengthMs()]);
}

describe('a level of a quota pool path as a lease holder', () => {
  const clock = new FakeClock();
  const limits = { tpm: 6_000, rpm: 120 };

  it("leases an OpenAI level's tokens and requests as buckets of a minute", () => {
    const level = new PoolLevel('org', limits, rulesFor('openai'), clock.now);
    expect(metersOf(level)).toEqual([
      ['tokens', 'b', 6_000, 60_000],
      ['requests', 'b', 120, 60_000],
    ]);
  });

  it("leases an Azure level's requests per minute, not per short window (no header speaks of one)", () => {
    for (const provisioned of [false, true]) {
      const level = new PoolLevel('sub/region', limits, rulesFor('azure', provisioned), clock.now);
      expect(metersOf(level)).toEqual([
        ['tokens', 'w', 6_000, 60_000],
        ['requests', 'w', 120, 60_000],
      ]);
    }
  });

  it("leases a Claude level's input and output buckets, and no combined tokens it does not set", () => {
    const level = new PoolLevel(
      'sub',
      { itpm: 80_000, otpm: 24_000 },
      rulesFor('anthropic'),
      clock.now,
    );
    const holder = levelHolder(level);
    expect(holder.lastReading()).toBeUndefined();
    expect(holder.attributes).toEqual({ level: 'sub' });
    expect(metersOf(level)).toEqual([
      ['tokens', 'b', 0, 60_000],
      ['requests', 'b', 0, 60_000],
      ['input', 'b', 80_000, 60_000],
      ['output', 'b', 24_000, 60_000],
    ]);
  });
});
