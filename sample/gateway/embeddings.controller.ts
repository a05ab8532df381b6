import type { ServerResponse } from 'node:http';
import { Body, Controller, Headers, Post, Res } from '@nestjs/common';
import { RelayService } from './relay.service';
import { embeddingsWire } from './wire';

/** OpenAI-compatible Embeddings: `openai.embeddings.create()` against `<gateway>/v1`. */
@Controller('v1')
export class EmbeddingsController {
  constructor(private readonly relay: RelayService) {}

  @Post('embeddings')
  create(
    @Body() body: unknown,
    @Headers('x-session-id') sessionId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    return this.relay.relay(embeddingsWire, body, sessionId, res);
  }
}
