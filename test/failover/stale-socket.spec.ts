import OpenAI from 'openai';
import { isStaleSocket } from '../../src/failover/stale-socket';

/** What the SDK throws when fetch rejects: APIConnectionError > TypeError('fetch failed') > cause. */
function fetchFailed(cause: object): Error {
  const failed = Object.assign(new TypeError('fetch failed'), { cause });
  return new OpenAI.APIConnectionError({ cause: failed });
}

const socketError = (bytesRead: number) => ({
  name: 'SocketError',
  message: 'other side closed',
  code: 'UND_ERR_SOCKET',
  socket: { bytesWritten: 100, bytesRead },
});

describe('isStaleSocket', () => {
  it.each([
    ['undici: other side closed on a socket that had read an answer', socketError(378)],
    ['ECONNRESET on read', { name: 'Error', message: 'read ECONNRESET', code: 'ECONNRESET' }],
    ['undici socket error without socket details', { code: 'UND_ERR_SOCKET', message: 'x' }],
  ])('matches %s', (_what, cause) => {
    expect(isStaleSocket(fetchFailed(cause))).toBe(true);
  });

  it.each([
    ['a fresh socket that read nothing', fetchFailed(socketError(0))],
    [
      'a refused connection',
      fetchFailed({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }),
    ],
    ['a DNS failure', fetchFailed({ code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND' })],
    [
      'a TLS failure',
      fetchFailed({ code: 'CERT_HAS_EXPIRED', message: 'certificate has expired' }),
    ],
    [
      'a body cut short after the answer began',
      Object.assign(new TypeError('terminated'), { cause: socketError(900) }),
    ],
    ['the SDK re-wrapping of a cut body', new Error('TypeError: terminated')],
    ['an HTTP answer', new OpenAI.APIError(502, undefined, 'bad gateway', new Headers())],
    ['a timeout', new OpenAI.APIConnectionTimeoutError()],
    ['a caller abort', new OpenAI.APIUserAbortError()],
    ['nothing at all', undefined],
  ])('does not match %s', (_what, error) => {
    expect(isStaleSocket(error)).toBe(false);
  });
});
