import { Catch, HttpException, Logger, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { clip, httpErrorFor, scrub, STACK_LIMIT } from 'nestjs-switchboard/extend';
import { GatewayRefusal } from '../guard/gateway-refusal';
import { wireForPath, type Problem, type Wire } from './wire';

/** An error answer: status, headers and the provider-shaped body. */
export interface Failure {
  problem: Problem;
  body: object;
  headers: Record<string, string>;
}

const logger = new Logger('Gateway');

/**
 * The gateway's answer for a failed switchboard call, in `wire`'s shape: status and `retry-after`
 * as {@link httpErrorFor} maps them (the library's one mapping), the upstream's own error body
 * where it sent one in the provider's shape (never for a 429: the gateway says when to retry).
 *
 * @example
 * ```ts
 * const { problem, body, headers } = gatewayFailure(openaiWire, error);
 * sendJson(res, problem.status, body, headers);
 * ```
 */
export function gatewayFailure(wire: Wire, error: unknown): Failure {
  const answer = httpErrorFor(error);
  if (answer.unexpected) {
    logger.error(
      scrub(error instanceof Error ? (error.stack ?? error.message) : error, STACK_LIMIT),
    );
  }
  const problem: Problem = { status: answer.status, message: answer.message };
  const upstream = answer.fromUpstream
    ? wire.upstreamErrorBody(error as { error?: unknown })
    : undefined;
  return { problem, body: upstream ?? wire.errorBody(problem), headers: answer.headers };
}

/**
 * Errors raised before a gateway route runs (a key that is missing or wrong, a per-key limit, a
 * body that is not JSON or is too large, an unknown path under `/v1`) answered in the API's own
 * error shape, so that SDK clients read them, with the headers the refusal carries
 * (`retry-after`, `www-authenticate`); everything else as Nest answers it.
 */
@Catch()
export class ProviderErrorFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return super.catch(exception, host);
    const http = host.switchToHttp();
    const req = http.getRequest<{ originalUrl?: string; url?: string }>();
    const res = http.getResponse<unknown>();
    const adapter = this.httpAdapterHost?.httpAdapter ?? this.applicationRef;
    if (exception instanceof GatewayRefusal && adapter) {
      for (const [name, value] of Object.entries(exception.headers)) {
        adapter.setHeader(res, name, value);
      }
    }
    const path = req.originalUrl ?? req.url ?? '/';
    if (!path.startsWith('/v1/') || !adapter) return super.catch(exception, host);
    const problem = problemOf(exception);
    adapter.reply(res, wireForPath(path).errorBody(problem), problem.status);
  }
}

/**
 * The status, message and code the gateway answers for an error raised before a route ran.
 *
 * @example
 * ```ts
 * problemOf(new GatewayRefusal(401, 'Invalid API key.', 'invalid_api_key')); // { status: 401, ... }
 * ```
 */
export function problemOf(exception: unknown): Problem {
  if (exception instanceof HttpException) {
    const response = exception.getResponse();
    const message =
      typeof response === 'object' && response !== null && 'message' in response
        ? String((response as { message: unknown }).message)
        : exception.message;
    const code = exception instanceof GatewayRefusal ? exception.code : undefined;
    return { status: exception.getStatus(), message, code };
  }
  // body-parser's errors carry their status (400 for bad JSON, 413 for a body too large).
  const { status, message } = (exception ?? {}) as { status?: unknown; message?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 600) {
    return { status, message: typeof message === 'string' ? clip(message, 200) : 'Bad request' };
  }
  return { status: 500, message: 'The gateway failed to handle the request.' };
}
