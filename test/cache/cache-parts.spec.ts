/**
 * The response cache's parts on their own: its key, its verdict on answers, its memory bound,
 * what it accepts from the shared store, and 10 000 calls over 50 tenants.
 */
import { createSwitchboard } from 'nestjs-switchboard';
import { seededRandom } from 'nestjs-switchboard/testing';
import { copyPlan } from '../../src/cache/answer-copy';
import { answerVerdict, StreamVerdict } from '../../src/cache/answer-verdict';
import { entrySize, readEntry, type CacheEntry } from '../../src/cache/cache-entry';
import { cacheOffByHeaders } from '../../src/cache/cache-headers';
import { cacheKey, canonicalJson } from '../../src/cache/cache-key';
import { CacheTelemetry } from '../../src/cache/cache-telemetry';
import { MemoryEntries } from '../../src/cache/memory-entries';
import { keptRequest, requestOf, type RequestKey } from '../../src/cache/request-print';
import { ResponseCache, type CacheCall } from '../../src/cache/response-cache';
import { chatCompletions } from '../../src/providers/openai/chat';
import type { ApiAdapter } from '../../src/providers/adapter';
import type { PreparedRequest } from '../../src/providers/attempt-types';
import type { Answer, Deployment } from '../../src/registry/deployment';
import { completion, json, scriptedUpstream } from '../support/scripted-upstream';
import { ask, GPT } from '../support/upstream';

describe('the key', () => {
  it('is the same for the same body in any key order, and differs by tenant, operation and content', () => {
    const a = { model: GPT, messages: [{ role: 'user', content: 'hi' }], temperature: 0 };
    const b = { temperature: 0, messages: [{ content: 'hi', role: 'user' }], model: GPT };
    expect(canonicalJson(b, 0)).toBe(canonicalJson(a, 0));
    const key = cacheKey('acme', 'chat.completions.create', a)!;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(cacheKey('acme', 'chat.completions.create', b)).toBe(key);
    expect(cacheKey('globex', 'chat.completions.create', a)).not.toBe(key);
    expect(cacheKey('acme', 'chat.completions.parse', a)).not.toBe(key);
    expect(cacheKey('acme', 'chat.completions.create', { ...a, temperature: 1 })).not.toBe(key);
    // A tenant cannot run into another's digest by moving the separator.
    expect(cacheKey('a', 'b\0c', a)).not.toBe(cacheKey('a\0b', 'c', a));
  });

  it('is not taken over a body nested past 64 levels', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 70; i++) deep = [deep];
    expect(cacheKey('', 'op', { model: GPT, deep })).toBeUndefined();
  });
});

describe('the verdict on answers', () => {
  const chat = (reason: string, message: object = { content: 'x' }) => ({
    choices: [{ index: 0, message, finish_reason: reason }],
  });
  it('keeps complete successes only, and tells tool calls apart', () => {
    expect(answerVerdict('chat.completions', chat('stop'))).toEqual({
      complete: true,
      tools: false,
    });
    expect(answerVerdict('chat.completions', chat('length')).complete).toBe(false);
    expect(answerVerdict('chat.completions', chat('content_filter')).complete).toBe(false);
    expect(answerVerdict('chat.completions', chat('tool_calls')).tools).toBe(true);
    expect(answerVerdict('responses', { status: 'incomplete', output: [] }).complete).toBe(false);
    expect(
      answerVerdict('responses', { status: 'completed', output: [{ type: 'function_call' }] }),
    ).toEqual({ complete: true, tools: true });
    expect(answerVerdict('messages', { stop_reason: 'max_tokens', content: [] }).complete).toBe(
      false,
    );
    expect(answerVerdict('messages', { stop_reason: 'tool_use', content: [] }).tools).toBe(true);
    expect(answerVerdict('moderations', {}).complete).toBe(false);
  });

  it('a stream is complete only once its closing events came', () => {
    const judge = new StreamVerdict('messages');
    judge.see({ type: 'message_start' });
    judge.see({ type: 'content_block_delta' });
    expect(judge.verdict().complete).toBe(false);
    judge.see({ type: 'message_delta', delta: { stop_reason: 'end_turn' } });
    judge.see({ type: 'message_stop' });
    expect(judge.verdict()).toEqual({ complete: true, tools: false });
    const cut = new StreamVerdict('chat.completions');
    cut.see({ choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }] });
    expect(cut.verdict().complete).toBe(false);
    cut.see({ choices: [{ index: 0, delta: {}, finish_reason: 'length' }] });
    expect(cut.verdict().complete).toBe(false);
    const failed = new StreamVerdict('responses');
    failed.see({ type: 'response.incomplete' });
    failed.see({ type: 'response.completed', response: { status: 'completed', output: [] } });
    expect(failed.verdict().complete).toBe(false);
  });
});

