import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';

/** Injection token of the gateway's `PrometheusExporter`. */
export const PROMETHEUS_EXPORTER = Symbol('PROMETHEUS_EXPORTER');

/**
 * `GET /metrics`: every OpenTelemetry metric in Prometheus text format: the switchboard's
 * (`switchboard_*` and the GenAI histograms `gen_ai_client_*`, scope `nestjs-switchboard`; see
 * `dashboards/switchboard.json`) and nestjs-otel's.
 */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(PROMETHEUS_EXPORTER) private readonly exporter: PrometheusExporter) {}

  @Get()
  scrape(@Req() req: IncomingMessage, @Res() res: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(req, res);
  }
}
