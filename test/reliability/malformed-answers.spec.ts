/**
 * A deployment that answers 200 with JSON cut short: its fault, not the caller's and not the
 * switchboard's. The call fails over; when every attempt fails, the library's caller gets an
 * error that says so, `sb.fetch` answers 502 in the API's own error shape, and one log line per
 * such answer names the deployment.
 */
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const GPT = 'gpt-4o-mini';
const CLAUDE = 'claude-sonnet-5';

describe('malformed answers', () => {
  let upstream: SimulatedUpstream;
  let sb: Switchboard | undefined;
  const warnings: string[] = [];
  const logger = {
    log: () => undefined,
    warn: (line: string) => void warnings.push(line),
    error: (line: string) => void warnings.push(line),
  };

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'a' }, { name: 'b' }, { name: 'claude' }],
    });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    upstream.reset();
    warnings.length = 0;
  });

  const openai = (name: string): DeploymentConfig => ({
    provider: 'openai',
    name,
    baseURL: upstream.deployment(name).openaiBaseURL,
    apiKey: 'k',
    models: [{ name: GPT }],
  });
  const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'hi' }] };

  it('fails over to a deployment that answers, and one log line names the one that did not', async () => {
    // The first draw takes the first deployment: the malformed one.
    sb = createSwitchboard({ deployments: [openai('a'), openai('b')], logger, random: () => 0 });
    upstream.deployment('a').fail({ kind: 'malformed' });
    const answer = await sb.chat.completions.create(ask);
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
    expect(upstream.deployment('a').stats.requests).toBe(1);
    expect(upstream.deployment('b').stats.ok).toBe(1);
    expect(warnings).toEqual([`a/${GPT} answered with a body that is not valid JSON`]);
  });

  it('when every attempt fails, the caller is told the answer was malformed and by whom', async () => {
    sb = createSwitchboard({ deployments: [openai('a')], logger, failover: { attempts: 1 } });
    upstream.deployment('a').fail({ kind: 'malformed' }, Infinity);
    const error = await sb.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toMatch(/^Malformed response from deployment a: /);
    expect(warnings).toEqual([`a/${GPT} answered with a body that is not valid JSON`]);
  });

  it('through sb.fetch: a 502 in the OpenAI error shape', async () => {
    sb = createSwitchboard({ deployments: [openai('a')], logger, failover: { attempts: 1 } });
    upstream.deployment('a').fail({ kind: 'malformed' }, Infinity);
    const client = new OpenAI({
      apiKey: 'unused',
      baseURL: 'https://sb.example/v1',
      fetch: sb.fetch,
      maxRetries: 0,
    });
    const error = await client.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as { status?: number }).status).toBe(502);
    expect((error as Error).message).toMatch(/not valid JSON/);
    expect(warnings).toHaveLength(1);
  });

  it('through sb.fetch: a 502 in the Anthropic error shape', async () => {
    sb = createSwitchboard({
      logger,
      failover: { attempts: 1 },
      deployments: [
        {
          provider: 'anthropic',
          name: 'claude',
          baseURL: upstream.deployment('claude').anthropicBaseURL,
          apiKey: 'k',
          models: [{ name: CLAUDE }],
        },
      ],
    });
    upstream.deployment('claude').fail({ kind: 'malformed' }, Infinity);
    const res = await sb.fetch('https://sb.example/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: CLAUDE,
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.message).toMatch(/not valid JSON/);
    expect(warnings).toEqual([`claude/${CLAUDE} answered with a body that is not valid JSON`]);
  });
});
