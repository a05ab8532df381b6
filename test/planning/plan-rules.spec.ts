import type { ModelConfig, SwitchboardOptions } from 'nestjs-switchboard';
import { plan } from '../../src/planning/plan';
import { parseTraffic } from '../../src/planning/traffic-trace';
import type { UpstreamRules } from '../../src/planning/upstream-rules';
import { documentedRules } from '../../src/planning/documented-rules';

const T0 = Date.UTC(2026, 0, 5, 9);

/** `perMinute` calls a minute for `minutes`, each of the given sizes. */
function steady(
  model: string,
  minutes: number,
  perMinute: number,
  call: { input: number; cached?: number; output: number; maxTokens: number; latency: number },
) {
  const lines: string[] = [];
  const every = 60_000 / perMinute;
  for (let i = 0; i < minutes * perMinute; i++) {
    lines.push(
      JSON.stringify({
        t: T0 + i * every,
        model,
        input_tokens: call.input,
        cached_tokens: call.cached ?? 0,
        output_tokens: call.output,
        max_tokens: call.maxTokens,
        status: 200,
        latency_ms: call.latency,
      }),
    );
  }
  return parseTraffic(lines.join('\n'));
}

const foundry = (model: ModelConfig): SwitchboardOptions => ({
  deployments: [
    { provider: 'anthropic', name: 'foundry-east', resource: 'east', apiKey: 'k', models: [model] },
  ],
});

const azure = (model: ModelConfig): SwitchboardOptions => ({
  deployments: [
    {
      provider: 'openai',
      name: 'sweden-central',
      baseURL: 'https://sweden.openai.azure.com/openai/v1/',
      apiKey: 'k',
      models: [model],
    },
  ],
});

describe('plan replays each kind of upstream by its own rules', () => {
  // Claude: 10 calls a minute of 1 000 input and 800 output tokens, max_tokens 4 096, for an
  // hour: 10 000 input and 8 000 output tokens a minute.
  const claude = steady('claude-sonnet-4-5', 60, 10, {
    input: 1_000,
    output: 800,
    maxTokens: 4_096,
    latency: 2_000,
  });
  const claudeModel = { name: 'claude-sonnet-4-5', rpm: 200, itpm: 100_000, otpm: 10_000 };

  it('Claude on Foundry: OTPM counts actual output (max_tokens above it is no reason to wait), and it is the limit most used', async () => {
    const { report, result } = await plan(claude, foundry(claudeModel));
    expect(report.callers).toEqual({ failed: 0, waitP50Ms: 0, waitP95Ms: 0 });
    const [east] = result.deployments;
    expect(east!.limits.map((l) => l.name)).toEqual(['itpm', 'otpm']);
    expect(east!.upstream429s).toBe(0);
    // 8 000 output tokens a minute of 10 000; input only 10 %.
    expect(east!.utilization).toBeGreaterThan(0.75);
    expect(east!.utilization).toBeLessThan(0.85);
  });

  it('Claude whose OTPM binds: --find-tpm scales to the output demand, the input limit follows', async () => {
    const scaled = await plan(claude, foundry(claudeModel), { scale: 2 });
    expect(scaled.report.callers.failed > 0 || scaled.report.callers.waitP95Ms > 0).toBe(true);
    const { report } = await plan(claude, foundry(claudeModel), { scale: 2, findTpm: true });
    const s = report.suggestion!['claude-sonnet-4-5']!;
    // At scale 2: 16 000 output tokens a minute for 30 minutes. A bucket holds a minute's limit,
    // so a limit L serves it once (16 000 - L) x 30 <= L: at least 16 000 x 30 / 31.
    expect(s.otpm).toBeGreaterThanOrEqual(Math.floor((16_000 * 30) / 31));
    expect(s.otpm).toBeLessThanOrEqual(16_000 * 1.35);
    // One factor for every limit: ITPM grows with it, ten times the 20 000 input a minute needs.
    expect(s.itpm! / s.otpm!).toBeCloseTo(10, 1);
    expect(s.tpm).toBe(s.itpm! + s.otpm!);
  });

  // PTU: 10 calls a minute of 2 000 input (1 500 of them cached) and 300 output, max_tokens
  // 1 000, for half an hour, on 60 000 input-equivalent tokens a minute, output x 4.
  const ptuTrace = steady('gpt-4.1', 30, 10, {
    input: 2_000,
    cached: 1_500,
    output: 300,
    maxTokens: 1_000,
    latency: 1_500,
  });
  const ptuModel = { name: 'gpt-4.1', tpm: 60_000, provisioned: true, outputWeight: 4 };

  it('Azure PTU: utilization counts uncached input and output x outputWeight; as a standard deployment it counts prompt + max_tokens', async () => {
    const ptu = await plan(ptuTrace, azure(ptuModel));
    expect(ptu.report.callers.failed).toBe(0);
    const { spanMs } = ptu.result;
    const perMinute = (tokensPerCall: number) => (tokensPerCall * 300) / (spanMs / 60_000);
    const [d] = ptu.result.deployments;
    expect(d!.upstream429s).toBe(0);
    expect(d!.utilization).toBeCloseTo(perMinute(500 + 300 * 4) / 60_000, 6);

    const standard = await plan(ptuTrace, azure({ name: 'gpt-4.1', tpm: 60_000 }));
    expect(standard.result.deployments[0]!.utilization).toBeCloseTo(
      perMinute(2_000 + 1_000) / 60_000,
      6,
    );
  });

  it('the switchboard reads the headers the rules send: without them the same replay meets more upstream 429s', async () => {
    // 20 calls a second for 20 s on 60 000 TPM (360 RPM, 60 per 10 s), rpm not configured: the
    // short window's limit is only in Azure's headers, and the queue holds what does not fit.
    const burst = steady('gpt-4o', 1 / 3, 1_200, {
      input: 100,
      output: 10,
      maxTokens: 20,
      latency: 500,
    });
    const options: SwitchboardOptions = {
      ...azure({ name: 'gpt-4o', tpm: 60_000 }),
      queue: { maxWait: 120_000 },
    };
    const deaf: UpstreamRules = {
      quotaFor: (deployment, model) => {
        const quota = documentedRules.quotaFor(deployment, model);
        return {
          limits: quota.limits,
          counted: (verdict, output, k) => quota.counted(verdict, output, k),
          settle: (verdict, output, now) => quota.settle(verdict, output, now),
          admit: (call, now) => {
            const verdict = quota.admit(call, now);
            const retry: Record<string, string | number> = {};
            for (const [name, value] of Object.entries(verdict.headers)) {
              if (name.startsWith('retry-after')) retry[name] = value;
            }
            return { ...verdict, headers: retry };
          },
        };
      },
    };
    const told = await plan(burst, options);
    const untold = await plan(burst, options, { rules: deaf });
    expect(told.report.callers.failed).toBe(0);
    const sent429s = (p: typeof told) => p.report.deployments[0]!.upstream429s;
    expect(sent429s(told)).toBeLessThan(sent429s(untold));
  });
});
