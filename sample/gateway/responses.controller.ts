import type { ServerResponse } from 'node:http';
import { Body, Controller, Get, Headers, Param, Post, Res } from '@nestjs/common';
import { RelayService } from './relay.service';
import { responsesWire } from './wire';

/**
 * OpenAI-compatible Responses: `openai.responses.create()` (SSE with `stream: true`) and
 * `retrieve()` against `<gateway>/v1`. A call with `previous_response_id` goes to the deployment
 * that stored that response; `x-session-id` keeps a conversation on one deployment.
 */
@Controller('v1/responses')
export class ResponsesController {
  constructor(private readonly relay: RelayService) {}

  @Post()
  create(
    @Body() body: unknown,
    @Headers('x-session-id') sessionId: string | undefined,
    @Res() res: ServerResponse,
  ): Promise<void> {
    return this.relay.relay(responsesWire, body, sessionId, res);
  }

  @Get(':id')
  retrieve(@Param('id') id: string, @Res() res: ServerResponse): Promise<void> {
    return this.relay.retrieveResponse(id, res);
  }
}
