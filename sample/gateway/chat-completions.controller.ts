import { Controller, Post, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest, type GatewayResponse } from './relay.service';

/**
 * OpenAI-compatible Chat Completions: point the `openai` client at `<gateway>/v1`. The
 * `x-session-id` header keeps a conversation on one deployment.
 */
@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(private readonly relay: RelayService) {}

  @Post('completions')
  create(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
