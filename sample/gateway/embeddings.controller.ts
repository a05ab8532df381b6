import { Controller, Post, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest, type GatewayResponse } from './relay.service';

/** OpenAI-compatible Embeddings: `openai.embeddings.create()` against `<gateway>/v1`. */
@Controller('v1')
export class EmbeddingsController {
  constructor(private readonly relay: RelayService) {}

  @Post('embeddings')
  create(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
