/**
 * The gateway's own entry point (`npm start`) in a child process, with HOST beyond loopback and no
 * keys: it must refuse before it listens, so that nothing answers on the network.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ENV = [
  'GATEWAY_API_KEYS',
  'GATEWAY_API_KEYS_FILE',
  'GATEWAY_KEY_RPM',
  'GATEWAY_KEY_TPM',
  'GATEWAY_KEY_MAX_IN_FLIGHT',
  'SWITCHBOARD_CONFIG',
  'REDIS_URL',
];

describe('beyond loopback without keys', () => {
  it('refuses to start, naming GATEWAY_API_KEYS, and exits non-zero before it listens', async () => {
    const root = join(__dirname, '../..');
    const env: NodeJS.ProcessEnv = { ...process.env, HOST: '0.0.0.0', PORT: '0' };
    for (const name of ENV) delete env[name];
    const child = spawn(
      process.execPath,
      [
        '-r',
        join(__dirname, '../support/ts-register.js'),
        '-r',
        join(__dirname, 'resolve-sources.ts'),
        join(root, 'sample/main.ts'),
      ],
      { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearTimeout(killer);
    expect(code).toBe(1);
    expect(stderr).toContain('GATEWAY_API_KEYS');
    expect(stderr).toContain('0.0.0.0');
    expect(stdout).not.toContain('listening');
  }, 90_000);
});
