/**
 * `npm run demo`: the original README's runnable example, on simulated deployments, and on
 * "real" ones named by AZURE_OPENAI_ENDPOINT / AZURE_OPENAI_API_KEY (here a simulated endpoint that
 * checks the key).
 */
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { main } from '../../sample/demo';

async function run(env: NodeJS.ProcessEnv): Promise<string[]> {
  let text = '';
  await main({ write: (s) => void (text += s) }, env);
  return text.split('\n');
}

function affinity(lines: string[]): { d1: string; d2: string } {
  const d1 = /^deployment 1: Deployment\((\w+)\)$/.exec(
    lines.find((l) => l.startsWith('deployment 1:'))!,
  );
  const d2 = /^deployment 2: Deployment\((\w+)\)$/.exec(
    lines.find((l) => l.startsWith('deployment 2:'))!,
  );
  return { d1: d1![1]!, d2: d2![1]! };
}

it('runs on simulated deployments when nothing is configured', async () => {
  const lines = await run({});
  expect(lines[0]).toMatch(/^No AZURE_OPENAI_ENDPOINT\/AZURE_OPENAI_API_KEY or OPENAI_API_KEY set/);
  expect(lines).toEqual(
    expect.arrayContaining([
      'Basic functionality:',
      'completion: Hello, world!',
      'streaming: Hello, world!',
      'Session affinity (should warn):',
      'response 1: Who won the World Series in 2020?',
      'response 2: Who did they beat?',
      'response 3: Who won the World Series in 2021?',
    ]),
  );
  const order = [
    'Basic functionality:',
    'completion:',
    'streaming:',
    'Session affinity',
    'deployment 1:',
    'response 1:',
    'response 2:',
    'deployment 2:',
    'response 3:',
    'Stats:',
  ];
  const at = order.map((prefix) => lines.findIndex((l) => l.startsWith(prefix)));
  expect(at.every((i) => i >= 0)).toBe(true);
  expect([...at].sort((a, b) => a - b)).toEqual(at);

  const { d1, d2 } = affinity(lines);
  expect(['east', 'west', 'south']).toContain(d1);
  expect(['east', 'west', 'south']).toContain(d2);
  expect(d2).not.toBe(d1);
  // The mark-down is logged as the warning the heading announces.
  expect(lines).toContainEqual(
    expect.stringMatching(
      new RegExp(`^  \\[switchboard\\] warning: ${d1}/gpt-4o-mini marked down for \\d+ ms`),
    ),
  );
  const stats = JSON.parse(lines.find((l) => l.startsWith('Stats: '))!.slice('Stats: '.length));
  expect(Object.keys(stats)).toEqual(['east', 'west', 'south']);
});

it('runs on the deployments AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY name', async () => {
  const upstream = await SimulatedUpstream.start({
    deployments: [{ name: 'azure', apiKey: 'k-123' }],
  });
  try {
    const endpoint = upstream.deployment('azure').azureEndpoint;
    const lines = await run({ AZURE_OPENAI_ENDPOINT: endpoint, AZURE_OPENAI_API_KEY: 'k-123' });
    expect(lines[0]).toBe('Basic functionality:');
    expect(lines).toContain('completion: Hello, world!');
    const { d1, d2 } = affinity(lines);
    expect(d2).not.toBe(d1);
    // Five calls, all to that endpoint, with that key.
    const requests = upstream.deployment('azure').requests;
    expect(requests).toHaveLength(5);
    expect(requests.every((r) => r.headers.authorization === 'Bearer k-123')).toBe(true);
  } finally {
    await upstream.close();
  }
});
