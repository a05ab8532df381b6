/**
 * The relay's own transport to `openai`-client deployments (Node's HTTP client, the SDK building
 * the request): what reaches the upstream, and how its failures come back, over real sockets to
 * simulated deployments.
 */
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../../src';
import { SimulatedUpstream } from '../../src/testing';
import { CREDENTIALS_REFUSED } from '../../src/relay/http-error';

const GPT = 'gpt-4o-mini';
const BODY = {
  model: GPT,
  messages: [{ role: 'user', content: 'Hello' }],
  max_tokens: 16,
};

/** An `openai` deployment serving GPT, far from its quota; `deployment` is its upstream name. */
function openaiAt(
  name: string,
  baseURL: string,
  apiKey: string,
  deployment?: string,
): DeploymentConfig {
  return {
    provider: 'openai',
    name,
    baseURL,
    apiKey,
    models: [{ name: GPT, deployment, tpm: 1_000_000, rpm: 1_000 }],
  };
}

let upstream: SimulatedUpstream;
let sb: Switchboard | undefined;

beforeAll(async () => {
  upstream = await SimulatedUpstream.start({
    deployments: [
      { name: 'east', apiKey: 'key-east', deploymentNames: ['gpt4o-mini-east'] },
      { name: 'west', apiKey: 'key-west' },
      { name: 'foundry', apiKey: 'key-foundry', deploymentNames: ['claude-foundry-east'] },
    ],
  });
});

afterAll(() => upstream.close());

afterEach(async () => {
  await sb?.close();
  sb = undefined;
  upstream.reset();
});

function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return sb!.fetch('http://switchboard/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer client', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('the relay to openai-client deployments', () => {
  it("sends the deployment's upstream model name and its key, never the client's", async () => {
    sb = createSwitchboard({
      deployments: [
        openaiAt('east', upstream.deployment('east').openaiBaseURL, 'key-east', 'gpt4o-mini-east'),
      ],
    });
    const res = await post(BODY);
    expect(res.status).toBe(200);
    const [request] = upstream.deployment('east').requests;
    expect(request!.model).toBe('gpt4o-mini-east');
    expect(request!.headers.authorization).toBe('Bearer key-east');
    expect(request!.body).toMatchObject({ messages: BODY.messages, max_tokens: 16 });
  });

  it("sends a Claude deployment's upstream model name, also when the client's bytes would do", async () => {
    sb = createSwitchboard({
      deployments: [
        {
          provider: 'anthropic',
          name: 'foundry',
          baseURL: upstream.deployment('foundry').anthropicBaseURL,
          apiKey: 'key-foundry',
          models: [
            {
              name: 'claude-sonnet-4-5',
              deployment: 'claude-foundry-east',
              tpm: 1_000_000,
              rpm: 1_000,
            },
          ],
        },
      ],
    });
    const res = await sb.fetch('http://switchboard/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'client' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'Hello' }],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBeDefined();
    const [request] = upstream.deployment('foundry').requests;
    expect(request!.model).toBe('claude-foundry-east');
  });

  it("sends the client's own bytes when nothing changes them", async () => {
    sb = createSwitchboard({
      deployments: [openaiAt('west', upstream.deployment('west').openaiBaseURL, 'key-west')],
    });
    // Key order and spacing a re-serialization would not keep.
    const text = `{ "max_tokens": 16, "model": "${GPT}", "messages": [{"role":"user","content":"Hi"}] }`;
    const res = await post(text);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
    expect(upstream.deployment('west').requests[0]!.headers['content-length']).toBe(
      String(Buffer.byteLength(text)),
    );
    expect(sb.deployments.get('west')!.models.get(GPT)!.rpmUsage).toBe(1);
  });

  it("answers an upstream's error with its status and body, as the SDK reads it; a refusal of its own key as 502", async () => {
    sb = createSwitchboard({
      deployments: [openaiAt('west', upstream.deployment('west').openaiBaseURL, 'wrong-key')],
      failover: { attempts: 1 },
    });
    const client = new OpenAI({ apiKey: 'client', fetch: sb.fetch, maxRetries: 0 });
    const call = () =>
      client.chat.completions.create(BODY as never).then(
        () => undefined,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    // The deployment refused the switchboard's key, not the client's: not a 401 to the client.
    const refused = await call();
    expect(refused).toBeInstanceOf(OpenAI.InternalServerError);
    expect(refused!.status).toBe(502);
    expect(refused!.error).toMatchObject({ message: CREDENTIALS_REFUSED });
    sb.deployments.get('west')!.models.get(GPT)!.markUp();
    upstream.deployment('west').fail({ kind: 'status', status: 400, message: 'bad', code: 'x' });
    const bad = await call();
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad!.error).toMatchObject({ message: 'bad', code: 'x' });
  });

  it('fails over from a deployment that refuses connections, which is marked down', async () => {
    const closed = await SimulatedUpstream.start({ deployments: [{ name: 'gone' }] });
    const goneURL = closed.deployment('gone').openaiBaseURL;
    await closed.close();
    sb = createSwitchboard({
      deployments: [
        openaiAt('gone', goneURL, 'k'),
        openaiAt('west', upstream.deployment('west').openaiBaseURL, 'key-west'),
      ],
      failover: { attempts: 2 },
    });
    for (let i = 0; i < 4; i++) expect((await post(BODY)).status).toBe(200);
    expect(upstream.deployment('west').stats.ok).toBe(4);
    expect(sb.deployments.get('gone')!.models.get(GPT)!.isCooling()).toBe(true);
  });

  it('reaches a deployment at an IPv6 literal', async () => {
    const v6 = await SimulatedUpstream.start({ host: '::1', deployments: [{ name: 'v6' }] });
    try {
      sb = createSwitchboard({
        deployments: [openaiAt('v6', v6.deployment('v6').openaiBaseURL, 'k')],
      });
      expect(v6.deployment('v6').openaiBaseURL).toContain('[::1]');
      expect((await post(BODY)).status).toBe(200);
    } finally {
      await v6.close();
    }
  });

  it("stops the upstream's request when the caller aborts", async () => {
    sb = createSwitchboard({
      deployments: [openaiAt('west', upstream.deployment('west').openaiBaseURL, 'key-west')],
    });
    upstream.deployment('west').fail({ kind: 'hang' });
    const abort = new AbortController();
    const sent = sb.fetch('http://switchboard/v1/chat/completions', {
      method: 'POST',
      body: JSON.stringify(BODY),
      signal: abort.signal,
    });
    await waitFor(() => upstream.deployment('west').stats.requests === 1);
    abort.abort();
    await expect(sent).rejects.toBeDefined();
    await waitFor(() => upstream.deployment('west').stats.aborted === 1);
    expect(sb.deployments.get('west')!.models.get(GPT)!.isCooling()).toBe(false);
  });
});

/** Polls a condition the event loop will make true (sockets, no timers of the test's own). */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(condition()).toBe(true);
}
