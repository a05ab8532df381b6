/**
 * A Nest quick start through @nestjs/config: a complete switchboard.yaml, the AppModule that loads
 * it through @nestjs/config, and a service that injects the Switchboard. Endpoints and keys come
 * from the environment, here pointed at simulated deployments.
 */
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { ConfigModule, ConfigService, type ConfigType } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Switchboard,
  SwitchboardConfigError,
  SwitchboardModule,
  switchboardConfig,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';

// ---- README: switchboard.yaml -------------------------------------------------------------
const SWITCHBOARD_YAML = `# switchboard.yaml: quotas here, endpoints and keys in the environment
deployments:
  - provider: openai
    name: east
    baseURL: \${AZURE_OPENAI_EAST_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_EAST_API_KEY}
    models:
      - { name: gpt-4o-mini, tpm: 30000, rpm: 300 }
  - provider: openai
    name: west
    baseURL: \${AZURE_OPENAI_WEST_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_WEST_API_KEY}
    models:
      - { name: gpt-4o-mini, tpm: 30000, rpm: 300 }
  - provider: anthropic
    name: foundry
    baseURL: \${FOUNDRY_ENDPOINT}/anthropic/
    apiKey: \${FOUNDRY_API_KEY}
    models:
      - { name: claude-sonnet-5, tpm: 20000, rpm: 100, cooldown: 30000 }
failover:
  attempts: 3
ratelimitWindow: \${SWITCHBOARD_RATELIMIT_WINDOW:-60000}
`;

// ---- README: app.module.ts and chat.service.ts --------------------------------------------
@Injectable()
class ChatService {
  constructor(private readonly sb: Switchboard) {}

  async ask(question: string, sessionId?: string): Promise<string> {
    const completion = await this.sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: question }],
      session_id: sessionId,
    });
    return completion.choices[0]?.message.content ?? '';
  }

  async askClaude(question: string): Promise<string> {
    const message = await this.sb.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: question }],
    });
    return message.content[0]?.type === 'text' ? message.content[0].text : '';
  }
}

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, load: [switchboardConfig] }),
    SwitchboardModule.forRootAsync({
      imports: [ConfigModule],
      inject: [switchboardConfig.KEY],
      useFactory: (config: ConfigType<typeof switchboardConfig>) => config,
    }),
  ],
  providers: [ChatService],
})
class AppModule {}
// ---- end of README code -------------------------------------------------------------------

// The README's variant for a plain ConfigService.
@Module({
  imports: [
    ConfigModule.forRoot({ load: [switchboardConfig] }),
    SwitchboardModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => config.getOrThrow<SwitchboardOptions>('switchboard'),
    }),
  ],
  providers: [ChatService],
})
class ConfigServiceAppModule {}

// The README's one-liner: the namespace as the whole async registration.
@Module({
  imports: [SwitchboardModule.forRootAsync(switchboardConfig.asProvider())],
  providers: [ChatService],
})
class AsProviderAppModule {}

const VARIABLES = [
  'SWITCHBOARD_CONFIG',
  'AZURE_OPENAI_EAST_ENDPOINT',
  'AZURE_OPENAI_EAST_API_KEY',
  'AZURE_OPENAI_WEST_ENDPOINT',
  'AZURE_OPENAI_WEST_API_KEY',
  'FOUNDRY_ENDPOINT',
  'FOUNDRY_API_KEY',
  'SWITCHBOARD_RATELIMIT_WINDOW',
  'AZURE_OPENAI_ENDPOINT',
  'AZURE_OPENAI_API_KEY',
  'OPENAI_API_KEY',
];

