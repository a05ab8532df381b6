import { UNREACHABLE } from '../registry/unreachable';

/** Codes that only a connection that was never made reports, and what they mean in a few words. */
const NEVER_CONNECTED: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'DNS lookup failed',
  EAI_AGAIN: 'DNS lookup failed',
  EAI_FAIL: 'DNS lookup failed',
  EAI_NONAME: 'DNS lookup failed',
};

/**
 * Why a request never reached its deployment, as a cooldown's reason (`unreachable (connection
 * refused)`), or `undefined` when it may have: a refused connection, a host or network that cannot
 * be reached, a DNS lookup that failed, or a reset while the connection (or its TLS handshake) was
 * being made. A reset once connected is not one: the upstream received the request. Read from the
 * `cause` chain by shape (under Jest, errors from Node's own realm fail `instanceof`), where the
 * SDK's `APIConnectionError` holds fetch's `TypeError`, which holds the socket's error.
 *
 * @example
 * ```ts
 * unreachableWhy(error); // 'unreachable (connection refused)' for `connect ECONNREFUSED 127.0.0.1:9`
 * ```
 */
export function unreachableWhy(error: unknown): string | undefined {
  let e: unknown = error;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const { code, syscall, message } = e as {
      code?: unknown;
      syscall?: unknown;
      message?: unknown;
    };
    if (typeof code === 'string') {
      const why = NEVER_CONNECTED[code];
      if (why !== undefined) return `${UNREACHABLE} (${why})`;
      if (code === 'ECONNRESET' && connecting(syscall, message)) {
        return `${UNREACHABLE} (connection reset while connecting)`;
      }
    }
    if (syscall === 'getaddrinfo') return `${UNREACHABLE} (DNS lookup failed)`;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A reset of a socket that was still connecting, or still in its TLS handshake. */
function connecting(syscall: unknown, message: unknown): boolean {
  return (
    syscall === 'connect' ||
    (typeof message === 'string' && message.includes('before secure TLS connection'))
  );
}
