import { Controller, Get, Module, Req, Res, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { OpenTelemetryModule } from 'nestjs-otel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import request from 'supertest';
import { Switchboard, SwitchboardModule } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import '../support/quiet-logs';

// ---- README: metrics.ts, imported first thing in main.ts ----------------------------------
// The metrics are served by the application itself (see MetricsController) rather than by the
// exporter's own server on port 9464: one port, behind the app's own middleware.
const prometheus = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [prometheus] });
metrics.setGlobalMeterProvider(meterProvider);

// ---- README: metrics.controller.ts --------------------------------------------------------
@Controller('metrics')
class MetricsController {
  @Get()
  scrape(@Req() req: IncomingMessage, @Res() res: ServerResponse): void {
    prometheus.getMetricsRequestHandler(req, res);
  }
}
// ---- end of README code -------------------------------------------------------------------

describe('switchboard metrics at /metrics (nestjs-otel + Prometheus exporter)', () => {
  let upstream: SimulatedUpstream;
  let app: INestApplication;

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({ deployments: [{ name: 'east' }, { name: 'west' }] });

    @Module({
      imports: [
        OpenTelemetryModule.forRoot({ metrics: { hostMetrics: false } }),
        SwitchboardModule.forRoot({
          deployments: ['east', 'west'].map((name) => ({
            provider: 'openai' as const,
            name,
            baseURL: upstream.deployment(name).openaiBaseURL,
            apiKey: 'k',
            models: [{ name: 'gpt-4o-mini', tpm: 100_000, rpm: 100 }],
          })),
          failover: { attempts: 1 },
        }),
      ],
      controllers: [MetricsController],
    })
    class AppModule {}

    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app.close();
    await meterProvider.shutdown();
    metrics.disable();
    await upstream.close();
  });

  it('serves the counters and gauges in the Prometheus text format', async () => {
    const sb = app.get(Switchboard);
    sb.deployments.get('west')!.models.get('gpt-4o-mini')!.markDown(60_000);
    const ask = () =>
      sb.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Hi' }],
      });
    await ask();
    await ask();
    upstream.deployment('east').fail({ kind: 'status', status: 503 });
    await expect(ask()).rejects.toThrow('503');

    const res = await request(app.getHttpServer()).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const samples = parse(res.text);
    expect(samples).toEqual(
      expect.objectContaining({
        'switchboard_requests_total{deployment="east",model="gpt-4o-mini"}': 3,
        'switchboard_failures_total{deployment="east",model="gpt-4o-mini",reason="server_error"}': 1,
        'switchboard_healthy_deployments{model="gpt-4o-mini"}': 1,
        'switchboard_utilization{deployment="west",model="gpt-4o-mini"}': 1,
      }),
    );
    const east = sb.deployments.get('east')!.models.get('gpt-4o-mini')!;
    expect(east.util).toBeGreaterThan(0);
    expect(samples['switchboard_utilization{deployment="east",model="gpt-4o-mini"}']).toBeCloseTo(
      east.util,
      5,
    );
    expect(res.text).toMatch(/^# TYPE switchboard_requests_total counter$/m);
    expect(res.text).toMatch(/^# TYPE switchboard_healthy_deployments gauge$/m);
  });
});

/** `{ 'name{a="1",b="2"}': value }` with the scope labels left out and the others sorted. */
function parse(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = (m[2] ?? '')
      .split(/,(?=\w+=")/)
      .filter((l) => l !== '' && !l.startsWith('otel_scope_'))
      .sort();
    out[`${m[1]}${labels.length > 0 ? `{${labels.join(',')}}` : ''}`] = Number(m[3]);
  }
  return out;
}
