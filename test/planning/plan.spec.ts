import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlanReport } from '../../src/planning/plan';
import { runPlanCli } from '../../src/planning/run-plan';

const T0 = Date.UTC(2026, 0, 5, 9);

/** A steady hour: 40 calls a minute of 1 000 input + 200 output tokens, max_tokens 300. */
function steadyHour(): string {
  const lines: string[] = [];
  for (let i = 0; i < 40 * 60; i++) {
    lines.push(
      JSON.stringify({
        t: T0 + i * 1_500,
        model: 'gpt-4o',
        input_tokens: 1_000,
        output_tokens: 200,
        max_tokens: 300,
        status: 200,
        latency_ms: 900,
      }),
    );
  }
  return lines.join('\n') + '\n';
}

const CONFIG = `deployments:
  - provider: openai
    name: sweden-central
    baseURL: https://sweden.openai.azure.com/openai/v1/
    apiKey: \${AZURE_OPENAI_KEY}
    models: [{ name: gpt-4o, tpm: 30000 }]
  - provider: openai
    name: east-us-2
    baseURL: https://eastus2.openai.azure.com/openai/v1/
    apiKey: \${AZURE_OPENAI_KEY}
    models: [{ name: gpt-4o, tpm: 30000 }]
`;

describe('nestjs-switchboard plan', () => {
  let dir: string;
  let traffic: string;
  let config: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plan-'));
    traffic = join(dir, 'traffic.jsonl');
    config = join(dir, 'switchboard.yaml');
    writeFileSync(traffic, steadyHour());
    writeFileSync(config, CONFIG);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function run(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const status = await runPlanCli(
      ['plan', ...args],
      { out: (t) => void out.push(t), err: (t) => void err.push(t) },
      {},
    );
    return { status, out: out.join('\n'), err: err.join('\n') };
  }
  const json = async (...args: string[]) => {
    const r = await run(...args, '--json');
    expect(r).toMatchObject({ status: 0, err: '' });
    return JSON.parse(r.out) as PlanReport;
  };

  it('a steady hour on two deployments of 30 000 TPM: no caller fails, each is 55-95 % used', async () => {
    const report = await json(traffic, '--config', config);
    expect(report.calls).toBe(2_400);
    expect(report.callers).toEqual({ failed: 0, waitP50Ms: 0, waitP95Ms: 0 });
    expect(report.deployments.map((d) => d.deployment)).toEqual(['sweden-central', 'east-us-2']);
    for (const d of report.deployments) {
      expect(d.upstream429s).toBe(0);
      expect(d.utilization).toBeGreaterThanOrEqual(0.55);
      expect(d.utilization).toBeLessThanOrEqual(0.95);
    }
    expect(report.deployments.reduce((n, d) => n + d.sent, 0)).toBe(2_400);
    expect(report.suggestion).toBeUndefined();
  });

  it('at --scale 2 the same quota no longer serves it: callers fail or wait', async () => {
    const report = await json(traffic, '--config', config, '--scale', '2');
    expect(report.callers.failed > 0 || report.callers.waitP95Ms > 0).toBe(true);
  });

  it('--find-tpm at scale 2 suggests 1.0-1.35x the admitted tokens per minute (104 000 - 140 400)', async () => {
    const report = await json(traffic, '--config', config, '--scale', '2', '--find-tpm');
    const tpm = report.suggestion!['gpt-4o']!.tpm!;
    expect(tpm).toBeGreaterThanOrEqual(104_000);
    expect(tpm).toBeLessThanOrEqual(140_400);
  });

  it('prints a table, and --html writes one self-contained page with a chart and the deployment names', async () => {
    const page = join(dir, 'report.html');
    const r = await run(traffic, '--config', config, '--html', page);
    expect(r.status).toBe(0);
    expect(r.out).toMatch(/DEPLOYMENT\s+MODEL\s+SENT\s+UPSTREAM 429s\s+UTILIZATION/);
    expect(r.out).toMatch(/callers: 0 failed/);
    const html = readFileSync(page, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg');
    expect(html).toContain('<polyline');
    expect(html).toContain('sweden-central');
    expect(html).toContain('east-us-2');
    expect(html).not.toMatch(/https?:\/\/(?!sweden|eastus2)/);
    expect(html).not.toMatch(/<script|<link|src=/);
  });

  it('a malformed line is reported with its line number, exit 2, no stack trace', async () => {
    const bad = join(dir, 'bad.jsonl');
    const lines = steadyHour().split('\n');
    lines[6] = '{"t": 1767603600000, "model": "gpt-4o", "input_tokens": ';
    writeFileSync(bad, lines.join('\n'));
    const r = await run(bad, '--config', config);
    expect(r.status).toBe(2);
    expect(r.err).toContain(`${bad}:7: not a JSON line`);
    expect(r.err).not.toMatch(/\n\s+at /);
    lines[6] = '{"t": 1767603600000, "model": "gpt-4o", "input_tokens": -3, "output_tokens": 1}';
    writeFileSync(bad, lines.join('\n'));
    expect((await run(bad, '--config', config)).err).toBe(
      `${bad}:7: "input_tokens" must be a whole number of tokens from 0 to 2147483647`,
    );
  });

  it('a missing or invalid config names the file and the problem', async () => {
    const missing = join(dir, 'nope.yaml');
    const r = await run(traffic, '--config', missing);
    expect(r.status).toBe(2);
    expect(r.err).toContain(missing);
    const invalid = join(dir, 'invalid.yaml');
    writeFileSync(invalid, CONFIG.replace('tpm: 30000 }', 'tpm: -5 }'));
    const i = await run(traffic, '--config', invalid);
    expect(i.status).toBe(2);
    expect(i.err).toContain(invalid);
    expect(i.err).toMatch(/deployments\[0\]\.models\[0\]\.tpm/);
    const other = join(dir, 'other.yaml');
    writeFileSync(other, CONFIG.replace(/gpt-4o/g, 'gpt-4.1'));
    const o = await run(traffic, '--config', other);
    expect(o).toMatchObject({ status: 2 });
    expect(o.err).toContain(`${other}: no deployment serves 'gpt-4o'`);
    expect((await run(traffic)).status).toBe(2);
  });

  it('needs no credential: a key left unset, or a deployment without one (Entra ID), is planned as configured', async () => {
    const entra = join(dir, 'entra.yaml');
    writeFileSync(
      entra,
      `${CONFIG}  - provider: anthropic
    name: foundry
    baseURL: \${FOUNDRY_ENDPOINT}/anthropic/
    models: [{ name: claude-sonnet-5, tpm: 20000 }]
`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const status = await runPlanCli(
      ['plan', traffic, '--config', entra],
      { out: (t) => void out.push(t), err: (t) => void err.push(t) },
      { FOUNDRY_ENDPOINT: 'https://my-foundry.services.ai.azure.com' },
    );
    expect({ status, err: err.join('\n') }).toEqual({ status: 0, err: '' });
    expect(out.join('\n')).toContain('sweden-central');
  });

  it('an unset endpoint variable is one line naming it, without a stack trace', async () => {
    const unset = join(dir, 'unset.yaml');
    writeFileSync(
      unset,
      CONFIG.replace('https://sweden.openai.azure.com/openai/v1/', '${SWEDEN_ENDPOINT}/openai/v1/'),
    );
    const r = await run(traffic, '--config', unset);
    expect(r.status).toBe(2);
    expect(r.err.split('\n')).toHaveLength(1);
    expect(r.err).toContain(
      'deployments[0].baseURL uses ${SWEDEN_ENDPOINT}, but the environment variable SWEDEN_ENDPOINT is not set',
    );
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('lines out of time order are sorted, and said so', async () => {
    // Ten minutes of the hour are enough here.
    const lines = steadyHour().trim().split('\n').slice(0, 400);
    const inOrder = join(dir, 'ten-minutes.jsonl');
    writeFileSync(inOrder, lines.join('\n'));
    const shuffled = join(dir, 'shuffled.jsonl');
    [lines[10], lines[300]] = [lines[300]!, lines[10]!];
    writeFileSync(shuffled, lines.join('\n'));
    const r = await run(shuffled, '--config', config, '--json');
    expect(r.status).toBe(0);
    expect(r.err).toBe(
      `${shuffled}: 2 lines have an earlier time than the line before them; the calls were sorted by time`,
    );
    const sorted = await json(inOrder, '--config', config);
    expect(JSON.parse(r.out)).toEqual(sorted);
  });
});
