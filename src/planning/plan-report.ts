import type { Plan } from './plan';
import type { ReplayResult } from './replay';

const percent = (x: number) => `${(x * 100).toFixed(1)} %`;

/**
 * A plan as text for a terminal: one row per deployment and model, the callers' line, and the
 * suggestion when one was searched.
 *
 * @example
 * ```ts
 * console.log(formatPlan(await plan(trace, options, { findTpm: true })));
 * ```
 */
export function formatPlan(p: Plan, scale = 1): string {
  const { report } = p;
  const header = ['DEPLOYMENT', 'MODEL', 'SENT', 'UPSTREAM 429s', 'UTILIZATION'];
  const rows = report.deployments.map((d) => [
    d.deployment,
    d.model,
    String(d.sent),
    String(d.upstream429s),
    percent(d.utilization),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ');
  const { callers } = report;
  const out = [
    `${report.calls} calls${scale === 1 ? '' : ` at ${scale}x their recorded rate`} over ${minutes(p.result.spanMs)}`,
    '',
    line(header),
    ...rows.map(line),
    '',
    `callers: ${callers.failed} failed (${percent(callers.failed / Math.max(1, report.calls))}), ` +
      `wait p50 ${callers.waitP50Ms} ms, p95 ${callers.waitP95Ms} ms`,
  ];
  if (report.suggestion) {
    out.push(
      '',
      'smallest quota that serves this traffic (tokens per minute, across deployments):',
    );
    for (const [model, s] of Object.entries(report.suggestion)) {
      const f = p.factors?.get(model);
      out.push(
        s.tpm === null
          ? `  ${model}: none found up to 1024x the configured quota`
          : `  ${model}: ${s.tpm}${f === undefined || f === null ? '' : ` (${f.toFixed(2)}x configured)`}`,
      );
    }
  }
  return out.join('\n');
}

function minutes(ms: number): string {
  const m = ms / 60_000;
  return m >= 120 ? `${(m / 60).toFixed(1)} hours` : `${m.toFixed(1)} minutes`;
}

const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
];

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A plan as one self-contained HTML page (no script, no external URL): the table, the callers'
 * figures, the suggestion, and two inline SVG charts over time, one line per deployment and
 * model: utilization, and the mean wait of the calls first sent there.
 *
 * @example
 * ```ts
 * writeFileSync('report.html', planHtml(await plan(trace, options), 'traffic.jsonl'));
 * ```
 */
export function planHtml(p: Plan, source: string, scale = 1): string {
  const r = p.result;
  const names = r.deployments.map((d) => `${d.deployment} / ${d.model}`);
  const util = chart(
    r,
    'Utilization (tokens counted / tokens per minute allowed)',
    r.deployments.map((d) => d.series.utilization),
    names,
    (v) => percent(v),
  );
  const wait = chart(
    r,
    'Mean wait before sending (ms), by where the call went',
    r.deployments.map((d) => d.series.waitMs),
    names,
    (v) => `${Math.round(v)} ms`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Capacity plan: ${escape(source)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}
td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}td:first-child,td:nth-child(2),th{text-align:left}
svg{display:block;margin:1em 0}</style></head><body>
<h1>Capacity plan</h1>
<pre>${escape(formatPlan(p, scale))}</pre>
<table><tr><th>deployment</th><th>model</th><th>sent</th><th>upstream 429s</th><th>utilization</th></tr>
${p.report.deployments
  .map(
    (d) =>
      `<tr><td>${escape(d.deployment)}</td><td>${escape(d.model)}</td><td>${d.sent}</td><td>${d.upstream429s}</td><td>${percent(d.utilization)}</td></tr>`,
  )
  .join('\n')}
</table>
${util}
${wait}
</body></html>
`;
}

/** One line chart as inline SVG: a line per series, the time on the x axis, a legend of names. */
function chart(
  r: ReplayResult,
  title: string,
  series: number[][],
  names: string[],
  label: (v: number) => string,
): string {
  const W = 900;
  const H = 260;
  const left = 70;
  const top = 30;
  const plotW = W - left - 20;
  const plotH = H - top - 40;
  const max = Math.max(1e-9, ...series.flat());
  const slices = Math.max(1, ...series.map((s) => s.length));
  const x = (i: number) => left + (plotW * i) / Math.max(1, slices - 1);
  const y = (v: number) => top + plotH - (plotH * v) / max;
  const lines = series.map(
    (s, k) =>
      `<polyline fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="1.5" points="${s
        .map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`)
        .join(' ')}"><title>${escape(names[k]!)}</title></polyline>`,
  );
  const legend = names.map(
    (name, k) =>
      `<text x="${left + 10}" y="${top + 14 + 14 * k}" fill="${COLORS[k % COLORS.length]}">${escape(name)}</text>`,
  );
  const end = new Date(r.start + r.sliceMs * (slices - 1)).toISOString();
  return `<svg width="${W}" height="${H}" role="img" aria-label="${escape(title)}">
<text x="${left}" y="18" font-weight="bold">${escape(title)}</text>
<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="#999"/>
<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="#999"/>
<text x="${left - 6}" y="${top + 4}" text-anchor="end">${escape(label(max))}</text>
<text x="${left - 6}" y="${top + plotH}" text-anchor="end">0</text>
<text x="${left}" y="${H - 12}">${new Date(r.start).toISOString()}</text>
<text x="${left + plotW}" y="${H - 12}" text-anchor="end">${end}</text>
${lines.join('\n')}
${legend.join('\n')}
</svg>`;
}
