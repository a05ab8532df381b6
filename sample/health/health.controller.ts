import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { SwitchboardHealthIndicator } from 'nestjs-switchboard';

/**
 * The two Kubernetes probes:
 *
 * - `GET /health` (also `/health/ready`), readiness: 200 while every model can take calls (its
 *   deployments at quota count: room comes back by itself), 503 with the details when every
 *   deployment of a model is out for a fault.
 * - `GET /health/live`, liveness: 200 while the process answers; never depends on an upstream.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly switchboard: SwitchboardHealthIndicator,
  ) {}

  @Get(['', 'ready'])
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.switchboard.isHealthy('switchboard')]);
  }

  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([() => this.switchboard.isLive('switchboard')]);
  }
}
