import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Inject,
  Post,
  Req,
  Res,
} from '@nestjs/common';
import { Switchboard } from 'nestjs-switchboard';
import { GatewayKeys } from '../guard/gateway-keys';
import { mayRead, readerTenant } from '../guard/reader-tenant';
import { Simulation } from '../simulation/simulation';
import { StatusService, type DeploymentStatus, type SwitchboardStatus } from './status.service';

/** The page, its stylesheet and its scripts, served by the gateway itself. */
const ASSETS: Record<string, { file: string; type: string }> = {
  '': { file: 'index.html', type: 'text/html; charset=utf-8' },
  'status.css': { file: 'status.css', type: 'text/css; charset=utf-8' },
  'status.js': { file: 'status.js', type: 'text/javascript; charset=utf-8' },
  'chart.js': { file: 'chart.js', type: 'text/javascript; charset=utf-8' },
};

/**
 * The paths of the page and its files: they hold no data (the page fetches `/switchboard`, with
 * the key), so they answer without a key; a `<script src>` could not send one.
 */
export const PAGE_PATHS: readonly string[] = Object.keys(ASSETS).map((path) => `/${path}`);

// Everything the page loads comes from the gateway: nothing from a CDN or elsewhere.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The live status page (`GET /`), the state it shows (`GET /switchboard`), and, on simulated
 * deployments only, a way to mark a deployment down from the page.
 */
@Controller()
export class StatusController {
  private readonly assets = new Map<string, { body: Buffer; type: string }>();

  constructor(
    private readonly status: StatusService,
    private readonly sb: Switchboard,
    private readonly simulation: Simulation,
    @Inject(GatewayKeys) private readonly keys: GatewayKeys,
  ) {
    for (const [path, { file, type }] of Object.entries(ASSETS)) {
      this.assets.set(path, { body: readFileSync(join(__dirname, 'page', file)), type });
    }
  }

  @Get()
  page(@Res() res: ServerResponse): void {
    this.send(res, '');
  }

  @Get('status.css')
  stylesheet(@Res() res: ServerResponse): void {
    this.send(res, 'status.css');
  }

  @Get('status.js')
  script(@Res() res: ServerResponse): void {
    this.send(res, 'status.js');
  }

  @Get('chart.js')
  chart(@Res() res: ServerResponse): void {
    this.send(res, 'chart.js');
  }

  /**
   * Deployments, models, utilization, cooldowns, sessions and request counts, as JSON. The
   * queue's tenants and the costs are the reader's own (its key's tenant) unless it is an admin
   * key: a key never reads another's spend.
   */
  @Get('switchboard')
  snapshot(@Req() req: IncomingMessage): SwitchboardStatus {
    const snapshot = this.status.snapshot();
    const reader = readerTenant(req, this.keys);
    if (reader === undefined) return snapshot;
    return {
      ...snapshot,
      queue: snapshot.queue.filter((line) => mayRead(reader, line.tenant)),
      costs: snapshot.costs.filter((cost) => mayRead(reader, cost.tenant)),
    };
  }

  /**
   * Marks every model of a deployment (or only `model`) down for its cooldown, or for `ms`.
   * Only on the simulated deployments: on real ones a page must not take capacity away.
   */
  @Post('switchboard/deployments/:name/mark-down')
  @HttpCode(200)
  markDown(
    @Param('name') name: string,
    @Body() body: { model?: unknown; ms?: unknown } | undefined,
  ): DeploymentStatus {
    if (!this.simulation.enabled) {
      throw new ForbiddenException(
        'Marking deployments down is only enabled when the gateway runs on its simulated deployments',
      );
    }
    const deployment = this.sb.deployments.get(name);
    if (!deployment) throw new NotFoundException(`No deployment named '${name}'`);
    const { model, ms } = body ?? {};
    if (model !== undefined && (typeof model !== 'string' || !deployment.models.has(model))) {
      throw new BadRequestException(`Deployment '${name}' does not serve model ${String(model)}`);
    }
    if (ms !== undefined && !(typeof ms === 'number' && Number.isFinite(ms) && ms >= 0)) {
      throw new BadRequestException('ms must be a number of milliseconds >= 0');
    }
    for (const state of deployment.models.values()) {
      if (model === undefined || state.name === model) {
        state.markDown(ms as number | undefined, 'marked down from the status page');
      }
    }
    return this.status.snapshot().deployments.find((d) => d.name === name)!;
  }

  private send(res: ServerResponse, path: string): void {
    const asset = this.assets.get(path)!;
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': asset.body.length,
      'cache-control': 'no-cache',
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
    });
    res.end(asset.body);
  }
}
