import { Controller, Post, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest, type GatewayResponse } from './relay.service';

/**
 * Anthropic-compatible Messages and token counting: point the `@anthropic-ai/sdk` client at
 * `<gateway>`. The `x-session-id` header keeps a conversation on one deployment.
 */
@Controller('v1')
export class MessagesController {
  constructor(private readonly relay: RelayService) {}

  @Post('messages')
  create(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }

  /** `anthropic.messages.countTokens()`: to a deployment serving the model, using no quota. */
  @Post('messages/count_tokens')
  countTokens(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
