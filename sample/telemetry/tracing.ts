import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

/** The tracer provider of the gateway, when traces are exported. */
export interface Tracing {
  provider: TracerProvider;
  /** Flushes the spans still buffered and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * Exports the switchboard's GenAI spans over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; the exporter reads those variables (and
 * `OTEL_EXPORTER_OTLP_HEADERS`) itself. Call it before the application is built: the switchboard
 * takes its tracer when it is created. Without either variable, nothing is registered.
 *
 * @example
 * ```ts
 * const tracing = startTracing(); // OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318
 * // ... build and run the app ...
 * await tracing?.shutdown();
 * ```
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || endpoint.trim() === '') return undefined;
  const provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    provider,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
    },
  };
}
