import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../sample/main';

describe('npm start with a bad configuration file', () => {
  let dir: string;
  const env = { ...process.env };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'switchboard-bad-config-'));
  });
  afterEach(() => {
    process.env = { ...env };
    process.exitCode = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints every problem once, without a stack trace, and exits 1 before Nest starts', async () => {
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(
      file,
      [
        'deployments:',
        '  - provider: openai',
        '    name: east',
        '    models:',
        '      - { name: gpt-4o-mini, tpm: -5 }',
        '  - provider: nope',
        '',
      ].join('\n'),
    );
    process.env.SWITCHBOARD_CONFIG = file;
    const errors: string[] = [];
    const error = jest
      .spyOn(console, 'error')
      .mockImplementation((...parts: unknown[]) => void errors.push(parts.map(String).join(' ')));
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      await main();
    } finally {
      error.mockRestore();
      log.mockRestore();
      write.mockRestore();
    }
    expect(process.exitCode).toBe(1);
    expect(errors).toHaveLength(1);
    const [printed] = errors;
    expect(printed).toContain('deployments[0].models[0].tpm must be a non-negative integer');
    expect(printed).toContain("deployments[1].provider must be 'openai' or 'anthropic'");
    expect(printed!.match(/tpm must be/g)).toHaveLength(1);
    expect(printed).not.toMatch(/^\s+at /m);
  });

  it('refuses a .env that is a FIFO in one line instead of waiting for a writer', async () => {
    const cwd = process.cwd();
    execFileSync('mkfifo', [join(dir, '.env')]);
    const errors: string[] = [];
    const error = jest
      .spyOn(console, 'error')
      .mockImplementation((...parts: unknown[]) => void errors.push(parts.map(String).join(' ')));
    process.chdir(dir);
    try {
      await main();
    } finally {
      process.chdir(cwd);
      error.mockRestore();
    }
    expect(process.exitCode).toBe(1);
    expect(errors).toEqual([
      '.env could not be read: not a regular file (a device, FIFO or directory is never read)',
    ]);
  });
});
