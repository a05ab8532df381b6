import { Controller, Get, Req, Res } from '@nestjs/common';
import { RelayService, type GatewayRequest, type GatewayResponse } from './relay.service';

/**
 * `GET /v1/models`: the models the switchboard serves, in the OpenAI list shape (what
 * OpenAI-compatible tools query first), and `GET /v1/models/:id`.
 */
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly relay: RelayService) {}

  @Get()
  list(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }

  @Get(':id')
  retrieve(@Req() req: GatewayRequest, @Res() res: GatewayResponse): Promise<void> {
    return this.relay.relay(req, res);
  }
}
