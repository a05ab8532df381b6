/**
 * Bounded work per request: every API body is scanned once for its nesting and its count of
 * values before anything parses it, so a body within the size limit cannot hold the event loop
 * (a 20 MB body of nested arrays once held it for seconds inside `JSON.parse`). The gateway in
 * process with keys, raw HTTP and the real OpenAI client; the proof is structural: which texts
 * `JSON.parse` was handed, and where the scan stopped.
 */
import OpenAI from 'openai';
import {
  bodyShapeProblem,
  MAX_BODY_CONTAINERS,
  MAX_BODY_DEPTH,
  MAX_BODY_VALUES,
} from '../../src/relay/body-checks';
import type { Gateway } from '../../sample/main';
import { gatewayWith } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const KEY = 'key-one';
const MB = 1024 * 1024;

/** A chat body of about `bytes` whose `metadata` is `inner` repeated inside brackets. */
function chatBody(filler: string): string {
  return `{"model":"${GPT}","messages":[{"role":"user","content":"hi"}],"metadata":${filler}}`;
}

describe('the body scan', () => {
  it('stops at the first bracket past the depth bound, however long the text', () => {
    const deep = '['.repeat(10_000_000);
    expect(bodyShapeProblem(deep)).toEqual({
      exceeds: 'depth',
      limit: MAX_BODY_DEPTH,
      at: MAX_BODY_DEPTH,
    });
  });

  it('counts containers and values outside strings only', () => {
    expect(bodyShapeProblem('{"a":"[[[,,,{{{"}', { depth: 1, values: 2 })).toBeUndefined();
    expect(bodyShapeProblem('[1,2,3]', { values: 3 })).toEqual({
      exceeds: 'values',
      limit: 3,
      at: 4,
    });
    expect(bodyShapeProblem('[[],[],[]]', { containers: 3 })).toEqual({
      exceeds: 'containers',
      limit: 3,
      at: 7,
    });
  });

  it('passes a body at every bound, refuses one value more', () => {
    const flat = `[${'0,'.repeat(MAX_BODY_VALUES - 2)}0]`;
    expect(bodyShapeProblem(flat)).toBeUndefined();
    expect(bodyShapeProblem(`[${'0,'.repeat(MAX_BODY_VALUES - 1)}0]`)?.exceeds).toBe('values');
    const boxes = `[${'[],'.repeat(MAX_BODY_CONTAINERS - 2)}[]]`;
    expect(bodyShapeProblem(boxes)).toBeUndefined();
    expect(bodyShapeProblem(`[${'[],'.repeat(MAX_BODY_CONTAINERS - 1)}[]]`)?.exceeds).toBe(
      'containers',
    );
  });
});

describe('the gateway', () => {
  let gateway: Gateway;
  let parsed: number[];
  let parse: jest.SpyInstance;

  beforeAll(async () => {
    gateway = await gatewayWith({ GATEWAY_API_KEYS: KEY });
  });
  afterAll(async () => {
    await gateway.close();
  });
  beforeEach(() => {
    parsed = [];
    const real = JSON.parse.bind(JSON);
    // Watches the lengths only; the parse is the real one.
    parse = jest.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?) => {
      parsed.push(text.length);
      return real(text, reviver) as unknown;
    });
  });
  afterEach(() => parse.mockRestore());

  async function post(path: string, body: string): Promise<Response> {
    return fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body,
    });
  }

  it.each([
    ['/v1/chat/completions', ''],
    // A body naming a stored response is read for its owner before the relay: scanned there too.
    ['/v1/responses', '"previous_response_id":"resp_1",'],
  ])('%s: a 20 MB body nested 10 M deep is a 400, never parsed', async (path, extra) => {
    const depth = 10_000_000;
    const body = `{${extra}"model":"${GPT}","input":"x","messages":[],"metadata":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    expect(body.length).toBeGreaterThan(20_000_000);
    const res = await post(path, body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: { message: string } };
    expect(answer.error.message).toBe(
      `The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`,
    );
    // Nothing near the body's size reached JSON.parse.
    expect(parsed.filter((n) => n > MB)).toEqual([]);
    const live = await fetch(`${gateway.url}/health/live`);
    expect(live.status).toBe(200);
  });

  it('a flat body of more values than the bound is a 400, never parsed', async () => {
    const body = chatBody(`[${'0,'.repeat(MAX_BODY_VALUES)}0]`);
    const res = await post('/v1/chat/completions', body);
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: { message: string } };
    expect(answer.error.message).toBe(
      `The request body holds more than ${MAX_BODY_VALUES} values.`,
    );
    expect(parsed.filter((n) => n > MB)).toEqual([]);
  });

  it('an ordinary call through the OpenAI client still answers', async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'hello' }],
      metadata: { nested: JSON.stringify({ a: [[[1]]] }) },
    });
    expect(completion.choices[0].message.role).toBe('assistant');
  });
});
