import { createHash, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The largest keys file read: ten thousand keys of a hundred characters. Checked before a byte is
 * read, so a mistaken path (`/dev/zero`, a log file) fails at once instead of filling memory.
 */
export const MAX_KEYS_FILE_BYTES = 1024 * 1024;

/** The keys file's text: a regular file of at most {@link MAX_KEYS_FILE_BYTES}, or an error. */
function readKeysFile(path: string): string {
  let fd: number;
  try {
    // Without O_NONBLOCK, opening a FIFO waits for a writer: start-up would hang.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw new Error(
      `GATEWAY_API_KEYS_FILE could not be read: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error('GATEWAY_API_KEYS_FILE is not a regular file');
    if (stat.size > MAX_KEYS_FILE_BYTES) {
      throw new Error(
        `GATEWAY_API_KEYS_FILE is ${stat.size} bytes, more than the ${MAX_KEYS_FILE_BYTES} read at most`,
      );
    }
    // At most the limit, whatever the file grew to since.
    const buffer = Buffer.alloc(stat.size);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n) {
      n = readSync(fd, buffer, length, buffer.length - length, null);
    }
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

/** The environment the gateway's keys and per-key limits are read from. */
export interface GuardEnv {
  /** `k1,k2`: the keys clients send as `Authorization: Bearer` or `x-api-key`. */
  GATEWAY_API_KEYS?: string;
  /** A file with one key per line (blank lines and `#` comments skipped), added to the above. */
  GATEWAY_API_KEYS_FILE?: string;
  /** Model calls per minute per key, a tenant policy of the switchboard (absent: no limit). */
  GATEWAY_KEY_RPM?: string;
  /** Tokens per minute per key, counted at admission, likewise (absent: no limit). */
  GATEWAY_KEY_TPM?: string;
  /** Calls in flight per key (absent: no limit). */
  GATEWAY_KEY_MAX_IN_FLIGHT?: string;
  /**
   * `a1,a2`: keys that also read every tenant's spend and queue (`/switchboard` in full,
   * `/metrics` with its tenant series); accepted as keys too.
   */
  GATEWAY_ADMIN_KEYS?: string;
  [name: string]: string | undefined;
}

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

/** How many hex digits of a key's SHA-256 name its tenant: 48 bits, no collision in practice. */
const TENANT_DIGITS = 12;

/**
 * The tenant of the calls made with `key`: `key-` and the first 12 hex digits of its SHA-256.
 * Derived from the key itself, never its place in a list: a key that replaces a revoked one
 * starts with nothing of its spend, limits or budget; and the key cannot be read back from it.
 * A configuration names a key's tenant policy by it (`tenants: { key-3f9a0c4b1d2e: ... }`;
 * `printf %s "$KEY" | sha256sum | cut -c1-12`).
 *
 * @example
 * ```ts
 * keyTenant('k1'); // 'key-' + the first 12 hex digits of sha256('k1')
 * ```
 */
export function keyTenant(key: string): string {
  return tenantOfDigest(digest(key));
}

const tenantOfDigest = (d: Buffer): string => `key-${d.toString('hex').slice(0, TENANT_DIGITS)}`;

/** The keys of a comma-separated list, trimmed, empty ones left out. */
const listed = (list: string | undefined): string[] =>
  (list ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');

/**
 * The keys the gateway accepts, held only as SHA-256 digests: nothing prints, logs or serialises
 * a key. A presented key is compared with every digest in constant time (equal-length digests
 * through `timingSafeEqual`, no early exit), so the time taken says nothing of how much of it was
 * right.
 *
 * @example
 * ```ts
 * const keys = GatewayKeys.fromEnv({ GATEWAY_API_KEYS: 'k1,k2' });
 * keys.match('k2'); // 1
 * keys.match('nope'); // undefined
 * ```
 */
export class GatewayKeys {
  private readonly digests: readonly Buffer[];
  private readonly tenants: readonly string[];
  /** How many of the digests, from the first, are admin keys'. */
  private readonly admins: number;

  constructor(keys: Iterable<string>, adminKeys: Iterable<string> = []) {
    const admin = [...new Set(adminKeys)];
    const others = [...new Set(keys)].filter((k) => !admin.includes(k));
    this.digests = [...admin, ...others].map(digest);
    this.tenants = this.digests.map(tenantOfDigest);
    this.admins = admin.length;
  }

  /**
   * Keys from `GATEWAY_API_KEYS` (comma-separated), the file `GATEWAY_API_KEYS_FILE` and
   * `GATEWAY_ADMIN_KEYS`.
   */
  static fromEnv(env: GuardEnv = process.env): GatewayKeys {
    const keys = listed(env.GATEWAY_API_KEYS);
    if (env.GATEWAY_API_KEYS_FILE) {
      const text = readKeysFile(env.GATEWAY_API_KEYS_FILE);
      keys.push(
        ...text
          .split(/\r?\n/)
          .filter((line) => !line.trimStart().startsWith('#'))
          .map((k) => k.trim())
          .filter((k) => k !== ''),
      );
    }
    return new GatewayKeys(keys, listed(env.GATEWAY_ADMIN_KEYS));
  }

  /** The tenant of the key at `index` (see {@link keyTenant}). */
  tenantOf(index: number): string {
    return this.tenants[index]!;
  }

  /** Whether the key at `index` is one of `GATEWAY_ADMIN_KEYS`. */
  isAdmin(index: number): boolean {
    return index < this.admins;
  }

  /** How many keys there are; 0: the gateway runs without keys (loopback only). */
  get size(): number {
    return this.digests.length;
  }

  /** The index of the key `presented` is, or undefined. */
  match(presented: string): number | undefined {
    const candidate = digest(presented);
    let found: number | undefined;
    this.digests.forEach((d, i) => {
      if (timingSafeEqual(d, candidate) && found === undefined) found = i;
    });
    return found;
  }

  /** Never the keys themselves. */
  toJSON(): { keys: number } {
    return { keys: this.size };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `GatewayKeys { ${this.size} keys }`;
  }
}

/**
 * The key a request carries: `Authorization: Bearer <key>` (the OpenAI clients), else
 * `x-api-key` (the Anthropic clients).
 *
 * @example
 * ```ts
 * presentedKey({ authorization: 'Bearer k1' }); // 'k1'
 * ```
 */
export function presentedKey(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const key = headers['x-api-key'];
  return typeof key === 'string' && key !== '' ? key : undefined;
}
