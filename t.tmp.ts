import { parseSwitchboardConfig } from './src';
try {
  parseSwitchboardConfig(`deployments:
  - provider: openai
    name: east
    baseURL: "\${AZURE_OPENAI_API_KEY}"
    apiKey: "\${AZURE_OPENAI_ENDPOINT}"
    timeout: "\${MY_TOKEN}"
    models:
      - name: "\${DB_PASSWORD}"
        tpm: "\${SOMETHING}"
        rpm: "\${RPM_SECRET}"
`, { source: 'x.yaml', env: { AZURE_OPENAI_API_KEY: 'sk-proj-SECRETSECRET', AZURE_OPENAI_ENDPOINT: 'https://x', MY_TOKEN: 'tok-SECRET', DB_PASSWORD: '', SOMETHING: 'x'.repeat(500), RPM_SECRET: 'abc' } });
} catch (e) { console.log((e as Error).message); }