describe('the memory bound', () => {
  const entry = (key: string, size: number, expires = Infinity): CacheEntry => ({
    v: 1,
    key,
    model: GPT,
    kind: 'json',
    deployment: 'd',
    tags: [],
    expires,
    body: 'x'.repeat(size),
  });
  it('drops the least recently used past maxBytes, and an expired entry when read', () => {
    const m = new MemoryEntries(10_000);
    m.put(entry('a', 2_000));
    m.put(entry('b', 2_000));
    expect(m.get('a', 0)).toBeDefined();
    m.put(entry('c', 2_000));
    expect(m.bytes).toBeLessThanOrEqual(10_000);
    expect(m.get('b', 0)).toBeUndefined();
    expect(m.get('a', 0)).toBeDefined();
    m.put(entry('huge', 20_000));
    expect(m.get('huge', 0)).toBeUndefined();
    m.put(entry('old', 10, 5));
    expect(m.get('old', 4)).toBeDefined();
    expect(m.get('old', 5)).toBeUndefined();
  });
});

describe('the request index', () => {
  const kept = (request: RequestKey) => keptRequest(request)!;
  const entry = (key: string, size: number): CacheEntry => ({
    v: 1,
    key,
    model: GPT,
    kind: 'json',
    deployment: 'd',
    tags: [],
    expires: 100,
    body: 'x'.repeat(size),
  });
  const req = (content: string, tenant = 'acme', extra: object = {}) =>
    requestOf(tenant, 'chat.completions', 'create', { ...ask(content), ...extra });

  it('lets every entry go at clear(), as a closed switchboard does', () => {
    const m = new MemoryEntries(20_000);
    m.put(entry('a', 1_000), kept(req('a')));
    m.put(entry('b', 1_000));
    m.clear();
    expect([m.size, m.bytes]).toEqual([0, 0]);
    expect(m.get('a', 0)).toBeUndefined();
    expect(m.byRequest(req('a'), 0)).toBeUndefined();
    m.put(entry('c', 1_000));
    expect(m.bytes).toBe(entrySize(entry('c', 1_000)));
  });

  it('finds an entry by a request it answers while it is held, and counts the copy in its bytes', () => {
    const m = new MemoryEntries(20_000);
    m.put(entry('a', 1_000), kept(req('a')));
    const plain = entrySize(entry('a', 1_000));
    const copy = m.held('a', 0)!.bytes - plain;
    expect(copy).toBeGreaterThan(0);
    expect(m.byRequest(req('a'), 0)?.entry.key).toBe('a');
    m.put(entry('b', 1_000));
    expect(m.bytes).toBe(2 * plain + copy);
    m.alias(m.held('b', 0)!, req('a'));
    // One request finds one entry: the newer.
    expect(m.byRequest(req('a'), 0)?.entry.key).toBe('b');
    expect([m.held('a', 0)!.bytes, m.held('b', 0)!.bytes, m.bytes]).toEqual([
      plain,
      plain + copy,
      2 * plain + copy,
    ]);
    m.put(entry('c', 4_000));
    expect(m.get('a', 0)).toBeDefined();
    expect(m.get('c', 0)).toBeDefined();
    m.put(entry('d', 4_000));
    // b, the least recently used, went: its request with it.
    expect(m.get('b', 0)).toBeUndefined();
    expect(m.byRequest(req('a'), 0)).toBeUndefined();
    m.put(entry('e', 10), kept(req('e')));
    expect(m.byRequest(req('e'), 100)).toBeUndefined();
    expect(m.get('e', 0)).toBeUndefined();
  });

  it('compares requests in full: key order and undefined members aside, every value counts', () => {
    const m = new MemoryEntries(1_000_000);
    const params = { model: GPT, messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 };
    m.put(entry('k', 10), kept(requestOf('acme', 'chat.completions', 'create', params)));
    // The caller's params changing later do not change what the entry answers.
    params.messages[0]!.content = 'changed';
    const find = (body: unknown, tenant = 'acme', op = 'create') =>
      m.byRequest(requestOf(tenant, 'chat.completions', op, body), 0)?.entry.key;
    const same = { temperature: 0.5, messages: [{ content: 'hi', role: 'user' }], model: GPT };
    expect(find(same)).toBe('k');
    expect(find({ ...same, top_p: undefined })).toBe('k');
    expect(find({ ...same, temperature: 0.50001 })).toBeUndefined();
    expect(
      find({ ...same, messages: [{ content: 'hi', role: 'user', name: 'x' }] }),
    ).toBeUndefined();
    expect(find({ ...same, messages: [...same.messages, ...same.messages] })).toBeUndefined();
    expect(find({ ...same, messages: { 0: same.messages[0] } })).toBeUndefined();
    expect(find(same, 'globex')).toBeUndefined();
    expect(find(same, 'acme', 'parse')).toBeUndefined();
    class Params {
      model = GPT;
      messages = same.messages;
      temperature = 0.5;
    }
    expect(find(new Params())).toBeUndefined();
    // A polluted Object.prototype lends a body no member that a kept copy holds as its own.
    const flat = { model: GPT, input: 'hi' };
    m.put(
      entry('seeded', 10),
      kept(requestOf('acme', 'embeddings', 'create', { ...flat, seed: 1 })),
    );
    const proto = Object.prototype as Record<string, unknown>;
    proto.seed = 1;
    try {
      expect(m.byRequest(requestOf('acme', 'embeddings', 'create', flat), 0)).toBeUndefined();
    } finally {
      delete proto.seed;
    }
    expect(
      m.byRequest(requestOf('acme', 'embeddings', 'create', { ...flat, seed: 1 }), 0),
    ).toBeDefined();
    // A body that is not plain JSON data is found by its key only.
    const dated = { ...same, metadata: { at: new Date(0) } };
    expect(keptRequest(requestOf('acme', 'chat.completions', 'create', dated))).toBeUndefined();
    m.put(entry('dated', 10));
    m.alias(m.held('dated', 0)!, requestOf('acme', 'chat.completions', 'create', dated));
    expect(find(dated)).toBeUndefined();
    expect(m.get('dated', 0)).toBeDefined();
  });

  it('requests of one print are told apart, a few per print', () => {
    const m = new MemoryEntries(1_000_000);
    const forged = (content: string) => ({ ...req(content), print: 7 });
    for (let i = 0; i < 10; i++) m.put(entry(`k${i}`, 10), kept(forged(`p${i}`)));
    expect(m.byRequest(forged('p0'), 0)).toBeUndefined();
    expect(m.byRequest(forged('p1'), 0)).toBeUndefined();
    for (let i = 2; i < 10; i++) expect(m.byRequest(forged(`p${i}`), 0)?.entry.key).toBe(`k${i}`);
    expect(m.get('k0', 0)).toBeDefined();
  });
});

