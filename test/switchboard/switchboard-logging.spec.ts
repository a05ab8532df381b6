import { type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimitError } from 'openai';
import { Switchboard, SwitchboardModule } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const MODEL = 'gpt-4o-mini';
const KEYS = { east: 'sk-east-7f3a9c1e', west: 'sk-west-0b8d2e44' };

interface Line {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  message: string;
  context: unknown;
}

/** Records what reaches the application's logger. */
class CapturingLogger implements LoggerService {
  readonly lines: Line[] = [];
  log = (message: unknown, context?: unknown) => this.add('log', message, context);
  error = (message: unknown, ...rest: unknown[]) => this.add('error', message, rest.at(-1));
  warn = (message: unknown, context?: unknown) => this.add('warn', message, context);
  debug = (message: unknown, context?: unknown) => this.add('debug', message, context);
  verbose = (message: unknown, context?: unknown) => this.add('verbose', message, context);
  fatal = (message: unknown, context?: unknown) => this.add('fatal', message, context);

  private add(level: Line['level'], message: unknown, context: unknown): void {
    this.lines.push({ level, message: String(message), context });
  }
}

describe('SwitchboardModule logging', () => {
  let upstream: SimulatedUpstream;
  let app: INestApplication;
  let logger: CapturingLogger;
  let sb: Switchboard;
  const now = 1_700_000_000_000;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', apiKey: KEYS.east },
        { name: 'west', apiKey: KEYS.west },
      ],
    });
  });
  afterAll(() => upstream.close());

  beforeEach(async () => {
    const ref = await Test.createTestingModule({
      imports: [
        SwitchboardModule.forRoot({
          deployments: (['east', 'west'] as const).map((name) => ({
            provider: 'openai' as const,
            name,
            baseURL: upstream.deployment(name).openaiBaseURL,
            apiKey: KEYS[name],
            models: [{ name: MODEL, tpm: 100_000, rpm: 1_000 }],
          })),
          failover: { attempts: 1 },
          clock: () => now,
        }),
      ],
    }).compile();
    logger = new CapturingLogger();
    app = ref.createNestApplication({ logger });
    await app.init();
    sb = app.get(Switchboard);
    logger.lines.length = 0;
  });
  afterEach(async () => {
    await app.close();
    upstream.reset();
  });

  const state = (deployment: string) => sb.deployments.get(deployment)!.models.get(MODEL)!;
  const ask = () =>
    sb.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] });

  it("logs through Nest's Logger with context Switchboard: a warning on mark-down", () => {
    state('east').markDown(5_000, 'test');
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(/^east\/gpt-4o-mini marked down for 5000 ms \(test\)$/),
        context: 'Switchboard',
      },
    ]);
  });

  it('warns when no deployment is healthy and one is tried on a best-effort basis', () => {
    state('east').markDown();
    state('west').markDown();
    logger.lines.length = 0;
    sb.selectDeployment({ model: MODEL });
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(
          /^No healthy deployment for gpt-4o-mini: trying (east|west)/,
        ),
        context: 'Switchboard',
      },
    ]);
  });

  it('logs nothing above debug for a successful call', async () => {
    await ask();
    await ask();
    expect(logger.lines.filter((l) => l.level !== 'debug' && l.level !== 'verbose')).toEqual([]);
  });

  it('never logs an API key, whatever happens to the call', async () => {
    upstream.deployment('east').fail({ kind: 'status', status: 429, retryAfterMs: 50 });
    state('west').markDown(1_000);
    await expect(ask()).rejects.toBeInstanceOf(RateLimitError);
    state('east').markUp();
    state('west').markUp();
    await ask();
    await ask();
    expect(logger.lines.some((l) => l.level === 'warn' && /rate_limit/.test(l.message))).toBe(true);
    const everything = JSON.stringify(logger.lines);
    expect(everything).not.toContain(KEYS.east);
    expect(everything).not.toContain(KEYS.west);
  });
});
