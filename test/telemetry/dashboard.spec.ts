import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../sample/main';
import type { SimulatedDeploymentSpec } from '../../sample/simulation/simulation';
import '../support/quiet-logs';

const DASHBOARD = join(__dirname, '../../dashboards/switchboard.json');

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const KEYWORDS = new Set([
  'sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile',
  'count_values', 'group', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right',
  'bool', 'and', 'or', 'unless', 'offset', 'rate', 'irate', 'increase', 'delta', 'idelta',
  'histogram_quantile', 'clamp_min', 'clamp_max', 'abs', 'ceil', 'floor', 'round', 'vector',
  'scalar', 'time', 'label_replace', 'label_join', 'absent', 'max_over_time', 'min_over_time',
  'avg_over_time', 'sum_over_time', 'last_over_time', 'sort', 'sort_desc', 'inf', 'nan',
]); // prettier-ignore

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers,
 * ranges, grouping clauses, Grafana variables and numbers are taken out, and words that are
 * functions, aggregations or keywords are dropped.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const next = stripped.slice(match.index + word.length).trimStart();
    if (KEYWORDS.has(word.toLowerCase()) || next.startsWith('(')) continue;
    names.add(word);
  }
  return [...names];
}

/** Every `expr` in a Grafana dashboard, panels in rows included. */
function expressions(dashboard: { panels: unknown[] }): string[] {
  const out: string[] = [];
  const visit = (panel: { targets?: Array<{ expr?: string }>; panels?: unknown[] }) => {
    for (const t of panel.targets ?? []) if (typeof t.expr === 'string') out.push(t.expr);
    for (const p of panel.panels ?? []) visit(p as typeof panel);
  };
  for (const p of dashboard.panels) visit(p as Parameters<typeof visit>[0]);
  return out;
}

/** Each panel's title and its first expression, panels in rows included. */
function panels(dashboard: { panels: unknown[] }): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (p: { title?: string; targets?: Array<{ expr?: string }>; panels?: unknown[] }) => {
    const expr = p.targets?.[0]?.expr;
    if (p.title !== undefined && expr !== undefined) out.set(p.title, expr);
    for (const inner of p.panels ?? []) visit(inner as typeof p);
  };
  for (const p of dashboard.panels) visit(p as Parameters<typeof visit>[0]);
  return out;
}

/** The metric names of a Prometheus text exposition (histograms: their `_bucket` etc. lines). */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{| )/.exec(line);
    if (m) names.add(m[1]!);
  }
  return names;
}

describe('metricNames (PromQL tokenizer)', () => {
  it('finds the metrics and nothing else', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, model) (rate(gen_ai_client_operation_duration_bucket{model=~"$model"}[$__rate_interval])))',
      ),
    ).toEqual(['gen_ai_client_operation_duration_bucket']);
    expect(
      metricNames(
        'sum by (deployment) (rate(a_total{reason="rate_limit"}[5m])) / on (deployment) group_left max(b) > 0',
      ),
    ).toEqual(['a_total', 'b']);
  });
});

describe('the Grafana dashboard queries only what the sample gateway exports', () => {
  let gateway: Gateway;

  // Tiers and a fallback, so that the spillover and fallback counters exist.
  const deployments: SimulatedDeploymentSpec[] = [
    { name: 'aoai-ptu', provider: 'openai', model: 'gpt-4o-mini', tpm: 8_000, rpm: 60, latency: 0 },
    { name: 'aoai-paygo', provider: 'openai', model: 'gpt-4o-mini', tpm: 8_000, rpm: 60, latency: 0, priority: 1 },
    { name: 'aoai-big', provider: 'openai', model: 'gpt-4o', tpm: 8_000, rpm: 60, latency: 0 },
    { name: 'foundry-eastus', provider: 'anthropic', model: 'claude-sonnet-5', tpm: 6_000, rpm: 60, latency: 0 },
  ]; // prettier-ignore

  beforeAll(async () => {
    gateway = await createGateway({
      port: 0,
      logger: false,
      simulation: {
        latencyFactor: 0,
        chunkDelay: 0,
        deployments,
        fallbacks: { 'gpt-4o': ['gpt-4o-mini'] },
      },
    });
  });
  afterAll(() => gateway.close());

  it('names in every PromQL expression appear in /metrics after a little traffic', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: unknown[] };
    const exprs = expressions(dashboard);
    expect(exprs.length).toBeGreaterThanOrEqual(15);

    const post = (path: string, body: object) =>
      fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (let i = 0; i < 3; i++) {
      const chat = await post('/v1/chat/completions', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `hello ${i}` }],
      });
      expect(chat.status).toBe(200);
      const claude = await post('/v1/messages', {
        model: 'claude-sonnet-5',
        max_tokens: 32,
        messages: [{ role: 'user', content: `hello ${i}` }],
      });
      expect(claude.status).toBe(200);
    }

    const scrape = await fetch(`${gateway.url}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    const names = exported(text);
    const used = new Set(exprs.flatMap(metricNames));
    expect(used.size).toBeGreaterThanOrEqual(12);
    const missing = [...used].filter((n) => !names.has(n));
    expect(missing).toEqual([]);
    // The switchboard's own metrics share one prefix and one scope with the GenAI histograms.
    for (const name of used) expect(name).toMatch(/^(switchboard_|gen_ai_client_)/);
    expect(text).toMatch(/^switchboard_spillovers_total\{[^}]*deployment="aoai-paygo"[^}]*\} 0$/m);
    expect(text).toMatch(/^switchboard_fallbacks_total\{[^}]*fallback="gpt-4o-mini"[^}]*\} 0$/m);
    // The simulated deployments have list prices: the calls above were priced, as other's (they
    // named no tenant), and the cost panels read them; the tag refusals start at 0.
    const spent = text
      .split('\n')
      .filter((l) => l.startsWith('switchboard_cost_usd_total{') && l.includes('tenant="other"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(spent).toBeGreaterThan(0);
    expect(text).toMatch(/^switchboard_tag_refusals_total\{[^}]*model="gpt-4o"[^}]*\} 0$/m);
    const byTitle = panels(dashboard);
    expect(byTitle.get('Cost per tenant')).toMatch(/sum by \(tenant\).*switchboard_cost_usd_total/);
    expect(byTitle.get('Calls refused for tags')).toContain('switchboard_tag_refusals_total');
    for (const line of text.split('\n').filter((l) => /^(switchboard_|gen_ai_)/.test(l))) {
      expect(line).toContain('otel_scope_name="nestjs-switchboard"');
    }
  });
});
