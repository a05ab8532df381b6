import type { IncomingMessage, ServerResponse } from 'node:http';
import { Catch, HttpException, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { sendJson } from './relay.service';
import { wireForPath } from './wire';

/**
 * Errors raised before a gateway route runs (a body that is not JSON, one that is too large, an
 * unknown path under `/v1`) answered in the API's own error shape, so that SDK clients read them;
 * everything else as Nest answers it.
 */
@Catch()
export class ProviderErrorFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<IncomingMessage & { originalUrl?: string }>();
    const path = req.originalUrl ?? req.url ?? '/';
    if (host.getType() !== 'http' || !path.startsWith('/v1/')) {
      return super.catch(exception, host);
    }
    const res = http.getResponse<ServerResponse>();
    const { status, message } = describe(exception);
    sendJson(res, status, wireForPath(path).errorBody({ status, message }));
  }
}

function describe(exception: unknown): { status: number; message: string } {
  if (exception instanceof HttpException) {
    const response = exception.getResponse();
    const message =
      typeof response === 'object' && response !== null && 'message' in response
        ? String((response as { message: unknown }).message)
        : exception.message;
    return { status: exception.getStatus(), message };
  }
  // body-parser's errors carry their status (400 for bad JSON, 413 for a body too large).
  const { status, message } = (exception ?? {}) as { status?: unknown; message?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 600) {
    return { status, message: typeof message === 'string' ? message : 'Bad request' };
  }
  return { status: 500, message: 'The gateway failed to handle the request.' };
}
