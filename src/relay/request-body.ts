import { bodyShapeMessage, bodyShapeProblem } from './body-checks';
import type { Problem } from './error-body';

const decoder = new TextDecoder();

/**
 * A request body read once: the client's bytes (sent upstream as they came) and the object parsed
 * from them, or why it cannot be read (`refused` says so for the log when no client should send
 * it). Whoever decides on a request (the gateway's ownership, `sb.fetch`) reads this one result,
 * never the bytes again: JSON may spell a field many ways (`"previous\u005fresponse_id"`), the
 * parse reads them all as the upstream does.
 *
 * @example
 * ```ts
 * const read = readRequestBody(Buffer.from('{"model":"gpt-4o-mini","input":"hi"}'));
 * if (read.params) read.params.model; // 'gpt-4o-mini'
 * ```
 */
export type RequestBody =
  | {
      readonly raw: string | Uint8Array;
      readonly params: Record<string, unknown>;
      readonly problem?: undefined;
      readonly refused?: undefined;
    }
  | { readonly problem: Problem; readonly refused?: string; readonly params?: undefined };

/**
 * Where a caller of `sb.fetch` that has read the body already ({@link readRequestBody}) hands it
 * over in the `init`, so that the relay does not parse it again: `init.body` is then not read.
 *
 * @example
 * ```ts
 * const read = readRequestBody(bytes);
 * await sb.fetch(url, { method: 'POST', headers, [REQUEST_BODY]: read } as RelayRequestInit);
 * ```
 */
export const REQUEST_BODY: unique symbol = Symbol('nestjs-switchboard.requestBody');

/**
 * `fetch`'s init with a body read already.
 *
 * @example
 * ```ts
 * const init: RelayRequestInit = { method: 'POST', [REQUEST_BODY]: readRequestBody(bytes) };
 * ```
 */
export type RelayRequestInit = RequestInit & { [REQUEST_BODY]?: RequestBody };

/**
 * Reads a request body once: within the bounds of {@link bodyShapeProblem} (checked before the
 * parse, whose cost grows with values and nesting, not only bytes), valid JSON, an object.
 *
 * @example
 * ```ts
 * readRequestBody('[]').problem?.message; // 'The request body must be a JSON object.'
 * ```
 */
export function readRequestBody(raw: string | Uint8Array | undefined, text?: string): RequestBody {
  if (raw === undefined) return notAnObject();
  const body = text ?? (typeof raw === 'string' ? raw : decoder.decode(raw));
  const shape = bodyShapeProblem(body);
  if (shape !== undefined) {
    const message = bodyShapeMessage(shape);
    return { problem: { status: 400, message }, refused: `refused a request body: ${message}` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (error) {
    return {
      problem: {
        status: 400,
        message: `The request body is not valid JSON: ${(error as Error).message}`,
      },
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return notAnObject();
  return { raw, params: parsed as Record<string, unknown> };
}

function notAnObject(): RequestBody {
  return { problem: { status: 400, message: 'The request body must be a JSON object.' } };
}
