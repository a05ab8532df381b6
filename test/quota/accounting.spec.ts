import { ask, askClaude, CLAUDE, GPT, rig, type Rig } from '../support/upstream';

describe('token accounting matches what the upstream reported', () => {
  let r: Rig;
  beforeEach(async () => {
    // Uncapped calls charged no reservation: usage is what the upstream counted.
    r = await rig({
      openai: 1,
      anthropic: 1,
      quota: { tpm: 30_000, rpm: 300, outputReservation: 0 },
    });
  });
  afterEach(() => r.close());

  const usage = (name: string, model: string) => {
    const s = r.sb.deployments.get(name)!.models.get(model)!;
    return { tokens: s.tpmUsage, requests: s.rpmUsage };
  };
  const reported = (name: string) => r.upstream.deployment(name).stats.totalTokens;
  const long = 'Tell me a long story about load balancers. '.repeat(20);

  it('chat, not streaming', async () => {
    const c = await r.sb.chat.completions.create(ask(long));
    expect(usage('oai0', GPT)).toEqual({ tokens: c.usage!.total_tokens, requests: 1 });
    expect(usage('oai0', GPT).tokens).toBe(reported('oai0'));
  });

  it('chat, streaming (usage chunk requested by the switchboard)', async () => {
    const stream = await r.sb.chat.completions.create(ask(long, { stream: true }));
    for await (const _ of stream) void _;
    expect(usage('oai0', GPT)).toEqual({ tokens: reported('oai0'), requests: 1 });
  });

  it('messages, not streaming', async () => {
    const m = await r.sb.messages.create(askClaude(long));
    expect(usage('claude0', CLAUDE)).toEqual({
      tokens: m.usage.input_tokens + m.usage.output_tokens,
      requests: 1,
    });
    expect(usage('claude0', CLAUDE).tokens).toBe(reported('claude0'));
  });

  it('messages, streaming: the max_tokens reservation stands until the stream ends, then settles to actual', async () => {
    const stream = await r.sb.messages.create(askClaude(long, { stream: true }));
    const seen: number[] = [];
    for await (const event of stream) {
      if (event.type === 'message_start' || event.type === 'message_delta') {
        seen.push(usage('claude0', CLAUDE).tokens);
      }
    }
    expect(usage('claude0', CLAUDE)).toEqual({ tokens: reported('claude0'), requests: 1 });
    expect(seen.length).toBeGreaterThanOrEqual(2);
    // Foundry reserves output from max_tokens at admission and adjusts it when the answer ends.
    expect(seen.at(-1)).toBeGreaterThan(reported('claude0'));
  });

  it('charges the estimate synchronously, before the first await', () => {
    const pending = r.sb.chat.completions.create(ask('x'.repeat(400)));
    expect(usage('oai0', GPT)).toEqual({ tokens: 100, requests: 1 });
    return pending;
  });

  it('parse calls are accounted too', async () => {
    const { z } = await import('zod');
    const { zodResponseFormat } = await import('openai/helpers/zod');
    const c = await r.sb.chat.completions.parse({
      ...ask(long),
      response_format: zodResponseFormat(z.object({ a: z.string() }), 'a'),
    });
    expect(usage('oai0', GPT).tokens).toBe(c.usage!.total_tokens);
  });
});
