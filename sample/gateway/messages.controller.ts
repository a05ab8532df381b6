import type { ServerResponse } from 'node:http';
import { Body, Controller, Headers, Post, Res } from '@nestjs/common';
import { RelayService } from './relay.service';
import { anthropicWire, countTokensWire } from './wire';

/**
 * Anthropic-compatible Messages and token counting: point the `@anthropic-ai/sdk` client at
 * `<gateway>`. The `x-session-id` header keeps a conversation on one deployment.
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

  /** `anthropic.messages.countTokens()`: to a deployment serving the model, using no quota. */
  @Post('messages/count_tokens')
  countTokens(
    @Body() body: unknown,
    @Headers('x-session-id') sessionId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    return this.relay.relay(countTokensWire, body, sessionId, res);
  }
}
