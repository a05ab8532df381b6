import { createSwitchboard } from './src';
(async () => {
  const sb = createSwitchboard({ logger: { log: console.log, warn: console.log, error: console.log }, deployments: [{ provider: 'openai', name: 's', baseURL: `http://127.0.0.1:9/v1`, apiKey: 'k', models: [{ name: 'm' }] }] });
  const deep = '['.repeat(100000) + ']'.repeat(100000);
  const body = `{"model":"m","session_id":"x","messages":[{"role":"user","content":"x"}],"metadata":${deep}}`;
  const res = await sb.fetch('https://sb.example/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  console.log(res.status, (await res.text()).slice(0, 300));
  await sb.close();
})();