describe('README quick start', () => {
  let dir: string;
  let upstream: SimulatedUpstream;
  let saved: Record<string, string | undefined>;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchboard-readme-'));
    writeFileSync(join(dir, 'switchboard.yaml'), SWITCHBOARD_YAML);
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', apiKey: 'east-secret' },
        { name: 'west', apiKey: 'west-secret' },
        { name: 'foundry', apiKey: 'foundry-secret' },
      ],
    });
  });

  beforeEach(() => {
    saved = Object.fromEntries(VARIABLES.map((v) => [v, process.env[v]]));
    for (const v of VARIABLES) delete process.env[v];
    Object.assign(process.env, {
      SWITCHBOARD_CONFIG: join(dir, 'switchboard.yaml'),
      AZURE_OPENAI_EAST_ENDPOINT: upstream.deployment('east').azureEndpoint,
      AZURE_OPENAI_EAST_API_KEY: 'east-secret',
      AZURE_OPENAI_WEST_ENDPOINT: upstream.deployment('west').azureEndpoint,
      AZURE_OPENAI_WEST_API_KEY: 'west-secret',
      FOUNDRY_ENDPOINT: upstream.deployment('foundry').azureEndpoint,
      FOUNDRY_API_KEY: 'foundry-secret',
    });
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    for (const v of VARIABLES) {
      if (saved[v] === undefined) delete process.env[v];
      else process.env[v] = saved[v];
    }
  });

  afterAll(async () => {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(module: new () => unknown): Promise<INestApplication> {
    const ref = await Test.createTestingModule({ imports: [module] }).compile();
    app = ref.createNestApplication();
    await app.init();
    return app;
  }

  it.each([
    ['switchboardConfig.KEY', AppModule],
    ['ConfigService', ConfigServiceAppModule],
    ['switchboardConfig.asProvider()', AsProviderAppModule],
  ])('builds the switchboard from switchboard.yaml, injected through %s', async (_, module) => {
    const nest = await start(module);
    const sb = nest.get(Switchboard);
    expect([...sb.deployments.keys()]).toEqual(['east', 'west', 'foundry']);
    expect(sb.stats()).toEqual({
      east: { 'gpt-4o-mini': { util: 0, tpm: '0/30000', rpm: '0/300' } },
      west: { 'gpt-4o-mini': { util: 0, tpm: '0/30000', rpm: '0/300' } },
      foundry: { 'claude-sonnet-5': { util: 0, tpm: '0/20000', rpm: '0/100' } },
    });
    expect(sb.deployments.get('foundry')!.models.get('claude-sonnet-5')!.cooldown).toBe(30000);
  });

  it('answers through the injected Switchboard, with the keys from the environment', async () => {
    const chat = (await start(AppModule)).get(ChatService);

    expect(await chat.ask('Hello!', 'user-42')).toEqual(expect.any(String));
    expect(await chat.ask('Again', 'user-42')).toEqual(expect.any(String));
    expect(await chat.askClaude('Hello, Claude')).toEqual(expect.any(String));

    const [east, west, foundry] = ['east', 'west', 'foundry'].map((n) => upstream.deployment(n));
    // Both chat calls of the session went to one deployment, with that deployment's key.
    expect(east!.stats.ok + west!.stats.ok).toBe(2);
    expect([east!.stats.ok, west!.stats.ok].sort()).toEqual([0, 2]);
    expect(foundry!.stats.ok).toBe(1);
    expect(east!.stats.rateLimited + west!.stats.rateLimited + foundry!.stats.failed).toBe(0);
    upstream.reset();
  });

  it('fails at startup with the file and the variable when a key is missing', async () => {
    delete process.env.AZURE_OPENAI_WEST_API_KEY;
    const compiling = Test.createTestingModule({ imports: [AppModule] }).compile();
    await expect(compiling).rejects.toThrow(SwitchboardConfigError);
    await expect(compiling).rejects.toThrow(
      /switchboard\.yaml: deployments\[1\]\.apiKey uses \$\{AZURE_OPENAI_WEST_API_KEY\}/,
    );
  });

  it('fails at startup and says what to set when nothing is configured', async () => {
    delete process.env.SWITCHBOARD_CONFIG;
    await expect(Test.createTestingModule({ imports: [AppModule] }).compile()).rejects.toThrow(
      /set SWITCHBOARD_CONFIG to a YAML or JSON file, or AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY, or OPENAI_API_KEY/,
    );
  });
});
