import type { ServerResponse } from 'node:http';
import { Controller, Get, Param, Res } from '@nestjs/common';
import { RelayService, type ModelObject } from './relay.service';

/**
 * `GET /v1/models`: the models the switchboard serves, in the OpenAI list shape (what
 * OpenAI-compatible tools query first), and `GET /v1/models/:id`.
 */
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly relay: RelayService) {}

  @Get()
  list(): { object: 'list'; data: ModelObject[] } {
    return this.relay.models();
  }

  @Get(':id')
  retrieve(@Param('id') id: string, @Res() res: ServerResponse): void {
    this.relay.model(id, res);
  }
}
