import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { GatewayKeys } from '../guard/gateway-keys';
import { readerTenant } from '../guard/reader-tenant';

/** Injection token of the gateway's `PrometheusExporter`. */
export const PROMETHEUS_EXPORTER = Symbol('PROMETHEUS_EXPORTER');

/**
 * `GET /metrics`: every OpenTelemetry metric in Prometheus text format: the switchboard's
 * (`switchboard_*` and the GenAI histograms `gen_ai_client_*`, scope `nestjs-switchboard`; see
 * `dashboards/switchboard.json`) and nestjs-otel's.
 */
@Controller('metrics')
export class MetricsController {
  constructor(
    @Inject(PROMETHEUS_EXPORTER) private readonly exporter: PrometheusExporter,
    @Inject(GatewayKeys) private readonly keys: GatewayKeys,
  ) {}

  /**
   * The metrics; for a key that is not an admin key (`GATEWAY_ADMIN_KEYS`), without the series
   * labelled by tenant (spend, queue): a key never reads another's.
   */
  @Get()
  scrape(@Req() req: IncomingMessage, @Res() res: ServerResponse): void {
    if (readerTenant(req, this.keys) === undefined) {
      this.exporter.getMetricsRequestHandler(req, res);
      return;
    }
    // The exporter writes its text with end(): taken there, and passed on without those series.
    const capture = {
      statusCode: 200,
      headers: {} as Record<string, string>,
      setHeader(name: string, value: string) {
        this.headers[name] = value;
      },
      end(text?: string) {
        const kept = (text ?? '')
          .split('\n')
          .filter((line) => line.startsWith('#') || !line.includes('tenant="'))
          .join('\n');
        res.writeHead(this.statusCode, this.headers);
        res.end(kept);
      },
    };
    this.exporter.getMetricsRequestHandler(req, capture as unknown as ServerResponse);
  }
}
