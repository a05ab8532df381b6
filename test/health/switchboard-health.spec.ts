import { Controller, Get, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  createSwitchboard,
  Switchboard,
  SwitchboardHealthIndicator,
  SwitchboardModule,
  type SwitchboardModuleOptions,
} from 'nestjs-switchboard';
import type { StateStore, StateStoreHealth } from 'nestjs-switchboard/extend';
import { anthropicDeployment, openaiDeployments } from '../support/configs';
import { FakeClock } from '../support/random';
import '../support/quiet-logs';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

// ---- README: health.controller.ts ---------------------------------------------------------
@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly switchboard: SwitchboardHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.switchboard.isHealthy()]);
  }

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.switchboard.isLive()]);
  }

  @Get('claude')
  @HealthCheck()
  claude() {
    return this.health.check([() => this.switchboard.isHealthy('claude', { models: [CLAUDE] })]);
  }
}
// ---- end of README code -------------------------------------------------------------------

/** A state store that reports whatever the test sets. */
function reportingStore(report: () => StateStoreHealth): StateStore {
  return { attach: () => undefined, health: report, close: () => Promise.resolve() };
}

describe('SwitchboardHealthIndicator over HTTP (Terminus)', () => {
  let app: INestApplication;
  let sb: Switchboard;
  let clock: FakeClock;
  let storeHealth: StateStoreHealth;

  beforeEach(async () => {
    clock = new FakeClock();
    storeHealth = { status: 'up', store: 'memory' };
    const options: SwitchboardModuleOptions = {
      deployments: [...openaiDeployments(2, GPT), anthropicDeployment('foundry', CLAUDE)],
      clock: clock.now,
      state: reportingStore(() => storeHealth),
    };
    const ref = await Test.createTestingModule({
      imports: [TerminusModule.forRoot({ logger: false }), SwitchboardModule.forRoot(options)],
      controllers: [HealthController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    sb = app.get(Switchboard);
  });
  afterEach(() => app.close());

  const model = (deployment: string, name: string) =>
    sb.deployments.get(deployment)!.models.get(name)!;

  it('answers 200 with per-model counts and the state store health', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body).toEqual({
      status: 'ok',
      info: {
        switchboard: {
          status: 'up',
          models: {
            [GPT]: { healthy: 2, total: 2 },
            [CLAUDE]: { healthy: 1, total: 1 },
          },
          state: { status: 'up', store: 'memory' },
        },
      },
      error: {},
      details: { switchboard: expect.objectContaining({ status: 'up' }) },
    });
  });

  it('stays 200 while one deployment of a model cools down, and says which and for how long', async () => {
    model('d0', GPT).markDown(10_000);
    clock.advance(2_500);
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.models[GPT]).toEqual({
      healthy: 1,
      total: 2,
      cooling: { d0: 7_500 },
    });
  });

  it('stays 200 while another model is served when every deployment of one is down, naming it', async () => {
    model('d0', GPT).markDown(30_000);
    model('d1', GPT).markDown(30_000);
    const up = await request(app.getHttpServer()).get('/health').expect(200);
    expect(up.body.info.switchboard).toEqual({
      status: 'up',
      models: {
        [GPT]: { healthy: 0, total: 2, cooling: { d0: 30_000, d1: 30_000 } },
        [CLAUDE]: { healthy: 1, total: 1 },
      },
      state: { status: 'up', store: 'memory' },
      message: `no healthy deployment for ${GPT}`,
    });
  });

  it('answers 503 once no model can be served, then 200 after markUp()', async () => {
    for (const d of ['d0', 'd1']) model(d, GPT).markDown(30_000);
    model('foundry', CLAUDE).markDown(30_000, 'forbidden');
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error.switchboard).toMatchObject({
      status: 'down',
      message: `no healthy deployment for ${GPT}; no healthy deployment for ${CLAUDE}`,
    });
    model('foundry', CLAUDE).markUp();
    await request(app.getHttpServer()).get('/health').expect(200);
  });

  it('answers 200 again when the cooldown has passed on the clock', async () => {
    model('d0', GPT).markDown(5_000);
    model('d1', GPT).markDown(8_000);
    clock.advance(5_000);
    const stillDown = await request(app.getHttpServer()).get('/health').expect(200);
    expect(stillDown.body.info.switchboard.models[GPT]).toEqual({
      healthy: 1,
      total: 2,
      cooling: { d1: 3_000 },
    });
    model('d0', GPT).markDown(5_000);
    model('foundry', CLAUDE).markDown(5_000);
    await request(app.getHttpServer()).get('/health').expect(503);
    clock.advance(5_000);
    await request(app.getHttpServer()).get('/health').expect(200);
  });

  // At quota is not broken: readiness stays up (it used to answer 503 here), and says when room comes.
  it('stays 200 while every deployment of a model is at its quota, and says when room is expected', async () => {
    const east = model('d0', GPT);
    const west = model('d1', GPT);
    east.spend(0, east.quota.limits.rpm.value);
    west.spend(west.quota.limits.tpm.value, 0);
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.models[GPT]).toEqual({
      healthy: 0,
      total: 2,
      saturated: ['d0', 'd1'],
      roomExpectedIn: expect.any(Number),
    });
    const roomIn = res.body.info.switchboard.models[GPT].roomExpectedIn as number;
    expect(roomIn).toBeGreaterThan(0);
    expect(roomIn).toBeLessThanOrEqual(61_000); // the minute window, plus one bucket of it
    sb.resetUsage();
    const after = await request(app.getHttpServer()).get('/health').expect(200);
    expect(after.body.info.switchboard.models[GPT]).toEqual({ healthy: 2, total: 2 });
  });

  it('stays 200 while every deployment cools after 429s, as saturated with the time to room', async () => {
    model('d0', GPT).markDown(4_000, 'rate_limit');
    model('d1', GPT).markDown(9_000, 'rate_limit');
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.models[GPT]).toEqual({
      healthy: 0,
      total: 2,
      cooling: { d0: 4_000, d1: 9_000 },
      saturated: ['d0', 'd1'],
      roomExpectedIn: 4_000,
    });
  });

  it('answers 503 when every deployment of every model is out for a fault, whatever its reason', async () => {
    model('d0', GPT).markDown(60_000, 'unauthorized');
    model('d1', GPT).markDown(60_000, 'connection');
    model('foundry', CLAUDE).markDown(60_000, 'server_error');
    const res = await request(app.getHttpServer()).get('/health').expect(503);
    expect(res.body.error.switchboard.models[GPT]).toEqual({
      healthy: 0,
      total: 2,
      cooling: { d0: 60_000, d1: 60_000 },
    });
    expect(res.body.error.switchboard.message).toBe(
      `no healthy deployment for ${GPT}; no healthy deployment for ${CLAUDE}`,
    );
  });

  it('stays 200 when one deployment is out for a fault and the other is at quota', async () => {
    model('d0', GPT).markDown(60_000, 'server_error');
    const west = model('d1', GPT);
    west.spend(west.quota.limits.tpm.value, 0);
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.models[GPT]).toMatchObject({
      healthy: 0,
      cooling: { d0: 60_000 },
      saturated: ['d1'],
    });
  });

  it('answers liveness 200 even when every deployment of every model is down', async () => {
    for (const d of ['d0', 'd1']) model(d, GPT).markDown(60_000);
    model('foundry', CLAUDE).markDown(60_000, 'forbidden');
    await request(app.getHttpServer()).get('/health').expect(503);
    const live = await request(app.getHttpServer()).get('/health/live').expect(200);
    expect(live.body).toEqual({
      status: 'ok',
      info: { switchboard: { status: 'up' } },
      error: {},
      details: { switchboard: { status: 'up' } },
    });
  });

  it('checks only the given models under the given key', async () => {
    model('d0', GPT).markDown();
    model('d1', GPT).markDown();
    const res = await request(app.getHttpServer()).get('/health/claude').expect(200);
    expect(res.body.info).toEqual({
      claude: {
        status: 'up',
        models: { [CLAUDE]: { healthy: 1, total: 1 } },
        state: { status: 'up', store: 'memory' },
      },
    });
  });

  it('stays up when the state store is degraded, and shows it', async () => {
    storeHealth = { status: 'degraded', store: 'redis', error: 'connection refused' };
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.state).toEqual(storeHealth);
  });

  it('stays up when the state store cannot report, as degraded', async () => {
    sb.state.health = () => {
      throw new Error('store exploded');
    };
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.switchboard.state).toEqual({
      status: 'degraded',
      error: 'store exploded',
    });
  });
});

