/** Codes of a pooled socket that the server closed while our request was being written. */
const STALE_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET']);

/**
 * A request lost to a stale pooled socket: Node's fetch (undici) reused a keep-alive socket that
 * the server had just closed, so the request died before any byte of an answer came back
 * (`other side closed`, `ECONNRESET`, `UND_ERR_SOCKET`). The deployment did nothing wrong: a
 * server that closes idle sockets without a `Keep-Alive` hint races the next request on them.
 *
 * Recognised by shape, not `instanceof` (under Jest, errors from Node's own realm fail it):
 * - somewhere in the `cause` chain, a socket error with one of the codes above (or undici's
 *   `other side closed` message);
 * - no `terminated` in the chain: that is a body cut short after the answer began;
 * - no HTTP status: the upstream never answered;
 * - when undici tells how many bytes the socket had read (`socket.bytesRead`), more than zero:
 *   the socket carried an earlier answer, so it was a reused one. A fresh connection that breaks
 *   before its first byte keeps the usual rules.
 *
 * Refused connections (`ECONNREFUSED`), DNS (`ENOTFOUND`, `EAI_AGAIN`) and TLS errors never match.
 *
 * @example
 * ```ts
 * try {
 *   await client.chat.completions.create(body);
 * } catch (error) {
 *   if (isStaleSocket(error)) {
 *     // safe to send again at once, on the same deployment
 *   }
 * }
 * ```
 */
export function isStaleSocket(error: unknown): boolean {
  let stale = false;
  let e: unknown = error;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const link = e as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      status?: unknown;
      socket?: { bytesRead?: unknown };
    };
    if (typeof link.status === 'number') return false;
    if (link.message === 'terminated' || link.message === 'TypeError: terminated') return false;
    if (
      (typeof link.code === 'string' && STALE_CODES.has(link.code)) ||
      link.message === 'other side closed'
    ) {
      const bytesRead = link.socket?.bytesRead;
      if (typeof bytesRead === 'number' && bytesRead === 0) return false;
      stale = true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return stale;
}
