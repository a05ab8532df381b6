/**
 * The gateway's guard, part by part: keys (constant-time match, never shown), the key a request
 * carries, loopback names, calls in flight per key, and a key's limits per minute as the
 * switchboard's tenant policies.
 */
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import {
  GatewayKeys,
  keyTenant,
  MAX_KEYS_FILE_BYTES,
  presentedKey,
} from '../../sample/guard/gateway-keys';
import { keyLimitsFromEnv } from '../../sample/guard/guard.module';
import { isLoopbackHost } from '../../sample/guard/host-check';
import { KeyLimits } from '../../sample/guard/key-limits';
import { keyPolicyFromEnv, withKeyTenants } from '../../sample/guard/key-tenants';
import type { SwitchboardOptions } from 'nestjs-switchboard';

describe('GatewayKeys', () => {
  it('matches each key to its index, and nothing else', () => {
    const keys = GatewayKeys.fromEnv({ GATEWAY_API_KEYS: ' k1 , k2,,k1' });
    expect(keys.size).toBe(2);
    expect(keys.match('k1')).toBe(0);
    expect(keys.match('k2')).toBe(1);
    for (const wrong of ['', 'k', 'k12', 'K1', ' k1']) expect(keys.match(wrong)).toBeUndefined();
  });

  it('reads a key file (blank lines and comments skipped) beside the list', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-keys-'));
    try {
      const file = join(dir, 'keys');
      writeFileSync(file, '# team A\nfile-key-1\n\n  file-key-2  \n');
      const keys = GatewayKeys.fromEnv({ GATEWAY_API_KEYS: 'k1', GATEWAY_API_KEYS_FILE: file });
      expect(keys.size).toBe(3);
      expect(keys.match('file-key-2')).toBe(2);
      expect(keys.match('# team A')).toBeUndefined();
      expect(() => GatewayKeys.fromEnv({ GATEWAY_API_KEYS_FILE: join(dir, 'missing') })).toThrow(
        /GATEWAY_API_KEYS_FILE could not be read: ENOENT/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a key file over the limit by its size, and /dev/zero, before reading them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-keys-'));
    try {
      const file = join(dir, 'keys');
      // Sparse: 50 MB by its size, nothing on disk.
      const fd = openSync(file, 'w');
      ftruncateSync(fd, 50 * 1024 * 1024);
      closeSync(fd);
      expect(() => GatewayKeys.fromEnv({ GATEWAY_API_KEYS_FILE: file })).toThrow(
        `GATEWAY_API_KEYS_FILE is 52428800 bytes, more than the ${MAX_KEYS_FILE_BYTES} read at most`,
      );
      expect(() => GatewayKeys.fromEnv({ GATEWAY_API_KEYS_FILE: '/dev/zero' })).toThrow(
        'GATEWAY_API_KEYS_FILE is not a regular file',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never shows a key: inspect and JSON give the count only', () => {
    const keys = new GatewayKeys(['super-secret-key']);
    expect(inspect(keys)).toBe('GatewayKeys { 1 keys }');
    expect(JSON.stringify(keys)).toBe('{"keys":1}');
    expect(inspect(keys, { showHidden: true, depth: 5 })).not.toContain('super-secret-key');
  });

  it('no keys: size 0', () => {
    expect(GatewayKeys.fromEnv({}).size).toBe(0);
  });
});

describe('presentedKey', () => {
  it('takes Authorization: Bearer first, then x-api-key', () => {
    expect(presentedKey({ authorization: 'Bearer k1' })).toBe('k1');
    expect(presentedKey({ authorization: 'bearer   k1 ' })).toBe('k1');
    expect(presentedKey({ 'x-api-key': 'k2' })).toBe('k2');
    expect(presentedKey({ authorization: 'Bearer k1', 'x-api-key': 'k2' })).toBe('k1');
    expect(presentedKey({ authorization: 'Basic abc', 'x-api-key': 'k2' })).toBe('k2');
    expect(presentedKey({ authorization: 'Basic abc' })).toBeUndefined();
    expect(presentedKey({})).toBeUndefined();
  });
});

describe('isLoopbackHost', () => {
  it.each([
    'localhost',
    'localhost:3000',
    'LOCALHOST.',
    'app.localhost:8080',
    '127.0.0.1',
    '127.0.0.1:3000',
    '127.1.2.3',
    '[::1]',
    '[::1]:3000',
    '::1',
  ])('%s is loopback', (host) => expect(isLoopbackHost(host)).toBe(true));

  it.each([
    'rebind.attacker.example',
    'rebind.attacker.example:3000',
    'localhost.attacker.example',
    '127.0.0.1.attacker.example',
    '0.0.0.0',
    '::',
    '',
    '10.0.0.1',
    '[fe80::1]:3000',
    '128.0.0.1',
  ])('%s is not', (host) => expect(isLoopbackHost(host)).toBe(false));
});

describe('KeyLimits', () => {
  it('allows maxInFlight calls at once per key; a release frees one, only once', () => {
    const limits = new KeyLimits({ maxInFlight: 2 });
    const a = limits.admit(0);
    const b = limits.admit(0);
    expect(a.ok && b.ok).toBe(true);
    expect(limits.admit(0)).toMatchObject({ ok: false, retryAfterMs: 1_000 });
    expect(limits.admit(1).ok).toBe(true);
    if (a.ok) {
      a.release();
      a.release();
    }
    expect(limits.flying(0)).toBe(1);
    expect(limits.admit(0).ok).toBe(true);
    expect(limits.admit(0).ok).toBe(false);
  });

  it('reads its limit from the environment and refuses what is not a positive integer', () => {
    expect(keyLimitsFromEnv({}).enabled).toBe(false);
    expect(keyLimitsFromEnv({ GATEWAY_KEY_MAX_IN_FLIGHT: '4' }).enabled).toBe(true);
    expect(() => keyLimitsFromEnv({ GATEWAY_KEY_MAX_IN_FLIGHT: '0' })).toThrow(
      /GATEWAY_KEY_MAX_IN_FLIGHT must be a positive integer/,
    );
  });
});

describe("a key's limits per minute, as tenant policies", () => {
  const deployments: SwitchboardOptions['deployments'] = [
    { provider: 'openai', name: 'd', models: [{ name: 'gpt-4o-mini' }] },
  ];

  it('reads GATEWAY_KEY_RPM and GATEWAY_KEY_TPM, and refuses what is not a positive integer', () => {
    expect(keyPolicyFromEnv({})).toEqual({});
    expect(keyPolicyFromEnv({ GATEWAY_KEY_RPM: '60', GATEWAY_KEY_TPM: ' 20000 ' })).toEqual({
      rpm: 60,
      tpm: 20_000,
    });
    expect(() => keyPolicyFromEnv({ GATEWAY_KEY_RPM: '1e300' })).toThrow(
      /GATEWAY_KEY_RPM must be a positive integer/,
    );
    expect(() => keyPolicyFromEnv({ GATEWAY_KEY_TPM: '-5' })).toThrow(
      /GATEWAY_KEY_TPM must be a positive integer/,
    );
  });

  it("puts them under '*' and into the file's policies of keys, whose own fields win", () => {
    const options = withKeyTenants(
      {
        deployments,
        tenants: {
          [keyTenant('k3')]: { rpm: 100, budget: { usd: 5, per: 'day' } },
          acme: { tpm: 1 },
        },
      },
      { rpm: 60, tpm: 20_000 },
      true,
    );
    expect(options.tenants).toEqual({
      '*': { rpm: 60, tpm: 20_000 },
      [keyTenant('k3')]: { rpm: 100, tpm: 20_000, budget: { usd: 5, per: 'day' } },
      acme: { tpm: 1 },
    });
  });

  it('leaves the options as they are without keys, or without limits', () => {
    const options = { deployments, tenants: { [keyTenant('k0')]: { tpm: 5 } } };
    expect(withKeyTenants(options, { rpm: 60 }, false)).toBe(options);
    expect(withKeyTenants(options, {}, true)).toBe(options);
  });
});
