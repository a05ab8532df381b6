import { Test } from '@nestjs/testing';
import { Switchboard, SwitchboardError, SwitchboardModule } from 'nestjs-switchboard';
import { ask, askClaude, CLAUDE, GPT, requestCounts, rig, type Rig } from '../support/upstream';
import '../support/quiet-logs';

const total = (r: Rig) => Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b, 0);

describe('close() means closed', () => {
  let r: Rig;
  afterEach(() => r.close());

  it('every call after close() rejects at once with a SwitchboardError that says what to do', async () => {
    r = await rig({ openai: 2, anthropic: 1 });
    await r.sb.close();
    const calls = [
      r.sb.chat.completions.create(ask('x')),
      r.sb.chat.completions.parse(ask('x')),
      r.sb.messages.create(askClaude('x')),
      r.sb.messages.parse(askClaude('x')),
    ];
    const errors = await Promise.all(
      calls.map((c) =>
        c.then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    for (const error of errors) {
      expect(error).toBeInstanceOf(SwitchboardError);
      expect((error as Error).message).toMatch(
        /^switchboard is closed: sb\.\w+(\.\w+)*\(\) was called after close\(\)/,
      );
      expect((error as Error).message).toMatch(/build a new switchboard/);
    }
    expect((errors[2] as Error).message).toContain('sb.messages.create()');
    expect(total(r)).toBe(0);
    await r.sb.close(); // idempotent
  });

  it('a call in flight when close() is called finishes, failover included', async () => {
    r = await rig({ openai: 2, simulated: { latency: 100 } });
    const first = r.sb.selectDeployment({ model: GPT, sessionId: 's' }).name;
    r.upstream.deployment(first).fail({ kind: 'status', status: 500 });
    const call = r.sb.chat.completions.create(ask('in flight', { session_id: 's' }));
    await r.upstream.deployment(first).waitFor((d) => d.stats.inFlight === 1);
    await r.sb.close();
    const completion = await call;
    expect(completion.choices[0]!.message.content).toContain('in flight');
    expect(total(r)).toBe(2);
    await expect(r.sb.chat.completions.create(ask('late'))).rejects.toThrow(
      /switchboard is closed/,
    );
    expect(total(r)).toBe(2);
  });

  it('a stream in flight when close() is called ends cleanly, its usage charged', async () => {
    r = await rig({ openai: 0, anthropic: 1, simulated: { chunkDelay: 5 } });
    const stream = await r.sb.messages.create(askClaude('one two three four', { stream: true }));
    await r.sb.close();
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    const state = r.sb.deployments.get('claude0')!.models.get(CLAUDE)!;
    expect(state.tpmUsage).toBe(r.upstream.deployment('claude0').stats.totalTokens);
    expect(state.isCooling()).toBe(false);
  });

  it('in Nest, calls after app.close() reject the same way', async () => {
    r = await rig({ openai: 1 });
    const ref = await Test.createTestingModule({
      imports: [
        SwitchboardModule.forRoot({
          deployments: [
            {
              provider: 'openai',
              name: 'east',
              baseURL: r.upstream.deployment('oai0').openaiBaseURL,
              apiKey: 'k',
              models: [{ name: GPT }],
            },
          ],
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const sb = app.get(Switchboard);
    await sb.chat.completions.create(ask('before'));
    await app.close();
    await expect(sb.chat.completions.create(ask('after'))).rejects.toBeInstanceOf(SwitchboardError);
    expect(total(r)).toBe(1);
  });
});
