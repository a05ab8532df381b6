import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { DeploymentRegistry } from 'nestjs-switchboard/extend';

/** Seconds the request rate is averaged over. */
export const RATE_WINDOW_SECONDS = 5;

/**
 * Counts the requests the switchboard sends to each deployment (every attempt, failovers
 * included), from the registry's `spend` events, and the recent rate.
 */
@Injectable()
export class TrafficService implements OnModuleDestroy {
  private readonly counts = new Map<string, number>();
  // One slot per second of the last RATE_WINDOW_SECONDS seconds, this one included: [second, count].
  private readonly slots: Array<[number, number]> = Array.from(
    { length: RATE_WINDOW_SECONDS },
    () => [-1, 0],
  );
  private readonly stop: () => void;
  /** Requests sent since the gateway started. */
  total = 0;

  constructor(registry: DeploymentRegistry) {
    this.stop = registry.onModelEvent((state, event) => {
      if (event.type !== 'spend' || event.requests <= 0) return;
      const key = keyOf(state.deployment, state.name);
      this.counts.set(key, (this.counts.get(key) ?? 0) + event.requests);
      this.total += event.requests;
      const second = Math.floor(Date.now() / 1000);
      const slot = this.slots[second % this.slots.length]!;
      if (slot[0] !== second) {
        slot[0] = second;
        slot[1] = 0;
      }
      slot[1] += event.requests;
    });
  }

  /** Requests sent to `deployment` for `model` since the gateway started. */
  requests(deployment: string, model: string): number {
    return this.counts.get(keyOf(deployment, model)) ?? 0;
  }

  /** Requests per second over the last {@link RATE_WINDOW_SECONDS} seconds, this one included. */
  perSecond(): number {
    const now = Math.floor(Date.now() / 1000);
    let sum = 0;
    for (const [second, count] of this.slots) {
      if (second > now - this.slots.length && second <= now) sum += count;
    }
    return Math.round((sum / RATE_WINDOW_SECONDS) * 10) / 10;
  }

  onModuleDestroy(): void {
    this.stop();
  }
}

function keyOf(deployment: string, model: string): string {
  return `${deployment}\u0000${model}`;
}
