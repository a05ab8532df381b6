import { Test } from '@nestjs/testing';
import { Switchboard, SwitchboardHealthIndicator, SwitchboardModule } from 'nestjs-switchboard';
import { openaiDeployments } from '../support/configs';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';

const BIG = 'gpt-4o';
const SMALL = 'gpt-4o-mini';

describe('health shows tiers and fallbacks', () => {
  it('reports each tier, the configured fallbacks, and the fallback in use, staying up while one serves', async () => {
    const clock = new FakeClock();
    const [ptu, payg] = openaiDeployments(2, BIG);
    const [small] = openaiDeployments(1, SMALL);
    const ref = await Test.createTestingModule({
      imports: [
        SwitchboardModule.forRoot({
          deployments: [
            { ...ptu!, name: 'ptu', priority: 0 },
            { ...payg!, name: 'payg', priority: 1 },
            { ...small!, name: 'small' },
          ],
          fallbacks: { [BIG]: [SMALL] },
          clock: clock.now,
        }),
      ],
    }).compile();
    const indicator = ref.get(SwitchboardHealthIndicator);
    const sb = ref.get(Switchboard);
    const state = (name: string) => sb.deployments.get(name)!.models.get(BIG)!;

    state('ptu').markDown(2_000);
    expect(indicator.isHealthy('llm', { models: [BIG] }).llm).toEqual({
      status: 'up',
      models: {
        [BIG]: {
          healthy: 1,
          total: 2,
          cooling: { ptu: 2_000 },
          tiers: [
            { priority: 0, healthy: 0, total: 1, deployments: ['ptu'] },
            { priority: 1, healthy: 1, total: 1, deployments: ['payg'] },
          ],
          fallbacks: [SMALL],
        },
      },
      state: { status: 'up', store: 'memory' },
    });

    state('payg').markDown(2_000);
    const viaFallback = indicator.isHealthy('llm', { models: [BIG] }).llm;
    expect(viaFallback.status).toBe('up');
    expect(viaFallback.models[BIG]).toMatchObject({ healthy: 0, fallbackInUse: SMALL });

    sb.deployments.get('small')!.models.get(SMALL)!.markDown(2_000);
    const down = indicator.isHealthy('llm', { models: [BIG] }).llm;
    expect(down.status).toBe('down');
    expect(down.models[BIG]!.fallbackInUse).toBeUndefined();
    expect(down.message).toBe(`no healthy deployment for ${BIG}`);
    await ref.close();
  });
});
