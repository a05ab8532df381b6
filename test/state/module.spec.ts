import { Test } from '@nestjs/testing';
import {
  createSwitchboard,
  redisState,
  Switchboard,
  SwitchboardHealthIndicator,
  SwitchboardModule,
  type DeploymentConfig,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { RedisServer } from '../support/redis-server';
import { ask, GPT } from '../support/upstream';
import { eventually } from '../support/eventually';

let server: RedisServer;
let upstream: SimulatedUpstream;
let deployments: DeploymentConfig[];

beforeAll(async () => {
  server = await RedisServer.start();
  upstream = await SimulatedUpstream.start({ deployments: [{ name: 'a' }, { name: 'b' }] });
  deployments = upstream.deployments.map((d) => ({
    provider: 'openai' as const,
    name: d.name,
    baseURL: d.openaiBaseURL,
    apiKey: 'sk-test',
    models: [{ name: GPT, tpm: 30_000, rpm: 300 }],
  }));
});
afterAll(async () => {
  await upstream.close();
  await server.close();
});

it('shares state from SwitchboardModule.forRootAsync with a standalone switchboard', async () => {
  const moduleRef = await Test.createTestingModule({
    imports: [
      SwitchboardModule.forRootAsync({
        useFactory: async () => ({
          deployments,
          state: redisState({ url: server.url, prefix: 'nest:', syncInterval: 50 }),
        }),
      }),
    ],
  }).compile();
  await moduleRef.init();
  const nest = moduleRef.get(Switchboard);
  const health = moduleRef.get(SwitchboardHealthIndicator);
  const standalone = createSwitchboard({
    deployments,
    state: redisState({ url: server.url, prefix: 'nest:', syncInterval: 50 }),
  });
  try {
    await eventually(() => nest.state.health().lastSync !== undefined);
    expect(health.isHealthy().switchboard.state).toMatchObject({ status: 'up', store: 'redis' });

    await standalone.chat.completions.create(ask('hello', { session_id: 's' }));
    const usage = (sb: Switchboard) =>
      [...sb.deployments.values()].reduce((n, d) => n + d.models.get(GPT)!.rpmUsage, 0);
    await eventually(() => usage(nest) === 1);
    await nest.chat.completions.create(ask('again', { session_id: 's' }));
    expect(nest.registry.sessions.get('s')).toBe(standalone.registry.sessions.get('s'));
  } finally {
    await standalone.close();
    await moduleRef.close();
  }
  // The application closing closed the store and its connection.
  await eventually(() => nest.state.health().connection === 'end');
});
