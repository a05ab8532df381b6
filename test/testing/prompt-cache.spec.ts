import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { FakeClock } from '../support/random';

/** 5 000 characters: 1 250 of the simulator's tokens. */
const SYSTEM = 'You answer questions about the handbook. '.repeat(125).slice(0, 5_000);

describe('simulated prompt caches', () => {
  let upstream: SimulatedUpstream;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock();
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'a' }, { name: 'b' }],
      clock: clock.now,
    });
  });
  afterEach(() => upstream.close());

  const openai = (name: string) => new OpenAI(upstream.deployment(name).openaiClientOptions());
  const chat = (name: string, system: string, question: string) =>
    openai(name).chat.completions.create({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: question },
      ],
    });

  it('reports the longest cached prefix of a chat prompt, per deployment, in steps of 128 tokens', async () => {
    const first = await chat('a', SYSTEM, 'What is the leave policy?');
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    const second = await chat('a', SYSTEM, 'Who approves expenses?');
    // 1 250 shared tokens: the longest step at or below them is 1 024 + 128.
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBe(1_152);
    // Another deployment has its own cache.
    const elsewhere = await chat('b', SYSTEM, 'Who approves expenses?');
    expect(elsewhere.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    // A different prompt, or a short one, is not cached.
    const other = await chat('a', SYSTEM.replace('You', 'We'), 'Who approves expenses?');
    expect(other.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    await chat('a', 'short', 'hi');
    expect((await chat('a', 'short', 'hi')).usage!.prompt_tokens_details!.cached_tokens).toBe(0);
  });

  it('forgets a prefix five minutes after its last use', async () => {
    await chat('a', SYSTEM, 'one');
    clock.advance(4 * 60_000);
    expect((await chat('a', SYSTEM, 'two')).usage!.prompt_tokens_details!.cached_tokens).toBe(
      1_152,
    );
    clock.advance(4 * 60_000);
    expect((await chat('a', SYSTEM, 'three')).usage!.prompt_tokens_details!.cached_tokens).toBe(
      1_152,
    );
    clock.advance(5 * 60_000);
    expect((await chat('a', SYSTEM, 'four')).usage!.prompt_tokens_details!.cached_tokens).toBe(0);
  });

  it('caches Responses prompts too', async () => {
    const ask = () =>
      openai('a').responses.create({ model: 'gpt-4o', instructions: SYSTEM, input: 'hi' });
    expect((await ask()).usage!.input_tokens_details.cached_tokens).toBe(0);
    expect((await ask()).usage!.input_tokens_details.cached_tokens).toBe(1_152);
  });

  it('caches a Claude prefix marked cache_control only from 1 024 tokens on, for five minutes', async () => {
    const claude = new Anthropic(upstream.deployment('a').anthropicClientOptions());
    const ask = (text: string) =>
      claude.messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 16,
        system: [{ type: 'text', text, cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hello' }],
      });
    expect((await ask(SYSTEM)).usage.cache_creation_input_tokens).toBe(1_250);
    expect((await ask(SYSTEM)).usage.cache_read_input_tokens).toBe(1_250);
    clock.advance(5 * 60_000);
    expect((await ask(SYSTEM)).usage.cache_read_input_tokens).toBe(0);
    // Below the minimum nothing is cached.
    const short = 'x'.repeat(2_000);
    await ask(short);
    const again = await ask(short);
    expect(again.usage).toMatchObject({
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });
});
