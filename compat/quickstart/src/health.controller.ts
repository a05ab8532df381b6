// Readiness as docs/operations.md writes it, over the README's switchboard.
import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { SwitchboardHealthIndicator } from 'nestjs-switchboard';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly switchboard: SwitchboardHealthIndicator,
  ) {}

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([() => this.switchboard.isHealthy('switchboard')]);
  }
}
