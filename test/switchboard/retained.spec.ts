import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from 'nestjs-switchboard';
import { ModelState } from '../../src/registry/model-state';
import { TOKENS, UNTIL } from '../../src/quota/hot-row';
import { openaiDeployments } from '../support/configs';
import { TestReader } from '../support/metric-reader';
import { FakeClock } from '../support/random';

/** 5 deployments x 2 models, as an app that builds one switchboard per tenant might. */
const DEPLOYMENTS: DeploymentConfig[] = openaiDeployments(5).map((d) => ({
  ...d,
  models: [...d.models, { name: 'gpt-4o', tpm: 30_000, rpm: 300 }],
}));

const rowsOf = (sb: Switchboard) =>
  [...sb.deployments.values()].flatMap((d) => [...d.models.values()].map((s) => s.quota.hot));

describe('what a switchboard keeps, and leaves behind once closed', () => {
  it("keeps every model's hot row in one table of its registry, sized for its models", async () => {
    const sb = createSwitchboard({ deployments: DEPLOYMENTS });
    const other = createSwitchboard({ deployments: DEPLOYMENTS });
    try {
      const rows = rowsOf(sb);
      expect(rows).toHaveLength(10);
      const table = rows[0]!.table;
      expect(rows.every((r) => r.table === table)).toBe(true);
      // 16 numbers a row (two lines of memory), one row a model: nothing allocated ahead for
      // models to come.
      expect(table.length).toBe(10 * 16);
      expect(new Set(rows.map((r) => r.row)).size).toBe(10);
      // Another switchboard's rows are its own.
      expect(rowsOf(other).some((r) => r.table === table)).toBe(false);
    } finally {
      await Promise.all([sb.close(), other.close()]);
    }
  });

  it('gives a model no registry built a row of its own, which no other model writes', () => {
    const clock = new FakeClock();
    const a = new ModelState({ name: 'gpt-4o-mini', tpm: 1_000 }, 'east', clock.now);
    const b = new ModelState({ name: 'gpt-4o-mini', tpm: 2_000 }, 'west', clock.now);
    expect(a.quota.hot.table).not.toBe(b.quota.hot.table);
    a.spend(100, 1);
    b.spend(100, 1);
    // Each row keeps its own model's room.
    expect([a.util, b.util]).toEqual([0.1, 0.05]);
    const room = (s: ModelState) => s.quota.hot.table[s.quota.hot.row + TOKENS];
    expect(a.quota.hot.table[a.quota.hot.row + UNTIL]).toBeGreaterThan(clock.ms);
    expect([room(a), room(b)]).toEqual([900, 1_900]);
  });

  it('leaves nothing alive: every switchboard built, used and closed is collected, with its table, but the last two', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const count = 40;
    const boards: WeakRef<Switchboard>[] = [];
    const tables: WeakRef<Float64Array>[] = [];
    // Gauges observed by a meter that outlives every switchboard.
    const reader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const build = async () => {
      // A clock, a queue, a listener, gauges and a reset timer: all a closed one must let go of.
      const sb = createSwitchboard({
        deployments: DEPLOYMENTS,
        clock: new FakeClock().now,
        queue: { maxWait: 1_000 },
        usageWindow: 'fixed',
      });
      const stop = sb.registry.onModelEvent(() => {});
      sb.selectDeployment({ model: 'gpt-4o-mini', sessionId: 'tenant-1' });
      sb.selectDeployment({ model: 'gpt-4o' });
      sb.deployments.get('d0')!.models.get('gpt-4o')!.markDown(5_000);
      await reader.collect();
      boards.push(new WeakRef(sb));
      tables.push(new WeakRef(rowsOf(sb)[0]!.table));
      stop();
      await sb.close();
    };
    try {
      for (let i = 0; i < count; i++) await build();
      // A WeakRef keeps its target through the job that made or read it: collect after it.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      gc();
      const alive = (refs: WeakRef<object>[]) => refs.filter((r) => r.deref() !== undefined).length;
      // The last two closed are kept for their shapes (see `keepClosed`), the rest go.
      expect(alive(boards.slice(0, -2))).toBe(0);
      expect(alive(tables.slice(0, -2))).toBe(0);
      expect(alive(boards.slice(-2))).toBe(2);
    } finally {
      metrics.disable();
    }
  });
});
