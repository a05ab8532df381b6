import { MetricReader } from '@opentelemetry/sdk-metrics';

/** A metric reader that collects on demand: no export interval, no timers. */
export class TestReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}
