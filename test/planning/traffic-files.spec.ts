/**
 * Every file read is bounded: traffic files are streamed line by line (a line over the limit
 * refused by its number), and a FIFO or a device is refused by every reader (traffic, the
 * configuration, the gateway's keys file) before a byte is read; the traffic recorder creates
 * its file 0600, never writes into a FIFO and closes at once when its path is one. `plan`'s
 * option and output problems are one line each, without a stack. Real files, a real FIFO
 * (mkfifo), `/dev/zero`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSwitchboard, loadSwitchboardConfigFile } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import OpenAI from 'openai';
import { GatewayKeys } from '../../sample/guard/gateway-keys';
import { runPlanCli } from '../../src/planning/run-plan';
import {
  MAX_TRAFFIC_LINE_BYTES,
  parseTraffic,
  readTraffic,
} from '../../src/planning/traffic-trace';

const T0 = Date.UTC(2026, 0, 5, 9);
const CONFIG = `deployments:
  - provider: openai
    name: east
    baseURL: https://east.openai.azure.com/openai/v1/
    apiKey: \${KEY}
    models: [{ name: gpt-4o, tpm: 100000 }]
`;

const line = (i: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    t: T0 + i * 1_000,
    model: 'gpt-4o',
    input_tokens: 100 + i,
    output_tokens: 10,
    tenant: `tenant-${i % 7}`,
    ...extra,
  });

describe('files', () => {
  let dir: string;
  let fifo: string;
  let config: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-files-'));
    fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    config = join(dir, 'sb.yaml');
    writeFileSync(config, CONFIG);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function plan(...args: string[]) {
    const lines: string[] = [];
    const status = await runPlanCli(
      ['plan', ...args],
      {
        out: (t) => void lines.push(...t.split('\n')),
        err: (t) => void lines.push(...t.split('\n')),
      },
      {},
    );
    return { status, lines };
  }

  describe('a traffic file', () => {
    it('is read a chunk at a time: 40 000 lines across many chunks read as the whole text parses', () => {
      const text = Array.from({ length: 40_000 }, (_, i) => line(i)).join('\n') + '\n';
      expect(text.length).toBeGreaterThan(3 * 1024 * 1024);
      const file = join(dir, 'big.jsonl');
      writeFileSync(file, text);
      const streamed = readTraffic(file);
      const whole = parseTraffic(text, file);
      expect(streamed.count).toBe(40_000);
      const differing = (a: ArrayLike<number>, b: ArrayLike<number>) =>
        Array.from({ length: a.length }, (_, i) => i).filter((i) => a[i] !== b[i]).length;
      expect(differing(streamed.input, whole.input)).toBe(0);
      expect(differing(streamed.tenant, whole.tenant)).toBe(0);
      expect(differing(streamed.t, whole.t)).toBe(0);
      expect(streamed.tenants).toEqual(whole.tenants);
    });

    it('sorts lines out of order, in place', () => {
      const file = join(dir, 'unsorted.jsonl');
      writeFileSync(file, [line(2), line(0), line(1)].join('\n'));
      const trace = readTraffic(file);
      expect([...trace.input]).toEqual([100, 101, 102]);
      expect(trace.outOfOrder).toBe(1);
    });

    it(`with a line over ${MAX_TRAFFIC_LINE_BYTES} bytes: refused by its number, one line`, async () => {
      const file = join(dir, 'long.jsonl');
      const long = line(1, { tenant: 'x'.repeat(MAX_TRAFFIC_LINE_BYTES) });
      writeFileSync(file, [line(0), long, line(2)].join('\n'));
      const { status, lines } = await plan(file, '--config', config);
      expect(status).toBe(2);
      expect(lines).toEqual([
        `${file}:2: is longer than ${MAX_TRAFFIC_LINE_BYTES} bytes: not a recorded call`,
      ]);
    });

    it.each([['/dev/zero'], ['the FIFO']])('%s: one line, exit 2, nothing read', async (which) => {
      const path = which === '/dev/zero' ? which : fifo;
      const { status, lines } = await plan(path, '--config', config);
      expect(status).toBe(2);
      expect(lines).toEqual([
        `${path}: cannot be read (not a regular file (a device, FIFO or directory is never read))`,
      ]);
    });

    it('with a time no Date holds is refused by its line, before --html draws it', async () => {
      const file = join(dir, 'range.jsonl');
      writeFileSync(file, [line(0), line(1, { t: 1e16 })].join('\n'));
      const { status, lines } = await plan(file, '--config', config, '--html', join(dir, 'r.html'));
      expect(status).toBe(2);
      expect(lines).toEqual([
        `${file}:2: "t" must be the arrival time in epoch milliseconds (0 to 8640000000000000)`,
      ]);
    });
  });

  describe('plan options', () => {
    let traffic: string;
    beforeAll(() => {
      traffic = join(dir, 'ok.jsonl');
      writeFileSync(traffic, [line(0), line(1)].join('\n'));
    });

    it.each(['5e-324', '1e308', '0', 'x'])('--scale %s: one line, exit 2', async (scale) => {
      const { status, lines } = await plan(traffic, '--config', config, '--scale', scale);
      expect(status).toBe(2);
      expect(lines).toEqual([
        '--scale must be a number from 0.001 to 1000 (nestjs-switchboard plan --help)',
      ]);
    });

    it('an --html path that cannot be written, or a FIFO: one line, exit 2, before the replay', async () => {
      for (const [path, why] of [
        [join(dir, 'no-such-dir', 'r.html'), 'cannot be written (ENOENT)'],
        [fifo, 'cannot be written (ENXIO)'],
      ]) {
        const { status, lines } = await plan(traffic, '--config', config, '--html', path!);
        expect(status).toBe(2);
        expect(lines).toEqual([`--html ${path} ${why}`]);
      }
    });

    it('a writable --html path gets the report', async () => {
      const html = join(dir, 'ok.html');
      writeFileSync(html, 'x'.repeat(100_000));
      const { status } = await plan(traffic, '--config', config, '--html', html);
      expect(status).toBe(0);
      expect(readFileSync(html, 'utf8')).toMatch(/^<!doctype html>[\s\S]*<\/html>\n?$/i);
    });
  });

  describe('the configuration and keys readers', () => {
    it('a FIFO as the configuration is refused at once', () => {
      expect(() => loadSwitchboardConfigFile(fifo)).toThrow(/not a regular file/);
    });

    it('a FIFO or /dev/zero as GATEWAY_API_KEYS_FILE is refused at once', () => {
      for (const path of [fifo, '/dev/zero']) {
        expect(() => GatewayKeys.fromEnv({ GATEWAY_API_KEYS_FILE: path })).toThrow(
          'GATEWAY_API_KEYS_FILE is not a regular file',
        );
      }
    });
  });

  describe('the traffic recorder', () => {
    let upstream: SimulatedUpstream;
    beforeAll(async () => {
      upstream = await SimulatedUpstream.start({
        deployments: [{ name: 'east', tpm: 1_000_000, rpm: 1_000 }],
      });
    });
    afterAll(() => upstream.close());

    async function record(path: string): Promise<string[]> {
      const errors: string[] = [];
      const sb = createSwitchboard({
        deployments: [
          {
            provider: 'openai',
            name: 'east',
            baseURL: upstream.deployment('east').openaiBaseURL,
            apiKey: 'k',
            models: [{ name: 'gpt-4o-mini' }],
          },
        ],
        recordTraffic: path,
        logger: { log: () => {}, warn: () => {}, error: (l: string) => void errors.push(l) },
      });
      const client = new OpenAI({ apiKey: 'x', baseURL: 'http://sb/v1', fetch: sb.fetch });
      await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
      });
      // A hang here times the test out.
      await sb.close();
      return errors;
    }

    it('creates its file readable by its owner only', async () => {
      const path = join(dir, 'traffic.jsonl');
      expect(await record(path)).toEqual([]);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(readFileSync(path, 'utf8')).toContain('"model":"gpt-4o-mini"');
    });

    it('never waits on a FIFO: close() ends, one error line says why', async () => {
      const errors = await record(fifo);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`recordTraffic: cannot write ${fifo}`);
    });
  });
});
