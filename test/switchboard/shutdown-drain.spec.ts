import type { AddressInfo } from 'node:net';
import { get, type Server } from 'node:http';
import {
  Controller,
  Get,
  Injectable,
  Module,
  type BeforeApplicationShutdown,
  type INestApplication,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  Switchboard,
  SwitchboardError,
  SwitchboardModule,
  createSwitchboard,
} from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';

const GPT = 'gpt-4o-mini';

/** A promise and its resolve, to let a test decide when something happens. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** GET over a connection of its own that closes after the answer (no keep-alive to wait out). */
function getOnce(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** What the test controls: when the handler has the request, and when it may call the model. */
const gates = { arrived: deferred(), proceed: deferred(), closing: deferred() };

@Controller('slow')
class SlowController {
  constructor(private readonly sb: Switchboard) {}

  // Accepts the request, then makes its model call only when the test says so (after close began).
  @Get()
  async slow(): Promise<{ answer: string | null }> {
    gates.arrived.resolve();
    await gates.proceed.promise;
    const completion = await this.sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'accepted before close' }],
    });
    return { answer: completion.choices[0]!.message.content };
  }
}

/** Tells the test that Nest's close() has run every destroy hook and is about to stop HTTP. */
@Injectable()
class ClosingProbe implements BeforeApplicationShutdown {
  beforeApplicationShutdown(): void {
    gates.closing.resolve();
  }
}

@Module({ providers: [ClosingProbe] })
class ProbeModule {}

describe('shutdown drains: the switchboard closes after the HTTP server stopped', () => {
  let upstream: SimulatedUpstream;
  let app: INestApplication | undefined;

  beforeEach(async () => {
    gates.arrived = deferred();
    gates.proceed = deferred();
    gates.closing = deferred();
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }] });
  });
  afterEach(async () => {
    gates.proceed.resolve();
    await app?.close();
    app = undefined;
    await upstream.close();
  });

  it('a request accepted before app.close() that calls the model afterwards gets its 200', async () => {
    const ref = await Test.createTestingModule({
      imports: [
        ProbeModule,
        SwitchboardModule.forRoot({
          deployments: [
            {
              provider: 'openai',
              name: 'east',
              baseURL: upstream.deployment('east').openaiBaseURL,
              apiKey: 'sk-east',
              models: [{ name: GPT, tpm: 100_000, rpm: 1_000 }],
            },
          ],
        }),
      ],
      controllers: [SlowController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const sb = app.get(Switchboard);
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    const url = `http://127.0.0.1:${port}/slow`;

    const answer = getOnce(url);
    await gates.arrived.promise;
    const closed = app.close();
    // Every destroy hook has run: the old lifecycle had closed the switchboard by now.
    await gates.closing.promise;
    gates.proceed.resolve();

    const res = await answer;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      answer: expect.stringContaining('accepted before close'),
    });
    await closed;
    app = undefined;
    expect(upstream.deployment('east').stats.requests).toBe(1);

    // Afterwards: the server takes no new connection, and the switchboard says it is closed.
    await expect(getOnce(url)).rejects.toThrow(/ECONNREFUSED/);
    const error = await sb.chat.completions
      .create({ model: GPT, messages: [{ role: 'user', content: 'late' }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({ code: 'unavailable', status: 503 });
    expect((error as Error).message).toMatch(/^switchboard is closed/);
    expect(upstream.deployment('east').stats.requests).toBe(1);
  });

  it('a module closed without an HTTP server (standalone context) closes the switchboard too', async () => {
    const ref = await Test.createTestingModule({
      imports: [
        SwitchboardModule.forRoot({
          deployments: [
            {
              provider: 'openai',
              name: 'east',
              baseURL: upstream.deployment('east').openaiBaseURL,
              apiKey: 'sk-east',
              models: [{ name: GPT }],
            },
          ],
        }),
      ],
    }).compile();
    await ref.init();
    const sb = ref.get(Switchboard);
    await ref.close();
    await expect(
      sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ code: 'unavailable', status: 503 });
  });

  it('standalone createSwitchboard is unaffected: calls until close(), the closed error after', async () => {
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.deployment('east').openaiBaseURL,
          apiKey: 'sk-east',
          models: [{ name: GPT }],
        },
      ],
    });
    const ok = await sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'standalone' }],
    });
    expect(ok.choices[0]!.message.content).toContain('standalone');
    await sb.close();
    await expect(
      sb.chat.completions.create({ model: GPT, messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ code: 'unavailable', status: 503 });
  });
});
