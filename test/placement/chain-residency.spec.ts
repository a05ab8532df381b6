/**
 * Residency holds for chains: a call that continues a stored response (`previous_response_id`)
 * goes to the deployment holding it, and when that deployment lacks a tag the call requires
 * (its own, its tenant's, or the `x-switchboard-tags` header of `sb.fetch`), it fails before
 * anything is sent, naming the id and the missing tag.
 */
import { createSwitchboard, SwitchboardError, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';

const MODEL = 'gpt-4o-mini';

describe('a chained call whose holder lacks a required tag', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard;
  let held: string;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'eu-west' }, { name: 'us-east' }],
    });
    sb = createSwitchboard({
      deployments: ['eu-west', 'us-east'].map((name) => ({
        provider: 'openai' as const,
        name,
        baseURL: upstream.deployment(name).openaiBaseURL,
        apiKey: 'k',
        tags: name === 'eu-west' ? ['eu'] : ['us'],
        models: [{ name: MODEL }],
      })),
      tenants: { acme: { tags: ['eu'] } },
    });
    // A response stored in the US, by a call that required it.
    held = (await sb.responses.create({ model: MODEL, input: 'remember this', tags: ['us'] })).id;
  });
  afterAll(async () => {
    await sb.close();
    await upstream.close();
  });

  const sentTo = (name: string) => upstream.deployment(name).stats.requests;

  it.each([
    ['its own tags', { tags: ['eu'] }],
    ["its tenant's tags", { tenant: 'acme' }],
  ])('%s: a SwitchboardError naming the id and the tag, nothing sent', async (_, extra) => {
    const before = { us: sentTo('us-east'), eu: sentTo('eu-west') };
    const error = await sb.responses
      .create({ model: MODEL, input: 'go on', previous_response_id: held, ...extra })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as Error).message).toContain(held);
    expect((error as Error).message).toMatch(/lacks the tag eu/);
    expect(sentTo('us-east')).toBe(before.us);
    expect(sentTo('eu-west')).toBe(before.eu);
  });

  it('through sb.fetch with x-switchboard-tags: a 400 naming the tag, nothing sent', async () => {
    const before = sentTo('us-east');
    const res = await sb.fetch('http://switchboard/v1/responses', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-switchboard-tags': 'eu' },
      body: JSON.stringify({ model: MODEL, input: 'go on', previous_response_id: held }),
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await res.text()).toMatch(/lacks the tag eu/);
    expect(sentTo('us-east')).toBe(before);
  });

  it('a chained call whose holder carries its tags goes on as before', async () => {
    const next = await sb.responses.create({
      model: MODEL,
      input: 'go on',
      previous_response_id: held,
      tags: ['us'],
    });
    expect(next.id).not.toBe(held);
  });
});
