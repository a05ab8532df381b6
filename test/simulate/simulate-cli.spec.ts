import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSwitchboard, loadSwitchboardConfigFile } from 'nestjs-switchboard';
import { runSimulateCli } from '../../src/simulate/run-simulate';

const CONFIG = `deployments:
  - provider: openai
    name: aoai-eastus
    baseURL: \${AZURE_OPENAI_EASTUS_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_EASTUS_API_KEY}
    models:
      - { name: gpt-4o-mini, deployment: gpt4o-mini-east, tpm: 30000, rpm: 300 }
  - provider: anthropic
    name: foundry
    baseURL: \${FOUNDRY_ENDPOINT}/anthropic/
    models:
      - { name: claude-sonnet-5, tpm: 20000, rpm: 100 }
`;

describe('nestjs-switchboard simulate', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-simulate-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the variables that point the file at its simulated deployments, which answer', async () => {
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(file, CONFIG);
    const out: string[] = [];
    const err: string[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((done) => (stop = done));
    const running = runSimulateCli(
      ['simulate', file, '--latency', '0'],
      { out: (t) => void out.push(t), err: (t) => void err.push(t) },
      {},
      stopped,
    );
    while (out.length === 0 && err.length === 0) await new Promise((r) => setImmediate(r));
    try {
      const lines = out.join('\n').split('\n');
      expect(lines.map((l) => l.replace(/=.*/, ''))).toEqual([
        'export AZURE_OPENAI_EASTUS_ENDPOINT',
        'export AZURE_OPENAI_EASTUS_API_KEY',
        'export FOUNDRY_ENDPOINT',
      ]);
      expect(err.join('\n')).toMatch(/^simulating 2 deployments on http:\/\/127\.0\.0\.1:\d+/);
      const env = Object.fromEntries(
        lines.map((l) => l.replace(/^export /, '').split('=') as [string, string]),
      );
      // The app, on its own configuration with these variables, and a token for Foundry.
      const options = loadSwitchboardConfigFile(file, env);
      const sb = createSwitchboard({
        ...options,
        deployments: options.deployments.map((d) =>
          d.provider === 'anthropic' ? { ...d, apiKey: () => Promise.resolve('entra') } : d,
        ),
      });
      try {
        const chat = await sb.chat.completions.create({
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'through the simulation' }],
        });
        expect(chat.choices[0]!.message.content).toContain('through the simulation');
        const message = await sb.messages.create({
          model: 'claude-sonnet-5',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(message.type).toBe('message');
      } finally {
        await sb.close();
      }
    } finally {
      stop();
    }
    expect(await running).toBe(0);
  });

  it('a bad file or option exits 2 with one message', async () => {
    const err: string[] = [];
    const output = { out: () => undefined, err: (t: string) => void err.push(t) };
    expect(await runSimulateCli(['simulate', join(dir, 'none.yaml')], output, {})).toBe(2);
    expect(err.join('\n')).toContain('none.yaml');
    expect(await runSimulateCli(['simulate', 'x.yaml', '--port', 'x'], output, {})).toBe(2);
  });
});