describe('SwitchboardHealthIndicator without HTTP', () => {
  const options: SwitchboardModuleOptions = {
    deployments: [...openaiDeployments(1, GPT), anthropicDeployment('foundry', CLAUDE)],
  };

  it('works without TerminusModule imported, returning the result instead of throwing', async () => {
    const ref = await Test.createTestingModule({
      imports: [SwitchboardModule.forRoot(options)],
    }).compile();
    const indicator = ref.get(SwitchboardHealthIndicator);
    const sb = ref.get(Switchboard);
    sb.deployments.get('foundry')!.models.get(CLAUDE)!.markDown(1_000);
    expect(indicator.isHealthy('llm', { models: [GPT] })).toEqual({
      llm: {
        status: 'up',
        models: { [GPT]: { healthy: 1, total: 1 } },
        state: { status: 'up', store: 'memory' },
      },
    });
    const served = indicator.isHealthy();
    expect(served.switchboard.status).toBe('up');
    expect(served.switchboard.message).toBe(`no healthy deployment for ${CLAUDE}`);
    const every = indicator.isHealthy('switchboard', { ready: 'all' });
    expect(every.switchboard.status).toBe('down');
    expect(every.switchboard.message).toBe(`no healthy deployment for ${CLAUDE}`);
    await ref.close();
  });

  it('is down for a model that no deployment serves', async () => {
    const ref = await Test.createTestingModule({
      imports: [SwitchboardModule.forRoot(options)],
    }).compile();
    expect(ref.get(SwitchboardHealthIndicator).isHealthy('x', { models: ['gpt-5'] })).toEqual({
      x: {
        status: 'down',
        models: { 'gpt-5': { healthy: 0, total: 0 } },
        state: { status: 'up', store: 'memory' },
        message: 'gpt-5 is not configured',
      },
    });
    await ref.close();
  });

  it('works in an application that does not have @nestjs/terminus installed', async () => {
    await jest.isolateModulesAsync(async () => {
      jest.doMock('@nestjs/terminus', () => {
        const error = new Error("Cannot find module '@nestjs/terminus' from 'health-results.ts'");
        Object.assign(error, { code: 'MODULE_NOT_FOUND' });
        throw error;
      });
      // Fresh copies of Nest and the library, so that they load without terminus.
      const { Test: IsolatedTest } = await import('@nestjs/testing');
      const lib = await import('../../src');
      const results = await import('../../src/health/health-results');
      expect(await results.loadHealthResults()).toBe(results.plainHealthResults);
      const ref = await IsolatedTest.createTestingModule({
        imports: [lib.SwitchboardModule.forRoot(options)],
      }).compile();
      expect(ref.get(lib.SwitchboardHealthIndicator).isHealthy()).toEqual({
        switchboard: {
          status: 'up',
          models: { [GPT]: { healthy: 1, total: 1 }, [CLAUDE]: { healthy: 1, total: 1 } },
          state: { status: 'up', store: 'memory' },
        },
      });
      await ref.close();
    });
    jest.dontMock('@nestjs/terminus');
  });
});

describe("readiness with health: { ready: 'all' }", () => {
  it('answers 503 as soon as one model cannot be served, with the others healthy', async () => {
    const ref = await Test.createTestingModule({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        SwitchboardModule.forRoot({
          deployments: [...openaiDeployments(2, GPT), anthropicDeployment('foundry', CLAUDE)],
          health: { ready: 'all' },
        }),
      ],
      controllers: [HealthController],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    try {
      const sb = app.get(Switchboard);
      for (const d of ['d0', 'd1']) sb.deployments.get(d)!.models.get(GPT)!.markDown(30_000);
      const res = await request(app.getHttpServer()).get('/health').expect(503);
      expect(res.body.error.switchboard).toMatchObject({
        status: 'down',
        models: { [GPT]: { healthy: 0, total: 2 }, [CLAUDE]: { healthy: 1, total: 1 } },
        message: `no healthy deployment for ${GPT}`,
      });
    } finally {
      await app.close();
    }
  });

  it("refuses a value other than 'any' or 'all', naming the key", () => {
    expect(() =>
      createSwitchboard({
        deployments: openaiDeployments(1, GPT),
        health: { ready: 'most' as 'any' },
      }),
    ).toThrow("health.ready must be 'any' or 'all'");
  });
});
