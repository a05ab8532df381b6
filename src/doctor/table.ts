import type { DoctorCheck, DoctorLimits } from './doctor-row';

const LIMITS = ['tpm', 'rpm', 'itpm', 'otpm'] as const;

/**
 * The checks as a table for a terminal: deployment, model (and its upstream name), the result in
 * plain words, latency, and each limit as the upstream reports it beside the configured one, a
 * `!` marking where they differ. A summary line follows.
 *
 * @example
 * ```ts
 * console.log(formatTable(await checkDeployments(options)));
 * ```
 */
export function formatTable(checks: readonly DoctorCheck[]): string {
  const header = [
    'DEPLOYMENT',
    'MODEL (UPSTREAM NAME)',
    'RESULT',
    'LATENCY',
    'LIMITS: UPSTREAM / CONFIG',
  ];
  let differs = false;
  const rows = checks.map(({ row, upstreamName, configured }) => {
    const limits = compareLimits(row.limits, configured);
    if (limits.differs) differs = true;
    return [
      row.deployment,
      upstreamName === row.model ? row.model : `${row.model} (${upstreamName})`,
      row.ok ? `answered (${row.status ?? 200})` : `FAILED: ${row.error ?? 'unknown error'}`,
      row.latencyMs === undefined ? '-' : `${row.latencyMs} ms`,
      limits.text,
    ];
  });
  // The result column can be long (an error message): it is not padded beyond a sensible width.
  const line = columns(header, rows, (i) => (i === 2 ? 60 : 40));
  const failed = checks.filter((c) => !c.row.ok).length;
  const summary = [
    `${checks.length - failed} of ${checks.length} answered${failed > 0 ? `, ${failed} failed` : ''}.`,
  ];
  if (differs) {
    summary.push(
      "! the upstream's limit differs from the configured one: the switchboard uses the upstream's; fix the configuration to match.",
    );
  }
  return [line(header), ...rows.map(line), '', ...summary].join('\n');
}

/**
 * A function that lays out one row of `rows` (or `header`) in columns: each padded to its widest
 * cell, at most `max(i)`, the last not padded.
 *
 * @example
 * ```ts
 * const line = columns(header, rows, () => 40);
 * [line(header), ...rows.map(line)].join('\n');
 * ```
 */
export function columns(
  header: readonly string[],
  rows: readonly string[][],
  max: (column: number) => number,
): (cells: string[]) => string {
  const widths = header.map((h, i) =>
    Math.min(max(i), Math.max(h.length, ...rows.map((r) => r[i]!.length))),
  );
  return (cells) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
}

/**
 * `tpm 30000 / 30000, rpm 300 / 600 !`; `?` where a side says nothing.
 *
 * @example
 * ```ts
 * compareLimits({ tpm: 30_000 }, { tpm: 60_000 }).text; // 'tpm 30000 / 60000 !'
 * ```
 */
export function compareLimits(
  reported: DoctorLimits | undefined,
  configured: DoctorLimits,
): { text: string; differs: boolean } {
  let differs = false;
  const parts: string[] = [];
  for (const name of LIMITS) {
    const up = reported?.[name];
    const conf = configured[name];
    if (up === undefined && conf === undefined) continue;
    const bad = up !== undefined && conf !== undefined && up !== conf;
    if (bad) differs = true;
    parts.push(`${name} ${up ?? '?'} / ${conf ?? '-'}${bad ? ' !' : ''}`);
  }
  return { text: parts.length > 0 ? parts.join(', ') : '-', differs };
}
