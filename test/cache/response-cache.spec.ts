import OpenAI from 'openai';
import { ask, askClaude, CLAUDE, GPT, requestCounts, rig, type Rig } from '../support/upstream';

const TTL = 60_000;

/** A clock the cache reads; the simulated deployments keep the real one. */
function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const total = (r: Rig) => Object.values(requestCounts(r.upstream)).reduce((a, b) => a + b, 0);

describe('response cache', () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
  });

  it('answers the same call again within the ttl without a request or a charge; after it, asks again', async () => {
    const clock = manualClock();
    r = await rig({ openai: 1, cache: { ttl: TTL }, clock: clock.now });
    const first = await r.sb.chat.completions.create(ask('What is 2 + 2?'));
    const usage = () => {
      const { tpm, rpm } = r!.sb.stats().oai0![GPT]!;
      return { tpm, rpm };
    };
    const used = usage();
    const second = await r.sb.chat.completions.create(ask('What is 2 + 2?')).withResponse();
    expect(total(r)).toBe(1);
    expect(second.data).toEqual(first);
    expect(second.response.headers.get('x-switchboard-cache')).toBe('hit');
    // Nothing charged for the second: the model's usage is what the first left.
    expect(usage()).toEqual(used);
    clock.advance(TTL + 1);
    await r.sb.chat.completions.create(ask('What is 2 + 2?'));
    expect(total(r)).toBe(2);
  });

  it('keeps tenants apart, and a call requiring tags off entries made without them', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    await r.sb.chat.completions.create(ask('hi', { tenant: 'acme' }));
    await r.sb.chat.completions.create(ask('hi', { tenant: 'globex' }));
    expect(total(r)).toBe(2);
    await r.sb.chat.completions.create(ask('hi', { tenant: 'acme' }));
    expect(total(r)).toBe(2);
  });

  it('cache: false neither serves nor keeps', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    await r.sb.chat.completions.create(ask('hi', { cache: false }));
    await r.sb.chat.completions.create(ask('hi'));
    await r.sb.chat.completions.create(ask('hi', { cache: false }));
    expect(total(r)).toBe(3);
    await r.sb.chat.completions.create(ask('hi'));
    expect(total(r)).toBe(3);
  });

  it('a caller that changes its answer changes no later answer: each hit is a copy of its own', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    const first = await r.sb.chat.completions.create(ask('copy me'));
    const kept = structuredClone(first);
    first.choices[0]!.message.content = 'changed by the first caller';
    const hit = await r.sb.chat.completions.create(ask('copy me'));
    expect(hit).toEqual(kept);
    hit.choices[0]!.message.content = 'changed by the second caller';
    hit.choices.push(hit.choices[0]!);
    (hit.usage as unknown as Record<string, unknown>).total_tokens = -1;
    const again = await r.sb.chat.completions.create(ask('copy me'));
    expect(again).toEqual(kept);
    expect(again.choices[0]).not.toBe(hit.choices[0]);
    expect(total(r)).toBe(1);
    const read = async () => {
      const events: { choices: { delta: { content?: string | null } }[] }[] = [];
      for await (const e of await r!.sb.chat.completions.create(ask('s', { stream: true }))) {
        events.push(structuredClone(e));
        for (const choice of e.choices) choice.delta.content = 'changed while read';
      }
      return events;
    };
    const events = await read();
    expect(await read()).toEqual(events);
    expect(await read()).toEqual(events);
    expect(total(r)).toBe(2);
  });

  it('params the caller changes while its call is out do not become a request the entry answers', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    // Texts the request's print cannot tell apart (it samples long strings): only the kept copy can.
    const first = 'a'.repeat(170);
    const after = `aaaaab${'a'.repeat(164)}`;
    const params = ask(first);
    const pending = r.sb.chat.completions.create(params);
    params.messages[0]!.content = after;
    await pending;
    await r.sb.chat.completions.create(ask(after));
    expect(total(r)).toBe(2);
  });

  it('the same body with its keys in another order is the same call, in any sequence', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    const a = {
      model: GPT,
      messages: [{ role: 'user' as const, content: 'order' }],
      temperature: 0,
    };
    const b = {
      temperature: 0,
      messages: [{ content: 'order', role: 'user' as const }],
      model: GPT,
    };
    const answers = [];
    for (const body of [a, b, a, b, b, a]) answers.push(await r.sb.chat.completions.create(body));
    expect(total(r)).toBe(1);
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    await r.sb.chat.completions.create({ ...b, temperature: 1 });
    expect(total(r)).toBe(2);
  });

  it('replays a chat stream event for event, and the helper final object equals', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    const read = async () => {
      const events: unknown[] = [];
      for await (const e of await r!.sb.chat.completions.create(
        ask('stream me', { stream: true }),
      )) {
        events.push(e);
      }
      return events;
    };
    const first = await read();
    const second = await read();
    expect(total(r)).toBe(1);
    expect(second).toEqual(first);
    const h1 = await r.sb.chat.completions.stream(ask('helper')).finalChatCompletion();
    const h2 = await r.sb.chat.completions.stream(ask('helper')).finalChatCompletion();
    expect(total(r)).toBe(2);
    expect(h2).toEqual(h1);
  });

  it('replays Messages streams and finalMessage()', async () => {
    r = await rig({ openai: 0, anthropic: 1, cache: { ttl: TTL } });
    const h1 = await r.sb.messages.stream(askClaude('helper')).finalMessage();
    const h2 = await r.sb.messages.stream(askClaude('helper')).finalMessage();
    expect(total(r)).toBe(1);
    expect(h2).toEqual(h1);
    expect(CLAUDE).toBeDefined();
  });

  it('sb.fetch replays the recorded SSE bytes, [DONE] included', async () => {
    r = await rig({ openai: 1, cache: { ttl: TTL } });
    const client = new OpenAI({ apiKey: 'unused', baseURL: 'http://sb/v1', fetch: r.sb.fetch });
    const raw = async () => {
      const res = await r!.sb.fetch('http://sb/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ask('wire', { stream: true })),
      });
      return res.text();
    };
    const a = await raw();
    const b = await raw();
    expect(total(r)).toBe(1);
    expect(b).toBe(a);
    expect(b).toContain('data: [DONE]');
    expect(client).toBeDefined();
  });
});
