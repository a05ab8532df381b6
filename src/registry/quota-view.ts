import type { LimitName } from '../quota/quota-limit';
import type { ReportedRemaining } from '../quota/reading';

/**
 * One limit of a model on a deployment, as a reader sees it: the value in force and where it
 * came from. The counting behind it is internal.
 *
 * @example
 * ```ts
 * const tpm: LimitView = state.quotaView.limits.tpm;
 * console.log(tpm.value, tpm.learned ? '(from the upstream)' : '(configured)');
 * ```
 */
export interface LimitView {
  /** The limit in force (configured, or learned from the upstream's headers); 0 = unlimited. */
  readonly value: number;
  /** The value came from the upstream's headers, not from the configuration. */
  readonly learned: boolean;
}

/**
 * A model's quota on one deployment, read-only: what a status page or a selector reads. It is a
 * view of the switchboard's own counters, so it stays current and costs nothing to take; the
 * counters themselves are internal, so their shape may change without breaking readers.
 *
 * @example
 * ```ts
 * const quota = deployment.models.get('gpt-4o')!.quotaView;
 * const used = quota.anchoredUsage(); // { tpm, rpm, itpm, otpm } as the upstream counts them
 * console.log(`${used.tpm} of ${quota.limits.tpm.value} tokens this minute`);
 * ```
 */
export interface QuotaView {
  /** Each limit in force. */
  readonly limits: Readonly<Record<LimitName, LimitView>>;
  /** What the upstream's last answer said was left, per limit it reported. */
  readonly upstreamRemaining: Readonly<Partial<Record<LimitName, ReportedRemaining>>>;
  /** Usage per limit as the upstream counts it: ours, corrected by its last rate-limit headers. */
  anchoredUsage(): Record<LimitName, number>;
  /** The share of each limit in use (0 without a limit): what utilization is made of. */
  shares(): Record<LimitName, number>;
  /** Requests of the newest sixth of the window against `rpm / 6`, when requests are limited so. */
  recent(): { used: number; limit: number } | undefined;
  /** Input and output tokens counted this window (Claude's ITPM and OTPM). */
  ioUsage(): { input: number; output: number };
}
