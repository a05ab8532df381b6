/** Per-minute limits, as a configuration or an upstream's headers give them. */
export interface DoctorLimits {
  tpm?: number;
  rpm?: number;
  itpm?: number;
  otpm?: number;
}

/**
 * One row of `nestjs-switchboard doctor --json`: one model on one deployment, and how its
 * smallest real request went.
 *
 * @example
 * ```ts
 * const row: DoctorRow = {
 *   deployment: 'east',
 *   model: 'gpt-4o',
 *   ok: true,
 *   status: 200,
 *   latencyMs: 412,
 *   limits: { tpm: 450_000, rpm: 2_700 },
 * };
 * ```
 */
export interface DoctorRow {
  /** The deployment's name in the configuration. */
  deployment: string;
  /** The model's name as callers pass it (not its upstream `deployment` name). */
  model: string;
  /** The upstream answered the request. */
  ok: boolean;
  /** The HTTP status of the answer, when one came. */
  status?: number;
  /** What went wrong, in plain words. */
  error?: string;
  /** ms from sending the request to its answer (or its failure). */
  latencyMs?: number;
  /** The limits the upstream's rate-limit headers report, when it sent any. */
  limits?: DoctorLimits;
}

/**
 * A {@link DoctorRow} with what the table shows beside it: the upstream's name for the model and
 * the configured limits.
 *
 * @example
 * ```ts
 * const check: DoctorCheck = { row, upstreamName: 'gpt4o-east', configured: { tpm: 450_000 } };
 * ```
 */
export interface DoctorCheck {
  row: DoctorRow;
  /** What the request sent as `model`: the model's `deployment`, else its name. */
  upstreamName: string;
  /** The limits the configuration sets (0 and absent: none). */
  configured: DoctorLimits;
}
