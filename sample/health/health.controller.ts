import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { SwitchboardHealthIndicator } from 'nestjs-switchboard';

/**
 * `GET /health`: 200 while every model has a healthy deployment, 503 with the details (which
 * models, which deployments are cooling and for how long) otherwise.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly switchboard: SwitchboardHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.switchboard.isHealthy('switchboard')]);
  }
}
