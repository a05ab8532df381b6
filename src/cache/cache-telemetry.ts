import {
  ProxyTracerProvider,
  SpanKind,
  metrics,
  trace,
  type Attributes,
  type Counter,
  type MeterProvider,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { METER_NAME, SWITCHBOARD_METRICS as M } from '../telemetry/metric-names';
import { GEN_AI, GEN_AI_VALUES } from '../telemetry/gen-ai-conventions';
import type { Provider } from '../types';

/** What the API's global tracer provider delegates to while no SDK is registered. */
const NO_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/** What the cache did with a call. */
type CacheResult = 'hit' | 'miss' | 'bypass';

const RESULTS: readonly CacheResult[] = ['hit', 'miss', 'bypass'];

/**
 * A hit as its counter and span describe it: the model, the provider and the deployment that
 * made the answer, and whether it is an embedding. The same for every hit of one entry.
 *
 * @example
 * ```ts
 * const hit: CacheHit = { model: 'gpt-4o-mini', provider: 'openai', deployment: 'east', embeddings: false };
 * ```
 */
export interface CacheHit {
  readonly model: string;
  readonly provider: Provider;
  readonly deployment: string;
  readonly embeddings: boolean;
}

/**
 * The response cache's instruments: `switchboard.cache{model, result}`, the USD its hits saved
 * (`switchboard.cache.saved_usd{model}`), and per hit a GenAI CLIENT span
 * (`chat gpt-4o-mini`) with `switchboard.cache: "hit"` and the deployment that made the answer;
 * no deployment is called for it. Taken when the switchboard is built, as its other instruments.
 *
 * @example
 * ```ts
 * const telemetry = new CacheTelemetry(['gpt-4o-mini']);
 * telemetry.count('gpt-4o-mini', 'miss');
 * ```
 */
export class CacheTelemetry {
  private readonly calls: Counter;
  private readonly saved: Counter;
  private readonly tracer: Tracer;
  /** The global provider, which may get its delegate (an SDK) only after this was built. */
  private readonly proxy: ProxyTracerProvider | undefined;
  /** Per model a label may name, its attribute sets, made once: a hit allocates none. */
  private readonly labels = new Map<
    string,
    Record<CacheResult, Attributes> & { model: Attributes }
  >();

  constructor(
    models: Iterable<string>,
    providers: { meter?: MeterProvider; tracer?: TracerProvider } = {},
  ) {
    const meter = (providers.meter ?? metrics.getMeterProvider()).getMeter(METER_NAME);
    const tracerProvider = providers.tracer ?? trace.getTracerProvider();
    this.proxy = tracerProvider instanceof ProxyTracerProvider ? tracerProvider : undefined;
    this.tracer = tracerProvider.getTracer(METER_NAME);
    this.calls = meter.createCounter(M.CACHE, {
      description: 'Calls the response cache answered (hit), sent on (miss) or left alone (bypass)',
    });
    this.saved = meter.createCounter(M.CACHE_SAVED, {
      description: 'USD the answers served from the cache cost when they were made (with pricing)',
      unit: 'USD',
    });
    for (const model of models) {
      const labels = {
        hit: { model, result: 'hit' },
        miss: { model, result: 'miss' },
        bypass: { model, result: 'bypass' },
        model: { model },
      };
      this.labels.set(model, labels);
      for (const result of RESULTS) this.calls.add(0, labels[result]);
      this.saved.add(0, labels.model);
    }
  }

  count(model: string, result: CacheResult): void {
    const labels = this.labels.get(model);
    if (labels !== undefined) this.calls.add(1, labels[result]);
  }

  /** A hit: counted, its saving added, its span made and ended at once. */
  hit(hit: CacheHit, usd: number | undefined): void {
    const labels = this.labels.get(hit.model);
    if (labels === undefined) return;
    this.calls.add(1, labels.hit);
    if (usd !== undefined && usd > 0) this.saved.add(usd, labels.model);
    // Without a tracer SDK a span's attributes would cost the hit for no one.
    if (this.proxy?.getDelegate() === NO_TRACER_PROVIDER) return;
    const operation = hit.embeddings
      ? GEN_AI_VALUES.OPERATION_EMBEDDINGS
      : GEN_AI_VALUES.OPERATION_CHAT;
    this.tracer
      .startSpan(`${operation} ${hit.model}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI.OPERATION_NAME]: operation,
          [GEN_AI.REQUEST_MODEL]: hit.model,
          [GEN_AI.PROVIDER_NAME]:
            hit.provider === 'anthropic'
              ? GEN_AI_VALUES.PROVIDER_ANTHROPIC
              : GEN_AI_VALUES.PROVIDER_OPENAI,
          'switchboard.cache': 'hit',
          'switchboard.cache.deployment': hit.deployment,
        },
      })
      .end();
  }
}
