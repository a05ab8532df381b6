/**
 * With keys, the key is the bound of what a client may do, whatever else it sends: tenant names
 * do not multiply its per-key limits, and a stored response is the key's that made it (another
 * key gets 404, to read it or to build on it). Gateways in process on free ports, under express
 * and fastify, driven by the real OpenAI client.
 */
import OpenAI from 'openai';
import type { Gateway } from '../../sample/main';
import { Simulation } from '../../sample/simulation/simulation';
import { gatewayWith } from '../support/gateway';

const GPT = 'gpt-4o-mini';
const KEYS = ['key-alpha', 'key-beta'];

describe.each(['express', 'fastify'] as const)('with keys, under %s', (platform) => {
  let gateway: Gateway;
  const upstreamRequests = (): number =>
    gateway.app.get(Simulation).upstream.deployments.reduce((sum, d) => sum + d.stats.requests, 0);

  describe('and four requests per minute per key', () => {
    beforeAll(async () => {
      gateway = await gatewayWith(
        { GATEWAY_API_KEYS: KEYS.join(','), GATEWAY_KEY_RPM: '4' },
        { platform },
      );
    });
    afterAll(() => gateway?.close());

    it("twelve tenant names under one key stay within that key's requests per minute", async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${KEYS[0]}`,
            'x-switchboard-tenant': `team-${i}`,
          },
          body: JSON.stringify({
            model: GPT,
            max_tokens: 4,
            messages: [{ role: 'user', content: 'x' }],
          }),
        });
        statuses.push(answer.status);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(4);
      expect(statuses.filter((s) => s === 429)).toHaveLength(8);
      expect(upstreamRequests()).toBe(4);
    });
  });

  describe('and stored responses', () => {
    beforeAll(async () => {
      gateway = await gatewayWith({ GATEWAY_API_KEYS: KEYS.join(',') }, { platform });
    });
    afterAll(() => gateway?.close());

    it("a stored response is the key's that made it: another key gets 404 to read it or build on it", async () => {
      const client = (key: string) =>
        new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
      const maker = client(KEYS[0]!);
      const other = client(KEYS[1]!);
      // One created whole, one streamed: the gateway reads the id from either answer.
      const whole = await maker.responses.create({ model: GPT, input: 'remember this' });
      const stream = await maker.responses.create({ model: GPT, input: 'and this', stream: true });
      let streamed: string | undefined;
      for await (const event of stream) {
        if (event.type === 'response.created') streamed = event.response.id;
      }
      expect(streamed).toEqual(expect.any(String));
      for (const id of [whole.id, streamed!]) {
        expect((await maker.responses.retrieve(id)).id).toBe(id);
        const sent = upstreamRequests();
        const read = await other.responses.retrieve(id).catch((e: unknown) => e);
        expect(read).toBeInstanceOf(OpenAI.NotFoundError);
        expect((read as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({
          param: 'response_id',
          code: 'not_found',
        });
        const chained = await other.responses
          .create({ model: GPT, input: 'go on', previous_response_id: id })
          .catch((e: unknown) => e);
        expect(chained).toBeInstanceOf(OpenAI.NotFoundError);
        expect((chained as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({
          param: 'previous_response_id',
        });
        // The other key's attempts reached no deployment.
        expect(upstreamRequests()).toBe(sent);
      }
      const next = await maker.responses.create({
        model: GPT,
        input: 'go on',
        previous_response_id: whole.id,
      });
      expect(next.id).not.toBe(whole.id);
      // An id no key made here is missing for every key.
      const unknown = await maker.responses.retrieve('resp_unknown').catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    });

    it('ownership is read from the parsed body: an escaped field name or a conversation id is refused alike', async () => {
      const maker = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS[0], maxRetries: 0 });
      const made = await maker.responses.create({ model: GPT, input: 'remember this' });
      const sent = upstreamRequests();
      const post = (body: string) =>
        fetch(`${gateway.url}/v1/responses`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS[1]}` },
          body,
        });
      // JSON reads "previous\u005fresponse_id" as previous_response_id, as the upstream does.
      const escaped = await post(
        `{"model":"${GPT}","input":"go on","previous\\u005fresponse_id":"${made.id}"}`,
      );
      expect(escaped.status).toBe(404);
      expect(((await escaped.json()) as { error: { param: string } }).error.param).toBe(
        'previous_response_id',
      );
      for (const conversation of [made.id, { id: made.id }, 'conv_unknown']) {
        const res = await post(JSON.stringify({ model: GPT, input: 'go on', conversation }));
        expect(res.status).toBe(404);
        expect(((await res.json()) as { error: { param: string } }).error.param).toBe(
          'conversation',
        );
      }
      expect(upstreamRequests()).toBe(sent);
    });
  });
});
