import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { redisState, SwitchboardModule, type SwitchboardOptions } from 'nestjs-switchboard';
import { OpenTelemetryModule } from 'nestjs-otel';
import { ChatCompletionsController } from './gateway/chat-completions.controller';
import { EmbeddingsController } from './gateway/embeddings.controller';
import { MessagesController } from './gateway/messages.controller';
import { ModelsController } from './gateway/models.controller';
import { ProviderErrorFilter } from './gateway/provider-error.filter';
import { RelayService } from './gateway/relay.service';
import { ResponsesController } from './gateway/responses.controller';
import { gatewayConfig, type GatewayConfig } from './gateway.config';
import { GatewayKeys } from './guard/gateway-keys';
import { GuardModule } from './guard/guard.module';
import { withKeyTenants } from './guard/key-tenants';
import { HealthController } from './health/health.controller';
import { Simulation, type SimulationOptions } from './simulation/simulation';
import { SimulationModule } from './simulation/simulation.module';
import { StatusController } from './status/status.controller';
import { StatusService } from './status/status.service';
import { TrafficService } from './status/traffic.service';
import { MetricsController, PROMETHEUS_EXPORTER } from './telemetry/metrics.controller';

/** How the gateway is built; `main.ts` passes what it read from the environment. */
export interface AppOptions {
  /** The exporter `GET /metrics` reads (see `startPrometheus()`). */
  exporter: PrometheusExporter;
  /**
   * Route to the simulated deployments with these settings, whatever the environment says
   * (tests). Without it the simulated deployments start only when nothing is configured.
   */
  simulation?: SimulationOptions;
}

/**
 * The gateway: OpenAI- and Anthropic-compatible endpoints over one switchboard, with health,
 * metrics and a live status page.
 */
@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    const simulation = SimulationModule.register(options.simulation);
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({ isGlobal: true, load: [gatewayConfig] }),
        SwitchboardModule.forRootAsync({
          imports: [simulation, GuardModule],
          inject: [gatewayConfig.KEY, Simulation, GatewayKeys],
          useFactory: async (
            config: GatewayConfig,
            simulated: Simulation,
            keys: GatewayKeys,
          ): Promise<SwitchboardOptions> => {
            const configured = options.simulation ? undefined : config.switchboard;
            // Three simulated Azure OpenAI deployments: a call may try each of them.
            const switchboard = configured ?? {
              ...(await simulated.start()),
              failover: { attempts: 3 },
            };
            const state =
              config.redisUrl === undefined ? {} : { state: redisState({ url: config.redisUrl }) };
            return withKeyTenants({ ...switchboard, ...state }, config.keyPolicy, keys.size > 0);
          },
        }),
        simulation,
        GuardModule,
        TerminusModule.forRoot({ errorLogStyle: 'pretty', logger: false }),
        OpenTelemetryModule.forRoot({ metrics: { hostMetrics: false } }),
      ],
      controllers: [
        ChatCompletionsController,
        ResponsesController,
        EmbeddingsController,
        ModelsController,
        MessagesController,
        HealthController,
        MetricsController,
        StatusController,
      ],
      providers: [
        RelayService,
        StatusService,
        TrafficService,
        { provide: PROMETHEUS_EXPORTER, useValue: options.exporter },
        { provide: APP_FILTER, useClass: ProviderErrorFilter },
      ],
    };
  }
}
