import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSwitchboard, SwitchboardError } from 'nestjs-switchboard';
import type { TrafficLine } from '../../src/traffic/traffic-line';
import { TrafficLog } from '../../src/traffic/traffic-log';
import '../support/quiet-logs';
import { ask, askClaude, CLAUDE, GPT, rig } from '../support/upstream';

const silent = () => ({ log() {}, warn() {}, error() {}, debug() {} });

const read = (file: string): TrafficLine[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as TrafficLine);

describe('recordTraffic', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'traffic-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one line per call with the tokens the upstream reported, and no content', async () => {
    const file = join(dir, 'traffic.jsonl');
    const r = await rig({ openai: 2, anthropic: 1, recordTraffic: file });
    const secret = 'the-secret-prompt-words';
    const reported: { input: number; output: number; cached?: number }[] = [];
    try {
      const calls = Array.from({ length: 50 }, async (_, i) => {
        if (i % 10 === 9) {
          const m = await r.sb.messages.create({
            ...askClaude(`${secret} ${i}`),
            tenant: 'acme',
            lane: 'batch',
          });
          reported.push({ input: m.usage.input_tokens, output: m.usage.output_tokens });
          return;
        }
        if (i % 10 === 4) {
          const stream = await r.sb.chat.completions.create(
            ask(`${secret} ${i}`.repeat(i), {
              stream: true,
              max_tokens: 300,
              stream_options: { include_usage: true },
            }),
          );
          for await (const chunk of stream) {
            if (chunk.usage) {
              reported.push({
                input: chunk.usage.prompt_tokens,
                output: chunk.usage.completion_tokens,
              });
            }
          }
          return;
        }
        const c = await r.sb.chat.completions.create(
          ask(`${secret} ${i}`.repeat(i + 1), { max_tokens: 300 }),
        );
        reported.push({ input: c.usage!.prompt_tokens, output: c.usage!.completion_tokens });
      });
      await Promise.all(calls);
    } finally {
      await r.close();
    }
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(secret);
    expect(text).not.toContain('Hello');
    const lines = read(file);
    expect(lines).toHaveLength(50);
    const key = (x: { input: number; output: number }) => `${x.input}/${x.output}`;
    expect(
      lines.map((l) => key({ input: l.input_tokens, output: l.output_tokens })).sort(),
    ).toEqual(reported.map(key).sort());
    for (const l of lines) {
      expect(l.status).toBe(200);
      expect(typeof l.t).toBe('number');
      expect(l.latency_ms).toBeGreaterThanOrEqual(0);
      expect(['oai0', 'oai1', 'claude0']).toContain(l.deployment);
    }
    const claude = lines.filter((l) => l.model === CLAUDE);
    expect(claude).toHaveLength(5);
    for (const l of claude)
      expect(l).toMatchObject({ lane: 'batch', tenant: 'acme', max_tokens: 256 });
    const gpt = lines.filter((l) => l.model === GPT);
    for (const l of gpt) expect(l).toMatchObject({ lane: 'interactive', max_tokens: 300 });
  });

  it('a call that fails for its caller is one line with its status, after failover', async () => {
    const file = join(dir, 'traffic.jsonl');
    const r = await rig({ openai: 1, recordTraffic: file, logger: silent() });
    try {
      r.upstream.deployment('oai0').fail({ kind: 'status', status: 500 }, 2);
      await expect(r.sb.chat.completions.create(ask('hi', { max_tokens: 50 }))).rejects.toThrow();
    } finally {
      await r.close();
    }
    const lines = read(file);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      model: GPT,
      deployment: 'oai0',
      status: 500,
      output_tokens: 0,
    });
  });

  it('an empty path is refused, naming the option', () => {
    expect(() =>
      createSwitchboard({
        deployments: [{ provider: 'openai', name: 'a', apiKey: 'k', models: [{ name: 'm' }] }],
        recordTraffic: ' ',
      }),
    ).toThrow(SwitchboardError);
    expect(() =>
      createSwitchboard({
        deployments: [{ provider: 'openai', name: 'a', apiKey: 'k', models: [{ name: 'm' }] }],
        recordTraffic: ' ',
      }),
    ).toThrow(/recordTraffic/);
  });

  it('the buffer is bounded: beyond it lines drop with one warning, and close() writes the rest', async () => {
    const file = join(dir, 'bounded.jsonl');
    const warnings: string[] = [];
    const logger = { ...silent(), warn: (m: unknown) => void warnings.push(String(m)) };
    const log = new TrafficLog(file, logger, 1_000);
    for (let i = 0; i < 100; i++) log.write(JSON.stringify({ t: i, model: 'm' }));
    await log.close();
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.length).toBeLessThan(100);
    expect(warnings.filter((w) => /cannot keep up/.test(w))).toHaveLength(1);
    expect(warnings.some((w) => /lines were dropped/.test(w))).toBe(true);
    log.write('{"after":"close"}');
    await log.close();
    expect(readFileSync(file, 'utf8')).not.toContain('after');
  });

  it('a file that cannot be written is logged once; calls are not affected', async () => {
    const errors: string[] = [];
    const logger = { ...silent(), error: (m: unknown) => void errors.push(String(m)) };
    const log = new TrafficLog(join(dir, 'missing', 'dir', 'x.jsonl'), logger);
    log.write('{}');
    await log.flush();
    log.write('{}');
    await log.close();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/cannot write/);
  });
});
