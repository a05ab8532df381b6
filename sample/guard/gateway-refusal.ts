import { HttpException } from '@nestjs/common';

/**
 * A request the gateway refuses before any route runs (no key, a wrong key, a foreign `Host`, a
 * key over its limits): the status, the message, OpenAI's `code`, and the headers to send with it.
 * The exception filter writes it in the API's own error shape.
 *
 * @example
 * ```ts
 * throw new GatewayRefusal(401, 'Invalid API key.', 'invalid_api_key', { 'www-authenticate': 'Bearer' });
 * ```
 */
export class GatewayRefusal extends HttpException {
  constructor(
    status: number,
    message: string,
    readonly code?: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super({ statusCode: status, message }, status);
  }
}
