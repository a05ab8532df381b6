/*
 * `${VAR}` references of a configuration file, read from the environment: what stands in for an
 * unset one, and which values are secrets that no message may show.
 */
// Fields whose value is a number: a whole `${VAR}` there is read as one.
const NUMERIC_KEYS = new Set([
  'tpm',
  'rpm',
  'itpm',
  'otpm',
  'outputReservation',
  'maxOutput',
  'outputWeight',
  'cooldown',
  'maxCooldown',
  'timeout',
  'attempts',
  'delay',
  'ratelimitWindow',
  'maxSessions',
  'maxWait',
  'maxQueued',
  'batchMaxWait',
  'batchHeadroom',
  'headroomHold',
  'defaultReservation',
  'priority',
  'weight',
  'maxInFlight',
  'maxResponses',
]);

// Keys that reach an object's prototype when copied: refused wherever they appear.
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const REFERENCE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$\{/g;
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
/** Variables whose name says they hold a credential. */
const SECRET_NAME = /key|secret|token|passw|pwd|credential/i;

/**
 * Secrets shorter than this are not taken out of messages: every `1` or `a` would go, and a
 * credential that short guards nothing.
 */
const MIN_HIDDEN_LENGTH = 4;

/** `line` with every value of `secrets` replaced by `***`, longest first. */
export function hideSecrets(line: string, secrets: ReadonlySet<string>): string {
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  return ordered.reduce((text, secret) => text.split(secret).join('***'), line);
}

/** What {@link interpolate} reads from and reports to. */
interface Interpolation {
  env: Readonly<Record<string, string | undefined>>;
  /** Receives the values of variables named as secrets. */
  secrets: Set<string>;
  /** The value an unset variable takes at `path`, when one stands in for it. */
  standIn: (path: readonly PropertyKey[]) => string | undefined;
  report: (path: PropertyKey[], message: string) => void;
}

// Where a simulation stands in for an unset variable: the fields it replaces anyway.
const SIMULATED_FIELDS: Readonly<Record<string, string>> = {
  baseURL: 'http://simulated.localhost',
  resource: 'simulated',
  apiKey: 'simulated',
};

export function simulationStandIn(path: readonly PropertyKey[]): string | undefined {
  return path[0] === 'deployments' && path.length === 3
    ? SIMULATED_FIELDS[String(path[2])]
    : undefined;
}

export function keyStandIn(path: readonly PropertyKey[]): string | undefined {
  return path[0] === 'deployments' && path.length === 3 && path[2] === 'apiKey'
    ? 'unused'
    : undefined;
}

export function startsWith(path: readonly PropertyKey[], prefix: readonly PropertyKey[]): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => path[i] === key);
}

/**
 * A copy of `value` with every string interpolated; problems go to `report`, and the values of
 * variables named as secrets to `secrets`.
 */
export function interpolate(value: unknown, path: PropertyKey[], context: Interpolation): unknown {
  const { env, secrets, report } = context;
  if (typeof value === 'string') {
    if (!value.includes('$')) return value;
    let failed = false;
    const out = value.replace(REFERENCE, (match, name: string | undefined, op, fallback) => {
      if (match === '$$') return '$';
      if (name === undefined) {
        failed = true;
        report(
          path,
          'has a malformed reference: write ${NAME}, ${NAME:-default} or $${ for a literal ${',
        );
        return match;
      }
      const set = env[name];
      if (op === ':-' && (set === undefined || set === '')) return fallback as string;
      if (op === '-' && set === undefined) return fallback as string;
      if (set === undefined) {
        const standIn = context.standIn(path);
        if (standIn !== undefined) return standIn;
        failed = true;
        report(
          path,
          `uses \${${name}}, but the environment variable ${name} is not set (set it, or write \${${name}:-default})`,
        );
        return match;
      }
      if (SECRET_NAME.test(name) && set.length >= MIN_HIDDEN_LENGTH) secrets.add(set);
      return set;
    });
    if (failed) return value;
    const key = path[path.length - 1];
    if (typeof key === 'string' && NUMERIC_KEYS.has(key) && NUMBER.test(out.trim())) {
      return Number(out.trim());
    }
    return out;
  }
  if (Array.isArray(value)) {
    return value.map((v, i) => interpolate(v, [...path, i], context));
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // `out.__proto__ = v` would set the prototype: fields no validation and no JSON.stringify sees.
      if (FORBIDDEN_KEYS.has(k)) {
        report([...path, k], 'is not a configuration field: remove it');
        continue;
      }
      out[k] = interpolate(v, [...path, k], context);
    }
    return out;
  }
  return value;
}
