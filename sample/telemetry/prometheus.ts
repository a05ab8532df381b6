import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/** A global OpenTelemetry meter provider whose metrics `GET /metrics` serves in Prometheus text. */
export interface PrometheusMetrics {
  exporter: PrometheusExporter;
  provider: MeterProvider;
  /** Unregisters the global provider, so that another application can register its own. */
  shutdown(): Promise<void>;
}

/**
 * Registers a global meter provider with a Prometheus reader (no server of its own: the gateway
 * serves `/metrics`). Call it before the application is built: the switchboard and nestjs-otel
 * take their meters from the global provider when their providers are created.
 */
export function startPrometheus(): PrometheusMetrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  metrics.disable(); // a previous application's provider, in tests
  metrics.setGlobalMeterProvider(provider);
  return {
    exporter,
    provider,
    shutdown: async () => {
      metrics.disable();
      await provider.shutdown();
    },
  };
}
