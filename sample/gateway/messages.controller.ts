import type { ServerResponse } from 'node:http';
import { Body, Controller, Headers, Post, Res } from '@nestjs/common';
import { RelayService } from './relay.service';
import { anthropicWire } from './wire';

/**
 * Anthropic-compatible Messages: point the `@anthropic-ai/sdk` client at `<gateway>`. The
 * `x-session-id` header keeps a conversation on one deployment.
 */
@Controller('v1')
export class MessagesController {
  constructor(private readonly relay: RelayService) {}

  @Post('messages')
  create(
    @Body() body: unknown,
    @Headers('x-session-id') sessionId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    return this.relay.relay(anthropicWire, body, sessionId, res);
  }
}
