import type { IncomingMessage } from 'node:http';

/** How a route takes its body: the client's bytes (relayed upstream as they came) or JSON. */
export interface BodyRoute {
  readonly as: 'raw' | 'json';
  /** The largest body it takes, in bytes. */
  readonly limit: number;
}

/** LLM requests carry whole conversations (and images): more than the platforms' defaults. */
export const API_BODY_LIMIT = 20 * 1024 * 1024;

/** A mark-down names a model and a duration: a few hundred bytes. */
export const MARK_DOWN_BODY_LIMIT = 4 * 1024;

/** The API routes that take a body (every other `/v1` route is a GET). */
export const API_POSTS: ReadonlySet<string> = new Set([
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/messages/count_tokens',
]);

const API: BodyRoute = Object.freeze({ as: 'raw', limit: API_BODY_LIMIT });
const MARK_DOWN: BodyRoute = Object.freeze({ as: 'json', limit: MARK_DOWN_BODY_LIMIT });
const MARK_DOWN_PATH = /^\/switchboard\/deployments\/[^/]+\/mark-down$/;

/**
 * The body a request's route takes, or undefined when it takes none (every GET, any path that is
 * no route): such a body is never read. Paths match exactly, case included, as the routes do.
 *
 * @example
 * ```ts
 * bodyRouteOf('POST', '/v1/chat/completions'); // { as: 'raw', limit: 20971520 }
 * bodyRouteOf('POST', '/no-such-route'); // undefined
 * ```
 */
export function bodyRouteOf(method: string | undefined, path: string): BodyRoute | undefined {
  if (method !== 'POST') return undefined;
  if (API_POSTS.has(path)) return API;
  return MARK_DOWN_PATH.test(path) ? MARK_DOWN : undefined;
}

/**
 * The path of a request target, without its query.
 *
 * @example
 * ```ts
 * pathOf('/v1/models?x=1'); // '/v1/models'
 * ```
 */
export function pathOf(url: string | undefined): string {
  const target = url ?? '/';
  const query = target.indexOf('?');
  return query < 0 ? target : target.slice(0, query);
}

/**
 * Whether a request says it carries a body (a length above 0, or a transfer encoding).
 *
 * @example
 * ```ts
 * carriesBody(req); // true for `transfer-encoding: chunked`
 * ```
 */
export function carriesBody(req: Pick<IncomingMessage, 'headers'>): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The declared length of a request's body, or undefined when it declares none (chunked). */
export function declaredLength(req: Pick<IncomingMessage, 'headers'>): number | undefined {
  const declared = req.headers['content-length'];
  if (declared === undefined) return undefined;
  const length = Number(declared);
  return Number.isSafeInteger(length) && length >= 0 ? length : Infinity;
}

/**
 * Reads a body of at most `limit` bytes; beyond that it stops reading and rejects with a 413
 * (`statusCode`, as the platforms read it).
 *
 * @example
 * ```ts
 * const body = await readBody(req, 4096);
 * ```
 */
export function readBody(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stop();
        stream.pause();
        reject(
          Object.assign(new Error(`The request body is larger than ${limit} bytes.`), {
            statusCode: 413,
            status: 413,
          }),
        );
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}
