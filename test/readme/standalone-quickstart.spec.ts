// The README's standalone quick start, run against simulated deployments. Keep the two in step:
// the block between the markers is what the README shows.
import { format } from 'node:util';
import type { Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

describe('README standalone quick start', () => {
  let upstream: SimulatedUpstream;
  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'east' }, { name: 'west' }, { name: 'foundry1' }],
    });
    process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
    process.env.WEST_URL = upstream.deployment('west').openaiBaseURL;
    process.env.FOUNDRY_URL = upstream.deployment('foundry1').anthropicBaseURL;
    process.env.AZURE_OPENAI_API_KEY = 'azure-key';
    process.env.FOUNDRY_API_KEY = 'foundry-key';
  });
  afterAll(() => upstream.close());

  it('runs as written', async () => {
    // What the snippet prints is captured and checked, not mixed into the test report.
    let printed = '';
    const log = jest
      .spyOn(console, 'log')
      .mockImplementation((...parts: unknown[]) => void (printed += `${format(...parts)}\n`));
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      printed += String(chunk);
      return true;
    });
    try {
      await quickStart();
    } finally {
      log.mockRestore();
      write.mockRestore();
    }
    expect(printed.split('\n')[0]).toContain('Hello!');
    expect(printed).toMatch(
      /foundry1: \{ 'claude-sonnet-5': \{ util: [\d.]+, tpm: '\d+\/30000', rpm: '1\/300' \} \}/,
    ); // sb.stats()
  });

  async function quickStart(): Promise<void> {
    // README:standalone
    const { createSwitchboard } = await import('nestjs-switchboard');

    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: process.env.EAST_URL, // https://east.openai.azure.com/openai/v1/
          apiKey: process.env.AZURE_OPENAI_API_KEY,
          models: [{ name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 }],
        },
        {
          provider: 'openai',
          name: 'west',
          baseURL: process.env.WEST_URL,
          apiKey: process.env.AZURE_OPENAI_API_KEY,
          models: [{ name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 }],
        },
        {
          provider: 'anthropic',
          name: 'foundry1',
          baseURL: process.env.FOUNDRY_URL, // or resource: 'my-foundry-resource'
          apiKey: process.env.FOUNDRY_API_KEY,
          models: [{ name: 'claude-sonnet-5', tpm: 30_000, rpm: 300 }],
        },
      ],
    });

    const completion = await sb.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hello!' }],
      session_id: 'user-42', // later turns of this session stay on the same deployment
    });
    console.log(completion.choices[0].message.content);

    const stream = await sb.messages.create({
      model: 'claude-sonnet-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Hello, Claude!' }],
      stream: true,
    });
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        process.stdout.write(event.delta.text);
      }
    }

    console.log(sb.stats()); // { east: { 'gpt-4o-mini': { util: 0.003, tpm: '6/30000', rpm: '1/300' } }, ... }
    await sb.close();
    // README:end
    check(completion.choices[0]!.message.content, sb.stats());
  }

  function check(content: string | null, stats: ReturnType<Switchboard['stats']>): void {
    expect(content).toContain('Hello!');
    const served = Object.values(stats).filter((m) => m['gpt-4o-mini']?.rpm === '1/300');
    expect(served).toHaveLength(1);
    expect(stats.foundry1!['claude-sonnet-5']!.rpm).toBe('1/300');
  }
});
