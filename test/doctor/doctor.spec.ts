import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DoctorRow } from '../../src/doctor/doctor-row';
import { runDoctorCli } from '../../src/doctor/run';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

const root = resolve(__dirname, '../..');

/** A port nothing listens on: taken from the system, then let go. */
function closedPort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** The doctor as a user runs it: a child process, its output and exit status. */
function doctor(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [
        '-r',
        join(root, 'test/support/ts-register.js'),
        join(root, 'src/doctor/cli.ts'),
        'doctor',
        ...args,
      ],
      { cwd: root, env: { ...process.env, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: unknown }).code as number) : 0;
        done({ code: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
  });
}

describe('nestjs-switchboard doctor', () => {
  let upstream: SimulatedUpstream;
  let dir: string;
  let good: string;
  let withBad: string;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        {
          name: 'east',
          tpm: 30_000,
          rpm: 300,
          apiKey: 'east-key',
          deploymentNames: ['gpt4o-east', 'embed-east'],
        },
        { name: 'west', tpm: 60_000, rpm: 600, deploymentNames: ['prod-gpt-4o'] },
        { name: 'foundry', tpm: 40_000, rpm: 100, itpm: 20_000, otpm: 4_000 },
      ],
    });
    const gone = await closedPort();
    dir = mkdtempSync(join(tmpdir(), 'sb-doctor-'));
    const deployments = [
      'deployments:',
      '  - provider: openai',
      '    name: east',
      `    baseURL: ${upstream.deployment('east').openaiBaseURL}`,
      '    apiKey: ${EAST_KEY}',
      '    models:',
      '      - { name: gpt-4o, deployment: gpt4o-east, tpm: 30000, rpm: 300 }',
      '      - { name: text-embedding-3-small, deployment: embed-east }',
      '  - provider: openai',
      '    name: west',
      `    baseURL: ${upstream.deployment('west').openaiBaseURL}`,
      '    apiKey: k',
      '    models:',
      '      - { name: gpt-4o, deployment: prod-gpt-4o, tpm: 50000, rpm: 600 }',
      '  - provider: anthropic',
      '    name: foundry',
      `    baseURL: ${upstream.deployment('foundry').anthropicBaseURL}`,
      '    apiKey: k',
      '    models:',
      '      - { name: claude-sonnet-5, tpm: 40000, rpm: 100, itpm: 20000, otpm: 4000 }',
    ];
    good = join(dir, 'good.yaml');
    writeFileSync(good, `${deployments.join('\n')}\n`);
    withBad = join(dir, 'with-bad.yaml');
    writeFileSync(
      withBad,
      [
        ...deployments,
        '  - provider: openai',
        '    name: gone',
        `    baseURL: http://127.0.0.1:${gone}/openai/v1/`,
        '    apiKey: k',
        '    models:',
        '      - { name: gpt-4o, deployment: gpt4o-gone }',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('--json: one row per deployment and model, the limits the upstream reports, exit 1 with one unreachable', async () => {
    const { code, stdout } = await doctor([withBad, '--json'], { EAST_KEY: 'east-key' });
    expect(code).toBe(1);
    const rows = JSON.parse(stdout) as DoctorRow[];
    const strip = rows.map(({ latencyMs, ...rest }) => {
      expect(typeof latencyMs).toBe('number');
      return rest;
    });
    expect(strip).toEqual([
      {
        deployment: 'east',
        model: 'gpt-4o',
        ok: true,
        status: 200,
        limits: { tpm: 30_000, rpm: 300 },
      },
      {
        deployment: 'east',
        model: 'text-embedding-3-small',
        ok: true,
        status: 200,
        limits: { tpm: 30_000, rpm: 300 },
      },
      {
        deployment: 'west',
        model: 'gpt-4o',
        ok: true,
        status: 200,
        limits: { tpm: 60_000, rpm: 600 },
      },
      {
        deployment: 'foundry',
        model: 'claude-sonnet-5',
        ok: true,
        status: 200,
        limits: { tpm: 40_000, rpm: 100, itpm: 20_000, otpm: 4_000 },
      },
      {
        deployment: 'gone',
        model: 'gpt-4o',
        ok: false,
        error: expect.stringMatching(/^unreachable: .*ECONNREFUSED/),
      },
    ]);
    for (const row of rows) {
      expect(
        Object.keys(row).every((k) =>
          ['deployment', 'model', 'ok', 'status', 'error', 'latencyMs', 'limits'].includes(k),
        ),
      ).toBe(true);
    }
    // The smallest requests, each under its own upstream name.
    const east = upstream.deployment('east').requests;
    expect(east.map((r) => [r.api, r.model])).toEqual([
      ['chat', 'gpt4o-east'],
      ['embeddings', 'embed-east'],
    ]);
    expect((east[0]!.body as { max_tokens?: number }).max_tokens).toBe(1);
    expect((east[1]!.body as { input?: string }).input).toBe('ping');
    const claude = upstream.deployment('foundry').requests[0]!;
    expect((claude.body as { max_tokens?: number }).max_tokens).toBe(1);
  }, 150_000);

  it('exit 0 when every row answers', async () => {
    upstream.reset();
    const { code, stdout } = await doctor([good, '--json'], { EAST_KEY: 'east-key' });
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as DoctorRow[]).every((r) => r.ok)).toBe(true);
  }, 150_000);

  it('the table: upstream names, plain words, and limits that differ from the configuration marked', async () => {
    upstream.reset();
    let out = '';
    const status = await runDoctorCli(
      ['doctor', withBad],
      { out: (t) => void (out += t), err: (t) => void (out += t) },
      { EAST_KEY: 'wrong-key' },
    );
    expect(status).toBe(1);
    const lines = out.split('\n');
    const line = (deployment: string, model: string) =>
      lines.find((l) => l.startsWith(deployment) && l.includes(model))!;
    expect(line('east', 'gpt-4o (gpt4o-east)')).toMatch(/FAILED: key not accepted \(401\)/);
    expect(line('west', 'gpt-4o (prod-gpt-4o)')).toMatch(
      /answered \(200\)\s+\d+ ms\s+tpm 60000 \/ 50000 !, rpm 600 \/ 600$/,
    );
    expect(line('foundry', 'claude-sonnet-5')).toMatch(
      /tpm 40000 \/ 40000, rpm 100 \/ 100, itpm 20000 \/ 20000, otpm 4000 \/ 4000$/,
    );
    expect(line('gone', 'gpt-4o (gpt4o-gone)')).toMatch(/FAILED: unreachable/);
    expect(out).toMatch(/2 of 5 answered, 3 failed\./);
    expect(out).toMatch(/^! the upstream's limit differs from the configured one/m);
  });

  it("lists each level of the quota pool paths: the upstream's limit for a key's own pool, the configured one for the levels above", async () => {
    upstream.reset();
    const pooled = join(dir, 'pooled.yaml');
    writeFileSync(
      pooled,
      [
        'quotaPools:',
        '  org: { tpm: 80000 }',
        'deployments:',
        '  - provider: openai',
        '    name: east',
        `    baseURL: ${upstream.deployment('east').openaiBaseURL}`,
        '    apiKey: east-key',
        '    models:',
        '      - { name: gpt-4o, deployment: gpt4o-east, tpm: 30000, rpm: 300, quotaPool: org/p1 }',
        '  - provider: openai',
        '    name: west',
        `    baseURL: ${upstream.deployment('west').openaiBaseURL}`,
        '    apiKey: k',
        '    models:',
        '      - { name: gpt-4o, deployment: prod-gpt-4o, tpm: 60000, rpm: 600, quotaPool: org/p2 }',
        '',
      ].join('\n'),
    );
    let out = '';
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t) };
    expect(await runDoctorCli(['doctor', pooled], io, {})).toBe(0);
    const lines = out.split('\n');
    const at = lines.findIndex((l) => l.startsWith('QUOTA POOL'));
    expect(lines.slice(at + 1, at + 4)).toEqual([
      expect.stringMatching(/^org\s+east\/gpt-4o, west\/gpt-4o\s+tpm \? \/ 80000$/),
      expect.stringMatching(/^org\/p1\s+east\/gpt-4o\s+tpm 30000 \/ 30000, rpm 300 \/ 300$/),
      expect.stringMatching(/^org\/p2\s+west\/gpt-4o\s+tpm 60000 \/ 60000, rpm 600 \/ 600$/),
    ]);
  });

  it('a deployment name the resource does not have, in plain words', async () => {
    upstream.deployment('west').deploymentNames = ['something-else'];
    try {
      let out = '';
      const status = await runDoctorCli(
        ['doctor', good, '--json'],
        { out: (t) => void (out += t), err: () => {} },
        {
          EAST_KEY: 'east-key',
        },
      );
      expect(status).toBe(1);
      const west = (JSON.parse(out) as DoctorRow[]).find((r) => r.deployment === 'west')!;
      expect(west).toMatchObject({
        ok: false,
        status: 404,
        error: "no deployment named 'prod-gpt-4o' on this resource (404 DeploymentNotFound)",
      });
    } finally {
      upstream.deployment('west').deploymentNames = ['prod-gpt-4o'];
    }
  });

  it('usage and configuration errors exit 2 and say what is wrong', async () => {
    const errors: string[] = [];
    const io = { out: () => {}, err: (t: string) => void errors.push(t) };
    expect(await runDoctorCli(['doctor'], io, {})).toBe(2);
    expect(await runDoctorCli(['doctor', good], io, {})).toBe(2);
    expect(errors.at(-1)).toMatch(/EAST_KEY is not set .*\(line 5\)/);
    expect(await runDoctorCli(['doctor', good, '--frobnicate'], io, {})).toBe(2);
    expect(errors.at(-1)).toMatch(/unknown option --frobnicate/);
  });

  describe('deployments without a key in the file (their token comes from code)', () => {
    const keyless = () => {
      const path = join(dir, 'keyless.yaml');
      writeFileSync(
        path,
        [
          'deployments:',
          '  - provider: openai',
          '    name: west',
          `    baseURL: ${upstream.deployment('west').openaiBaseURL}`,
          '    apiKey: k',
          '    models: [{ name: gpt-4o, deployment: prod-gpt-4o }]',
          '  - provider: anthropic',
          '    name: foundry',
          `    baseURL: ${upstream.deployment('foundry').anthropicBaseURL}`,
          '    models: [{ name: claude-sonnet-5 }]',
          '',
        ].join('\n'),
      );
      return path;
    };
    const io = () => {
      const out: string[] = [];
      const err: string[] = [];
      return {
        out,
        err,
        output: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) },
      };
    };

    it('--token <module> gives them the token function the app uses', async () => {
      upstream.reset();
      const module = join(dir, 'token.js');
      writeFileSync(module, "module.exports = async () => 'entra-token';\n");
      const { out, output } = io();
      const status = await runDoctorCli(
        ['doctor', keyless(), '--json', '--token', module],
        output,
        {},
      );
      expect(status).toBe(0);
      expect((JSON.parse(out.join('')) as DoctorRow[]).map((r) => [r.deployment, r.ok])).toEqual([
        ['west', true],
        ['foundry', true],
      ]);
      const sent = upstream.deployment('foundry').requests.at(-1)!;
      expect(sent.headers['authorization']).toBe('Bearer entra-token');
    });

    it("without one, the row names the file's own index of the deployment", async () => {
      const { out, output } = io();
      const status = await runDoctorCli(['doctor', keyless(), '--json'], output, {});
      expect(status).toBe(1);
      const foundry = (JSON.parse(out.join('')) as DoctorRow[]).find(
        (r) => r.deployment === 'foundry',
      )!;
      expect(foundry.ok).toBe(false);
      expect(foundry.error).toContain("deployments[1] ('foundry')");
    });

    it('a --token module that exports no function is one line, exit 2', async () => {
      const module = join(dir, 'not-a-token.js');
      writeFileSync(module, 'module.exports = { answer: 42 };\n');
      const { err, output } = io();
      expect(await runDoctorCli(['doctor', keyless(), '--token', module], output, {})).toBe(2);
      expect(err.join('\n')).toMatch(
        /^--token .*not-a-token\.js exports no token function: export default/,
      );
      expect(err.join('\n')).not.toMatch(/\n\s+at /);
    });
  });
});
