import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createSwitchboard, type Switchboard } from '../../src';
import { SimulatedUpstream } from '../../src/testing';
import { GPT, oaiAndClaude } from '../support/upstream';

/**
 * The latest answered request's SDK promise and the last two closed switchboards are kept (their
 * shapes then outlive a full collection with nothing in flight): the answer until the next one
 * comes, a switchboard until two more have closed.
 */
describe('the answer kept for its shapes', () => {
  let upstream: SimulatedUpstream;
  const gc = (() => {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  })();
  // A WeakRef keeps its target through the job that made or read it: collect after it.
  const collect = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  };

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'oai' }, { name: 'claude' }],
    });
  });
  afterAll(() => upstream.close());

  const answered = async (): Promise<{ board: WeakRef<Switchboard>; client: WeakRef<object> }> => {
    // The OpenAI deployment alone: an answered request that is not a stream.
    const [oai] = oaiAndClaude(upstream, { tpm: 100_000, rpm: 1_000 });
    const sb = createSwitchboard({ deployments: [oai!] });
    const answer = await sb.chat.completions.create({
      model: GPT,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 5,
    });
    expect(answer.choices).toHaveLength(1);
    const client = (sb.deployments.get('oai') as unknown as { client: object }).client;
    await sb.close();
    return { board: new WeakRef(sb), client: new WeakRef(client) };
  };

  it('keeps the last two closed switchboards and the last answer, and lets older ones go', async () => {
    const first = await answered();
    await collect();
    // Kept for its shapes, with the SDK client of its kept answer.
    expect(first.board.deref()).toBeDefined();
    expect(first.client.deref()).toBeDefined();
    const second = await answered();
    await collect();
    // The first switchboard is still one of the last two (its client with it).
    expect(first.board.deref()).toBeDefined();
    const third = await answered();
    await collect();
    // Neither kept any longer: the switchboard and its client (whose answer is no longer the
    // latest) go.
    expect(first.board.deref()).toBeUndefined();
    expect(first.client.deref()).toBeUndefined();
    expect(second.board.deref()).toBeDefined();
    expect(third.board.deref()).toBeDefined();
  });
});
