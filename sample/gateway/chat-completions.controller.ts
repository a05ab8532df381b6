import type { ServerResponse } from 'node:http';
import { Body, Controller, Headers, Post, Res } from '@nestjs/common';
import { RelayService } from './relay.service';
import { openaiWire } from './wire';

/**
 * OpenAI-compatible Chat Completions: point the `openai` client at `<gateway>/v1`. The
 * `x-session-id` header keeps a conversation on one deployment.
 */
@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(private readonly relay: RelayService) {}

  @Post('completions')
  create(
    @Body() body: unknown,
    @Headers('x-session-id') sessionId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    return this.relay.relay(openaiWire, body, sessionId, res);
  }
}
