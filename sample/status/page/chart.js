// The status page's chart of the last minutes: utilization per deployment, requests per second
// and 429s per second, kept from the snapshots the page reads and drawn as inline SVG (nothing is
// loaded from anywhere). The history starts when the page opens.
'use strict';

(() => {
  const SVG = 'http://www.w3.org/2000/svg';
  /** Seconds of history kept; the x axis shows what there is, from one minute up to this. */
  const SPAN_S = 300;
  const MIN_SPAN_S = 60;
  const WIDTH = 640;
  const HEIGHT = 150;
  const PAD = { left: 44, right: 8, top: 8, bottom: 20 };
  // Distinguishable on white, and in the order deployments are listed.
  const PALETTE = ['#0969da', '#bf3989', '#1a7f37', '#9a6700', '#8250df', '#cf222e', '#1b7c83'];
  const RATE_COLORS = { requests: '#0969da', rateLimited: '#cf222e' };

  /** [{ t (s), util: Map<key, 0..1>, requests (per s), rateLimited (per s) }] */
  const samples = [];
  let previous = null;

  function el(name, attributes, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
    if (parent) parent.append(node);
    return node;
  }

  /** A round upper bound for the y axis. */
  function niceMax(value) {
    if (value <= 1) return 1;
    const power = 10 ** Math.floor(Math.log10(value));
    for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
    return 10 * power;
  }

  /** Seconds the x axis spans now: the history there is, at least a minute. */
  function span(now) {
    const first = samples[0]?.t ?? now;
    return Math.min(SPAN_S, Math.max(MIN_SPAN_S, Math.ceil((now - first) / 30) * 30));
  }

  function ago(seconds) {
    return seconds >= 60 ? `−${+(seconds / 60).toFixed(1)} min` : `−${seconds} s`;
  }

  function x(t, now) {
    const s = span(now);
    return PAD.left + ((t - (now - s)) / s) * (WIDTH - PAD.left - PAD.right);
  }

  function y(value, max) {
    return PAD.top + (1 - Math.min(value, max) / max) * (HEIGHT - PAD.top - PAD.bottom);
  }

  /** Axes, grid and one polyline per series into `svg` (emptied first). */
  function draw(svg, series, max, format, now) {
    svg.replaceChildren();
    svg.setAttribute('viewBox', `0 0 ${WIDTH} ${HEIGHT}`);
    for (const fraction of [0, 0.5, 1]) {
      const yy = y(max * fraction, max);
      el('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: yy, y2: yy, class: 'grid' }, svg);
      const label = el('text', { x: PAD.left - 4, y: yy + 4, 'text-anchor': 'end' }, svg);
      label.textContent = format(max * fraction);
    }
    const s = span(now);
    for (const [offset, text] of [
      [s, ago(s)],
      [s / 2, ago(s / 2)],
      [0, 'now'],
    ]) {
      const label = el(
        'text',
        { x: x(now - offset, now), y: HEIGHT - 4, 'text-anchor': offset === 0 ? 'end' : 'middle' },
        svg,
      );
      label.textContent = text;
    }
    for (const s of series) {
      const points = s.points.map(([t, v]) => `${x(t, now).toFixed(1)},${y(v, max).toFixed(1)}`);
      el(
        'polyline',
        {
          points: points.join(' '),
          fill: 'none',
          stroke: s.color,
          'stroke-width': 2,
          'data-series': s.name,
          'data-points': s.points.length,
        },
        svg,
      );
    }
  }

  function legend(list, series) {
    list.replaceChildren(
      ...series.map((s) => {
        const item = document.createElement('li');
        const swatch = document.createElement('span');
        swatch.className = 'swatch';
        swatch.style.backgroundColor = s.color;
        item.append(swatch, document.createTextNode(s.label));
        return item;
      }),
    );
  }

  /** Takes one `/switchboard` snapshot into the history and redraws. */
  function push(snapshot) {
    const t = snapshot.time / 1000;
    const rateLimited = snapshot.models.reduce((n, m) => n + m.failed.rateLimited, 0);
    const util = new Map();
    for (const d of snapshot.deployments) {
      for (const m of d.models) util.set(`${d.name} ${m.name}`, m.util);
    }
    const sample = { t, util, requests: 0, rateLimited: 0 };
    if (previous && t > previous.t) {
      const dt = t - previous.t;
      sample.requests = Math.max(0, snapshot.requests.total - previous.total) / dt;
      sample.rateLimited = Math.max(0, rateLimited - previous.rateLimited) / dt;
    }
    previous = { t, total: snapshot.requests.total, rateLimited };
    samples.push(sample);
    while (samples.length > 0 && samples[0].t < t - SPAN_S) samples.shift();
    render(t);
  }

  function render(now) {
    const utilSvg = document.getElementById('history-util');
    const rateSvg = document.getElementById('history-rates');
    if (!utilSvg || !rateSvg) return;
    const keys = [...(samples.at(-1)?.util.keys() ?? [])];
    const utilSeries = keys.map((key, i) => ({
      name: `util ${key}`,
      label: key,
      color: PALETTE[i % PALETTE.length],
      points: samples.filter((s) => s.util.has(key)).map((s) => [s.t, s.util.get(key)]),
    }));
    draw(utilSvg, utilSeries, 1, (v) => `${Math.round(v * 100)} %`, now);
    legend(document.getElementById('history-util-legend'), utilSeries);

    const rates = samples.slice(1);
    const rateSeries = [
      {
        name: 'requests',
        label: 'requests sent / s',
        color: RATE_COLORS.requests,
        points: rates.map((s) => [s.t, s.requests]),
      },
      {
        name: '429s',
        label: '429s to callers / s',
        color: RATE_COLORS.rateLimited,
        points: rates.map((s) => [s.t, s.rateLimited]),
      },
    ];
    const max = niceMax(Math.max(0, ...rates.map((s) => Math.max(s.requests, s.rateLimited))));
    draw(rateSvg, rateSeries, max, (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)), now);
    legend(document.getElementById('history-rates-legend'), rateSeries);
  }

  window.statusChart = { push };
})();
