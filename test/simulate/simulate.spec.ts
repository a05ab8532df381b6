import { createSwitchboard, parseSwitchboardConfig, type Switchboard } from 'nestjs-switchboard';
import { simulatedDeployments } from '../../src/simulate/simulated-deployments';

/** The README's quick-start configuration in miniature: Azure, OpenAI's own API, Foundry. */
const CONFIG = `
deployments:
  - provider: openai
    name: aoai-eastus
    baseURL: \${AZURE_OPENAI_EASTUS_ENDPOINT}/openai/v1/
    apiKey: \${AZURE_OPENAI_EASTUS_API_KEY}
    models:
      - { name: gpt-4o-mini, deployment: gpt4o-mini-east, tpm: 30000, rpm: 300 }
      - { name: text-embedding-3-small, tpm: 100000, rpm: 600 }
  - provider: openai
    name: openai
    models:
      - { name: gpt-4o-mini, tpm: 20000, rpm: 500 }
  - provider: anthropic
    name: foundry
    baseURL: \${FOUNDRY_ENDPOINT}/anthropic/
    models:
      - { name: claude-sonnet-5, tpm: 20000, rpm: 100 }
`;

describe('simulate', () => {
  describe('simulatedDeployments', () => {
    const options = parseSwitchboardConfig(CONFIG, {
      source: 'switchboard.yaml',
      env: { SWITCHBOARD_SIMULATE: '1' },
    });

    it('stands one simulated deployment in for each configured one, with its quota and URL shape', () => {
      const [east, openai, foundry] = simulatedDeployments(options, { latency: 0 });
      expect(east!.path).toBe('/aoai-eastus/openai/v1/');
      expect(east!.simulated).toMatchObject({
        name: 'aoai-eastus',
        rules: 'azure',
        tpm: 130_000,
        rpm: 900,
        deploymentNames: ['gpt4o-mini-east', 'text-embedding-3-small'],
      });
      expect(openai!.path).toBe('/openai/v1/');
      expect(openai!.simulated).toMatchObject({ rules: 'openai', tpm: 20_000, rpm: 500 });
      expect(foundry!.path).toBe('/foundry/anthropic/');
      expect(foundry!.simulated).toMatchObject({ tpm: 20_000, rpm: 100 });
    });

    it('leaves a limit unlimited when one of the models does not set it', () => {
      const [only] = simulatedDeployments({
        deployments: [
          {
            provider: 'openai',
            name: 'east',
            baseURL: 'https://east.openai.azure.com/openai/v1/',
            models: [{ name: 'a', tpm: 1000 }, { name: 'b' }],
          },
        ],
      });
      expect(only!.simulated.tpm).toBeUndefined();
    });

    it('names a deployment by what a URL segment may hold, each once', () => {
      const names = simulatedDeployments({
        deployments: ['east us', 'east-us', '__'].map((name) => ({
          provider: 'openai' as const,
          name,
          models: [{ name: 'a' }],
        })),
      }).map((s) => s.simulated.name);
      expect(names).toEqual(['east-us', 'deployment-1-east-us', 'deployment-2']);
    });
  });

  describe('the config file under SWITCHBOARD_SIMULATE=1', () => {
    it('needs no endpoint or key: the simulation stands in for them', () => {
      const options = parseSwitchboardConfig(CONFIG, {
        source: 'switchboard.yaml',
        env: { SWITCHBOARD_SIMULATE: '1' },
      });
      expect(options.simulate).toBe(true);
      expect(options.deployments[0]).toMatchObject({ apiKey: 'simulated' });
    });

    it('still names an unset variable elsewhere', () => {
      expect(() =>
        parseSwitchboardConfig(`${CONFIG}queue:\n  maxWait: \${MAX_WAIT}\n`, {
          source: 'switchboard.yaml',
          env: { SWITCHBOARD_SIMULATE: '1' },
        }),
      ).toThrow(
        /queue\.maxWait uses \$\{MAX_WAIT\}, but the environment variable MAX_WAIT is not set/,
      );
    });
  });

  describe('simulate: true', () => {
    let sb: Switchboard;
    let tokens = 0;

    beforeAll(() => {
      const options = parseSwitchboardConfig(CONFIG, {
        source: 'switchboard.yaml',
        env: { SWITCHBOARD_SIMULATE: '1' },
      });
      // Claude on Foundry through Entra ID: a token function, as the quick start gives it.
      const deployments = options.deployments.map((d) =>
        d.provider === 'anthropic'
          ? { ...d, apiKey: () => Promise.resolve(`entra-token-${++tokens}`) }
          : d,
      );
      sb = createSwitchboard({ ...options, deployments });
    });
    afterAll(() => sb.close());

    it('answers chat, streamed chat, messages, responses and embeddings offline', async () => {
      const chat = await sb.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Hello, simulation' }],
      });
      expect(chat.choices[0]!.message.content).toContain('Hello, simulation');

      const stream = await sb.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Stream this' }],
        stream: true,
      });
      let streamed = '';
      for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
      expect(streamed).toContain('Stream this');

      const message = await sb.messages.create({
        model: 'claude-sonnet-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Hi Claude' }],
      });
      expect(message.content[0]).toMatchObject({ type: 'text' });
      expect(tokens).toBeGreaterThan(0);

      const response = await sb.responses.create({ model: 'gpt-4o-mini', input: 'Respond' });
      expect(response.output_text).toContain('Respond');

      const embedding = await sb.embeddings.create({
        model: 'text-embedding-3-small',
        input: 'embed me',
      });
      expect(embedding.data[0]!.embedding.length).toBeGreaterThan(0);
    });

    it('goes through the relay too', async () => {
      const answer = await sb.fetch('http://any.host/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
      });
      expect(answer.status).toBe(200);
    });
  });
});