describe('the copy of a kept answer', () => {
  it('shares no object with its template, keeps key order and own __proto__ members', () => {
    const template = JSON.parse(
      '{"id":"x","choices":[{"message":{"content":"a"},"n":[1,2]}],"data":[[0.5,0.25]],' +
        '"meta":{"__proto__":{"polluted":true},"k":1},"empty":{},"none":null}',
    ) as Record<string, any>;
    const copy = copyPlan(template);
    const a = copy(template) as typeof template;
    expect(a).toEqual(template);
    expect(Object.keys(a)).toEqual(Object.keys(template));
    expect(a.choices).not.toBe(template.choices);
    expect(a.choices[0].message).not.toBe(template.choices[0].message);
    expect(a.choices[0].n).not.toBe(template.choices[0].n);
    expect(a.data[0]).not.toBe(template.data[0]);
    expect(a.empty).not.toBe(template.empty);
    expect(Object.getPrototypeOf(a.meta)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(a.meta, '__proto__')).toBe(true);
    expect(a.meta.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    a.choices[0].message.content = 'changed';
    a.data[0][0] = 9;
    expect(copy(template)).toEqual(JSON.parse(JSON.stringify(template)));
    expect(template.choices[0].message.content).toBe('a');
    expect(copyPlan('text')('text')).toBe('text');
  });
});

describe('what is read from the shared store', () => {
  const expect0 = { key: 'k', model: GPT, kind: 'events' as const, now: 1_000, ttl: 60_000 };
  const good = {
    v: 1,
    key: 'k',
    model: GPT,
    kind: 'events',
    deployment: 'd',
    tags: ['eu'],
    expires: 2_000,
    usage: { input: 1, output: 2 },
    events: ['{"a":1}'],
  };
  const read = (patch: object) => readEntry(JSON.stringify({ ...good, ...patch }), expect0);
  it('accepts a well-formed entry, and refuses each forged field', () => {
    expect(typeof read({})).toBe('object');
    expect(read({ v: 2 })).toMatch(/version/);
    expect(read({ key: 'other' })).toMatch(/another key/);
    expect(read({ model: 'gpt-4o' })).toMatch(/another model/);
    expect(read({ kind: 'json' })).toMatch(/kind/);
    expect(read({ deployment: 7 })).toMatch(/deployment/);
    expect(read({ tags: ['x'.repeat(65)] })).toMatch(/tags/);
    expect(read({ expires: 'soon' })).toMatch(/expiry/);
    expect(read({ expires: 500 })).toBe('expired');
    expect(read({ expires: 1e15 })).toMatch(/later than the ttl/);
    expect(read({ usage: { input: -1, output: 0 } })).toMatch(/usage/);
    expect(read({ usage: { input: 1, output: 2, cacheRead: 'x' } })).toMatch(/usage/);
    expect(read({ events: [] })).toMatch(/events/);
    expect(read({ events: ['not json'] })).toMatch(/JSON object/);
    expect(read({ events: [7] })).toMatch(/text/);
    expect(readEntry('x'.repeat(1024 * 1024 + 1), expect0)).toMatch(/longer/);
    expect(readEntry('[1]', expect0)).toMatch(/not an object/);
    const sse = { ...expect0, kind: 'sse' as const };
    const ok = readEntry(
      JSON.stringify({ ...good, kind: 'sse', events: ['data: [DONE]\n\n'] }),
      sse,
    );
    expect(typeof ok).toBe('object');
    expect(
      readEntry(JSON.stringify({ ...good, kind: 'sse', events: ['HTTP/1.1 200 OK\n\n'] }), sse),
    ).toMatch(/SSE/);
    // Only the last event may lack its blank line.
    const tail = ['data: {"a":1}\n\n', 'data: [DONE]'];
    expect(typeof readEntry(JSON.stringify({ ...good, kind: 'sse', events: tail }), sse)).toBe(
      'object',
    );
    const early = ['data: {"a":1}', 'data: [DONE]\n\n'];
    expect(readEntry(JSON.stringify({ ...good, kind: 'sse', events: early }), sse)).toMatch(/SSE/);
  });
});

describe('turning it off', () => {
  it('by headers: cache-control no-store, x-switchboard-cache: off', () => {
    const h = (headers: Record<string, string>) => (name: string) => headers[name];
    expect(cacheOffByHeaders(h({ 'cache-control': 'no-store' }))).toBe(true);
    expect(cacheOffByHeaders(h({ 'cache-control': 'max-age=0, No-Store' }))).toBe(true);
    expect(cacheOffByHeaders(h({ 'cache-control': 'no-cache' }))).toBe(false);
    expect(cacheOffByHeaders(h({ 'x-switchboard-cache': 'OFF' }))).toBe(true);
    expect(cacheOffByHeaders(h({}))).toBe(false);
  });

  it('options are checked: a bad ttl names the field; a per-call cache must be a boolean', async () => {
    const deployments = [
      {
        provider: 'openai' as const,
        name: 'd',
        baseURL: 'http://127.0.0.1:65000/v1',
        apiKey: 'k',
        models: [{ name: GPT }],
      },
    ];
    expect(() => createSwitchboard({ deployments, cache: { ttl: -1 } })).toThrow(/cache\.ttl/);
    expect(() => createSwitchboard({ deployments, cache: { ttl: 1, maxBytes: 0 } })).toThrow(
      /cache\.maxBytes/,
    );
    expect(() =>
      createSwitchboard({ deployments, cache: { ttl: 1, extra: true } as never }),
    ).toThrow(/cache/);
    const sb = createSwitchboard({ deployments, cache: { ttl: 1 } });
    await expect(sb.chat.completions.create(ask('x', { cache: 'no' as never }))).rejects.toThrow(
      /cache must be false/,
    );
    await sb.close();
  });
});

describe('tool calls', () => {
  it('are kept only with cacheToolCalls', async () => {
    const toolAnswer = {
      ...(completion() as object),
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    };
    const up = await scriptedUpstream((_req, res) => json(res, 200, toolAnswer));
    try {
      for (const cacheToolCalls of [false, true]) {
        const sb = createSwitchboard({
          deployments: [
            {
              provider: 'openai',
              name: 'd',
              baseURL: `${up.origin}/v1`,
              apiKey: 'k',
              models: [{ name: GPT }],
            },
          ],
          cache: { ttl: 60_000, cacheToolCalls },
        });
        const before = up.requests.length;
        await sb.chat.completions.create(ask('call a tool'));
        await sb.chat.completions.create(ask('call a tool'));
        expect(up.requests.length - before).toBe(cacheToolCalls ? 1 : 2);
        await sb.close();
      }
    } finally {
      await up.close();
    }
  });
});

describe('10 000 calls over 50 tenants', () => {
  it('serves no tenant an answer made for another', async () => {
    const random = seededRandom(47);
    const deployment = { name: 'd', tags: [], provider: 'openai' } as unknown as Deployment;
    const cache = new ResponseCache(
      { ttl: 3_600_000, maxBytes: 4 * 1024 * 1024 },
      {
        clock: () => 0,
        logger: console,
        telemetry: new CacheTelemetry([GPT]),
        bytesOf: () => undefined,
        price: () => undefined,
      },
    );
    const adapter = chatCompletions as unknown as ApiAdapter;
    let hits = 0;
    let crossed = 0;
    for (let i = 0; i < 10_000; i++) {
      const tenant = `t${Math.floor(random() * 50)}`;
      // Few prompts: the same words come from many tenants.
      const body = ask(`prompt ${Math.floor(random() * 40)}`);
      const call: CacheCall = {
        adapter,
        opName: 'create',
        body,
        tenant,
        required: undefined,
        stream: false,
        off: false,
        deployment,
      };
      let sent = false;
      const answer = await cache.serve(call, undefined, (decided) => {
        sent = true;
        const request = cache.recording(decided, {
          body,
          stream: false,
        } as unknown as PreparedRequest);
        const data = {
          ...(completion() as object),
          id: tenant,
          choices: [
            { index: 0, message: { role: 'assistant', content: tenant }, finish_reason: 'stop' },
          ],
        };
        request.track!.seen(data, body, deployment, adapter);
        return Promise.resolve({ data } as Answer);
      });
      const data = answer.data as { id: string };
      if (!sent) hits++;
      if (data.id !== tenant) crossed++;
    }
    expect(hits).toBeGreaterThan(5_000);
    expect(crossed).toBe(0);
  });
});
