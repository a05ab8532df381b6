import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest, type GatewayResponse } from './relay.service';

/**
 * OpenAI-compatible Responses: `openai.responses.create()` (SSE with `stream: true`) and
 * `retrieve()` against `<gateway>/v1`. A call with `previous_response_id` goes to the deployment
 * that stored that response; `x-session-id` keeps a conversation on one deployment.
 */
@Controller('v1/responses')
export class ResponsesController {
  constructor(private readonly relay: RelayService) {}

  @Post()
  create(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }

  @Get(':id')
  retrieve(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
