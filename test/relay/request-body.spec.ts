/**
 * A request body read once: `readRequestBody` gives the bytes and the parsed object (or why it
 * cannot be read), and `sb.fetch` handed that result decides on it without parsing the body again.
 */
import type { Switchboard } from 'nestjs-switchboard';
import { readRequestBody, REQUEST_BODY, type RelayRequestInit } from 'nestjs-switchboard/extend';
import type { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { GPT, received, startUpstream, switchboard } from './rig';

describe('readRequestBody', () => {
  it('gives the bytes as they came and the object parsed from them, escaped field names read as the upstream reads them', () => {
    const raw = Buffer.from('{"model":"gpt-4o-mini","previous\\u005fresponse_id":"resp_1"}');
    const read = readRequestBody(raw);
    expect(read.problem).toBeUndefined();
    expect(read.params).toEqual({ model: 'gpt-4o-mini', previous_response_id: 'resp_1' });
    expect(read.params === undefined ? undefined : (read as { raw: unknown }).raw).toBe(raw);
  });

  it('says why a body cannot be read: not JSON, not an object, too deep to parse at bounded cost', () => {
    expect(readRequestBody('{"model":').problem?.message).toMatch(
      /^The request body is not valid JSON/,
    );
    expect(readRequestBody('[1]').problem?.message).toBe('The request body must be a JSON object.');
    expect(readRequestBody(undefined).problem?.message).toBe(
      'The request body must be a JSON object.',
    );
    const deep = readRequestBody('['.repeat(100_000) + ']'.repeat(100_000));
    expect(deep.problem?.status).toBe(400);
    expect(deep.refused).toMatch(/^refused a request body: The request body is nested deeper/);
  });
});

describe('sb.fetch given a body read already', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(() => upstream.close());
  beforeEach(() => {
    sb = switchboard(upstream);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await sb.close();
    upstream.reset();
  });

  it('decides on that one parse: the text is parsed once in all, and init.body is not read', async () => {
    // A switchboard field (tenant) makes the relay send a body of its own upstream, so the only
    // parses of this text are the caller's and any the relay would add.
    const text = JSON.stringify({
      model: GPT,
      max_tokens: 8,
      tenant: 'acme',
      messages: [{ role: 'user', content: 'read once' }],
    });
    const parse = jest.spyOn(JSON, 'parse');
    const read = readRequestBody(text);
    const init: RelayRequestInit = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'not the body: never read',
      [REQUEST_BODY]: read,
    };
    const answer = await sb.fetch('http://sb/v1/chat/completions', init);
    expect(answer.status).toBe(200);
    expect(
      ((await answer.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
        .content,
    ).toBe('read once');
    expect(parse.mock.calls.filter(([arg]) => arg === text)).toHaveLength(1);
  });

  it('answers a body that could not be read with its problem, without reading init.body or calling upstream', async () => {
    const init: RelayRequestInit = {
      method: 'POST',
      body: JSON.stringify({ model: GPT, messages: [] }),
      [REQUEST_BODY]: readRequestBody('[]'),
    };
    const answer = await sb.fetch('http://sb/v1/chat/completions', init);
    expect(answer.status).toBe(400);
    expect(JSON.stringify(await answer.json())).toContain(
      'The request body must be a JSON object.',
    );
    expect(Object.values(received(upstream)).reduce((a, b) => a + b, 0)).toBe(0);
  });
});
