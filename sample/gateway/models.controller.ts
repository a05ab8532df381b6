import type { ServerResponse } from 'node:http';
import { Controller, Get, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest } from './relay.service';

/**
 * `GET /v1/models`: the models the switchboard serves, in the OpenAI list shape (what
 * OpenAI-compatible tools query first), and `GET /v1/models/:id`.
 */
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly relay: RelayService) {}

  @Get()
  list(@Req() req: GatewayRequest, @Res() res: ServerResponse): Promise<void> {
    return this.relay.relay(req, res);
  }

  @Get(':id')
  retrieve(@Req() req: GatewayRequest, @Res() res: ServerResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
