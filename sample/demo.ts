/**
 * `npm run demo`: the runnable example of the original azure-switchboard README, ported: a basic
 * call, a streamed one, session affinity, and a mark-down that moves the session to another
 * deployment.
 *
 * With `AZURE_OPENAI_ENDPOINT` + `AZURE_OPENAI_API_KEY` (three deployments on that endpoint, as the
 * original does) and/or `OPENAI_API_KEY`, it calls them; with neither, three simulated deployments
 * on loopback (they answer with the prompt's own text).
 */
import type { OpenAIConfig, Switchboard, SwitchboardLogger } from 'nestjs-switchboard';
import { createSwitchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

/** Where the demo writes; `process.stdout` by default. */
export interface Output {
  write(text: string): void;
}

const MODEL = 'gpt-4o-mini';

/** Runs the demo; resolves when it is done, rejects if the session did not move. */
export async function main(
  out: Output = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const print = (...parts: unknown[]) => out.write(`${parts.map(String).join(' ')}\n`);
  const model = env.AZURE_OPENAI_MODEL || MODEL;
  const deployments: OpenAIConfig[] = [];
  const endpoint = env.AZURE_OPENAI_ENDPOINT?.replace(/\/+$/, '');
  if (endpoint && env.AZURE_OPENAI_API_KEY) {
    // Three deployments reusing one endpoint: fine for the purposes of this demo.
    for (const name of ['east', 'west', 'south']) {
      deployments.push({
        provider: 'openai',
        name,
        baseURL: `${endpoint}/openai/v1/`,
        apiKey: env.AZURE_OPENAI_API_KEY,
        models: [{ name: model }],
      });
    }
  }
  if (env.OPENAI_API_KEY) {
    deployments.push({
      provider: 'openai',
      name: 'openai',
      apiKey: env.OPENAI_API_KEY,
      models: [{ name: model }],
    });
  }

  let upstream: SimulatedUpstream | undefined;
  if (deployments.length === 0) {
    upstream = await SimulatedUpstream.start({
      deployments: ['east', 'west', 'south'].map((name) => ({ name, latency: 50, chunkDelay: 20 })),
    });
    for (const sim of upstream.deployments) {
      deployments.push({
        provider: 'openai',
        name: sim.name,
        baseURL: sim.openaiBaseURL,
        apiKey: 'simulated',
        models: [{ name: model }],
      });
    }
    print(
      'No AZURE_OPENAI_ENDPOINT/AZURE_OPENAI_API_KEY or OPENAI_API_KEY set: using 3 simulated deployments (they answer with your own words).',
    );
  }

  const logger: SwitchboardLogger = {
    log: (message: unknown) => print(`  [switchboard] ${String(message)}`),
    warn: (message: unknown) => print(`  [switchboard] warning: ${String(message)}`),
    error: (message: unknown) => print(`  [switchboard] error: ${String(message)}`),
  };
  const sb = createSwitchboard({ deployments, logger });
  try {
    print('Basic functionality:');
    await basicFunctionality(sb, model, out);

    print('Session affinity (should warn):');
    await sessionAffinity(sb, model, print);

    print('Stats:', JSON.stringify(sb.stats()));
  } finally {
    await sb.close();
    await upstream?.close();
  }
}

async function basicFunctionality(sb: Switchboard, model: string, out: Output): Promise<void> {
  // Make a completion request (non-streaming)
  const response = await sb.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Hello, world!' }],
  });
  out.write(`completion: ${response.choices[0]?.message.content}\n`);

  // Make a streaming completion request
  const stream = await sb.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Hello, world!' }],
    stream: true,
  });
  out.write('streaming: ');
  for await (const chunk of stream) {
    const content = chunk.choices[0]?.delta.content;
    if (content) out.write(content);
  }
  out.write('\n');
}

async function sessionAffinity(
  sb: Switchboard,
  model: string,
  print: (...parts: unknown[]) => void,
): Promise<void> {
  const sessionId = 'anything';

  // The first message selects a random healthy deployment and ties the session to it.
  const r = await sb.chat.completions.create({
    session_id: sessionId,
    model,
    messages: [{ role: 'user', content: 'Who won the World Series in 2020?' }],
  });
  const d1 = sb.selectDeployment({ model, sessionId });
  print('deployment 1:', d1);
  print('response 1:', r.choices[0]?.message.content);

  // Follow-up requests with the same session_id go to the same deployment.
  const r2 = await sb.chat.completions.create({
    session_id: sessionId,
    model,
    messages: [
      { role: 'user', content: 'Who won the World Series in 2020?' },
      { role: 'assistant', content: r.choices[0]?.message.content ?? '' },
      { role: 'user', content: 'Who did they beat?' },
    ],
  });
  print('response 2:', r2.choices[0]?.message.content);

  // Simulate a failure by marking the deployment down.
  d1.models.get(model)!.markDown();

  // A new deployment is selected for this session_id.
  const r3 = await sb.chat.completions.create({
    session_id: sessionId,
    model,
    messages: [{ role: 'user', content: 'Who won the World Series in 2021?' }],
  });
  const d2 = sb.selectDeployment({ model, sessionId });
  print('deployment 2:', d2);
  print('response 3:', r3.choices[0]?.message.content);
  if (d2 === d1) throw new Error(`the session stayed on ${d1.name} after it was marked down`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
