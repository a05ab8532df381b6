import OpenAI from 'openai';
import { isStaleSocket, retryStaleSocket } from '../../src/failover/stale-socket';

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

describe('retryStaleSocket', () => {
  const stale = () => fetchFailed(socketError(10));

  it('sends once more at once after a stale socket, and reports it', async () => {
    const results: Array<() => Promise<string>> = [
      () => Promise.reject(stale()),
      () => Promise.resolve('answer'),
    ];
    let sends = 0;
    const retried: unknown[] = [];
    const out = await retryStaleSocket(
      () => results[sends++]!(),
      () => true,
      (error) => retried.push(error),
    );
    expect(out).toBe('answer');
    expect(sends).toBe(2);
    expect(retried).toHaveLength(1);
  });

  it('sends only once more: a second stale socket is the caller’s to judge', async () => {
    let sends = 0;
    const second = stale();
    const call = retryStaleSocket(
      () => {
        sends++;
        return Promise.reject(sends === 1 ? stale() : second);
      },
      () => true,
      () => undefined,
    );
    await expect(call).rejects.toBe(second);
    expect(sends).toBe(2);
  });

  it('does not send again when the attempt may not (deadline passed, caller aborted)', async () => {
    let sends = 0;
    const first = stale();
    const call = retryStaleSocket(
      () => {
        sends++;
        return Promise.reject(first);
      },
      () => false,
      () => undefined,
    );
    await expect(call).rejects.toBe(first);
    expect(sends).toBe(1);
  });

  it('does not send again after any other error', async () => {
    let sends = 0;
    const refused = fetchFailed({ code: 'ECONNREFUSED' });
    const call = retryStaleSocket(
      () => {
        sends++;
        return Promise.reject(refused);
      },
      () => true,
      () => undefined,
    );
    await expect(call).rejects.toBe(refused);
    expect(sends).toBe(1);
  });
});
