// A Nest application as `nest new` writes one today, using the switchboard the documented way:
// forRootAsync over ConfigService (with the package's own switchboardConfig namespace), Terminus
// health, nestjs-otel. The same source is compiled as an ES module and as CommonJS.
import { Controller, Get, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import type { HealthCheckResult } from '@nestjs/terminus';
import { OpenTelemetryModule } from 'nestjs-otel';
import {
  SwitchboardHealthIndicator,
  SwitchboardModule,
  switchboardConfig,
  type SwitchboardOptions,
} from 'nestjs-switchboard';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly switchboard: SwitchboardHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([() => this.switchboard.isHealthy('llm')]);
  }
}

@Module({
  imports: [
    ConfigModule.forRoot({ ignoreEnvFile: true, load: [switchboardConfig] }),
    OpenTelemetryModule.forRoot({ metrics: { hostMetrics: false } }),
    SwitchboardModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        ...config.getOrThrow<SwitchboardOptions>('switchboard'),
        failover: { attempts: 1 },
      }),
      isGlobal: true,
    }),
    TerminusModule,
  ],
  controllers: [HealthController],
})
export class AppModule {}
