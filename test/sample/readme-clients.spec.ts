/**
 * The "official clients pointed at the gateway" snippet of docs/gateway.md, verbatim between the markers
 * (the README sets `gateway` to http://localhost:3000), run against the sample gateway.
 */
import { createGateway, type Gateway } from '../../sample/main';

// ---- README: clients.ts -------------------------------------------------------------------
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

async function readmeClients(gateway: string) {
  // The gateway holds the deployments' keys: the clients' own keys are not checked.
  const openai = new OpenAI({ baseURL: `${gateway}/v1`, apiKey: 'unused' });
  const anthropic = new Anthropic({ baseURL: gateway, apiKey: 'unused' });

  // x-session-id keeps a conversation on one deployment (and its prompt cache).
  const completion = await openai.chat.completions.create(
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello!' }] },
    { headers: { 'x-session-id': 'user-42' } },
  );
  console.log(completion.choices[0]?.message.content);

  const stream = await openai.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Stream this, please.' }],
    stream: true,
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? '');
  console.log();

  const message = await anthropic.messages.create(
    { model: 'claude-sonnet-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hi!' }] },
    { headers: { 'x-session-id': 'user-42' } },
  );
  console.log(message.content[0]?.type === 'text' ? message.content[0].text : '');

  const final = await anthropic.messages
    .stream({
      model: 'claude-sonnet-5',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Bye!' }],
    })
    .on('text', (text) => process.stdout.write(text))
    .finalMessage();
  console.log(`\n${final.usage.output_tokens} output tokens`);
}
// ---- end of README code -------------------------------------------------------------------

let gateway: Gateway;

beforeAll(async () => {
  gateway = await createGateway({
    port: 0,
    host: '127.0.0.1',
    simulation: { latencyFactor: 0, chunkDelay: 0 },
    logger: false,
  });
});

afterAll(() => gateway?.close());

it('runs the README client snippet against the gateway', async () => {
  let printed = '';
  const log = jest
    .spyOn(console, 'log')
    .mockImplementation((...parts: unknown[]) => void (printed += `${parts.join(' ')}\n`));
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    printed += String(chunk);
    return true;
  });
  try {
    await readmeClients(gateway.url);
  } finally {
    log.mockRestore();
    write.mockRestore();
  }
  expect(printed).toBe(
    'Hello!\nStream this, please.\nHi!\nBye!\n' + printed.match(/\d+ output tokens\n$/)![0],
  );
});
