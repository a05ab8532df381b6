// The gateway's status page: reads /switchboard every second and updates the tables in place
// (rows are built once, so focus stays on a button while the numbers change).
'use strict';

(() => {
  const REFRESH_MS = 1000;
  const number = new Intl.NumberFormat('en-US');
  const usd = new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: 2,
    maximumFractionDigits: 6,
  });
  const $ = (id) => document.getElementById(id);

  // With GATEWAY_API_KEYS the gateway wants a key: open the page as /#key=<key> (a fragment never
  // reaches the server or its logs), or type it when asked. It is kept in this tab only and sent
  // as a header.
  const KEY = 'switchboard-gateway-key';
  const fragment = /^#key=(.+)$/.exec(location.hash);
  if (fragment) {
    sessionStorage.setItem(KEY, decodeURIComponent(fragment[1]));
    history.replaceState(null, '', location.pathname + location.search);
  }
  let asked = false;
  function withKey(headers) {
    const key = sessionStorage.getItem(KEY);
    return key ? { ...headers, authorization: `Bearer ${key}` } : headers;
  }
  function askForKey() {
    if (asked) return;
    asked = true;
    const key = window.prompt('This gateway wants an API key (one of GATEWAY_API_KEYS):');
    if (key) sessionStorage.setItem(KEY, key.trim());
  }

  /** `${deployment}/${model}` -> the cells of its row. */
  const rows = new Map();
  /** model -> the cells of its row in the models table. */
  const modelRows = new Map();
  let layout = '';
  let latest = null;
  let timer = 0;
  let refreshes = 0;

  function cell(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function seconds(ms) {
    return `${Math.max(0, ms / 1000).toFixed(1)} s`;
  }

  function apiName(provider) {
    return provider === 'anthropic' ? 'Anthropic Messages' : 'OpenAI Chat Completions';
  }

  /** A bar and its figure; `into` appends them to a cell that already has one. */
  function meter(label, into) {
    const bar = cell('div', 'bar');
    bar.setAttribute('role', 'meter');
    bar.setAttribute('aria-label', label);
    bar.setAttribute('aria-valuemin', '0');
    const fill = cell('div', 'fill');
    bar.append(fill);
    const figure = cell('span', 'figure');
    into.append(bar, figure);
    return { td: into, bar, fill, figure };
  }

  function quotaCell(label) {
    return meter(label, cell('td', 'quota'));
  }

  function setQuota(q, quota, unit, name) {
    const { used, limit } = quota;
    // The bar and the utilization column use the upstream's count; ours and what the upstream
    // said was left are shown beside it.
    const learned = quota.learned ? ' (learned)' : '';
    const detail =
      quota.upstreamRemaining !== undefined
        ? ` · ours ${number.format(quota.ours)}, upstream left ${number.format(quota.upstreamRemaining)}`
        : '';
    // The requests of the last 10 s count against a sixth of the RPM, as Azure enforces it: when
    // that is the fuller share, the bar (and the utilization column) show it.
    const recent =
      quota.recent && quota.recent.used / quota.recent.limit > (limit > 0 ? used / limit : 0)
        ? quota.recent
        : undefined;
    q.figure.textContent =
      (name ? `${name} ` : '') +
      (limit > 0
        ? `${number.format(used)} / ${number.format(limit)}${learned}`
        : `${number.format(used)}, no limit`) +
      (recent
        ? ` · last 10 s ${number.format(recent.used)} / ${number.format(recent.limit)}`
        : '') +
      detail;
    const share = Math.min(1, quota.share ?? (limit > 0 ? used / limit : 0));
    const now = recent ? recent.used : used;
    const max = recent ? recent.limit : limit;
    q.bar.setAttribute('aria-valuemax', String(max > 0 ? max : Math.max(now, 1)));
    q.bar.setAttribute('aria-valuenow', String(now));
    q.bar.setAttribute(
      'aria-valuetext',
      max > 0
        ? `${number.format(now)} of ${number.format(max)} ${unit}${recent ? ' in the last 10 s' : ''} (${Math.round(share * 100)} %)`
        : `${number.format(used)} ${unit}, no limit`,
    );
    q.fill.style.width = `${(share * 100).toFixed(1)}%`;
    q.bar.classList.toggle('high', share >= 0.75 && share < 1);
    q.bar.classList.toggle('full', share >= 1);
  }

  /** Builds the table rows when the set of deployments and models changes (at the first load). */
  function build(snapshot) {
    const key = JSON.stringify(
      snapshot.deployments
        .map((d) => [d.name, d.models.map((m) => m.name)])
        .concat(snapshot.models.map((m) => m.name)),
    );
    if (key === layout) return;
    layout = key;
    rows.clear();
    modelRows.clear();

    const body = $('deployments').tBodies[0];
    body.replaceChildren();
    for (const d of snapshot.deployments) {
      for (const m of d.models) {
        const tr = cell('tr');
        tr.dataset.deployment = d.name;
        tr.dataset.model = m.name;
        const name = cell('th', '', d.name);
        name.scope = 'row';
        name.append(cell('span', 'provider', d.provider === 'anthropic' ? 'Anthropic' : 'OpenAI'));
        // Where calls that require tags may go: shown beside the provider.
        if (d.tags && d.tags.length > 0) name.append(cell('span', 'tags', d.tags.join(', ')));
        const tier = cell('td', 'tier');
        const state = cell('span', 'state');
        const stateCell = cell('td');
        stateCell.append(state);
        const tpm = quotaCell(`Tokens per minute, ${d.name} ${m.name}`);
        const rpm = quotaCell(`Requests per minute, ${d.name} ${m.name}`);
        const util = cell('td', 'util');
        const inFlight = cell('td', 'in-flight');
        const latency = cell('td', 'latency');
        const requests = cell('td', 'requests');
        const sessions = cell('td', 'sessions');
        const action = cell('td', 'simulated-only');
        action.hidden = true;
        const button = cell('button', 'mark-down', 'Mark down');
        button.type = 'button';
        button.setAttribute('aria-label', `Mark ${d.name} down (${m.name})`);
        button.addEventListener('click', () => markDown(d.name, m.name, button));
        action.append(button);
        tr.append(
          name,
          cell('td', 'model', m.name),
          tier,
          stateCell,
          tpm.td,
          rpm.td,
          util,
          inFlight,
          latency,
          requests,
          sessions,
          action,
        );
        body.append(tr);
        rows.set(`${d.name}/${m.name}`, {
          tier,
          state,
          tpm,
          rpm,
          util,
          inFlight,
          latency,
          requests,
          sessions,
          action,
          button,
        });
      }
    }

    const models = $('models').tBodies[0];
    models.replaceChildren();
    for (const m of snapshot.models) {
      const tr = cell('tr');
      tr.dataset.model = m.name;
      const name = cell('th', '', m.name);
      name.scope = 'row';
      const healthy = cell('td', 'healthy');
      const tiers = cell('td', 'tiers');
      const spilled = cell('td', 'spilled');
      const fallbacks = cell('td', 'fallbacks');
      const requests = cell('td', 'requests');
      tr.append(
        name,
        cell('td', '', apiName(m.provider)),
        healthy,
        tiers,
        spilled,
        fallbacks,
        requests,
      );
      models.append(tr);
      modelRows.set(m.name, { healthy, tiers, spilled, fallbacks, requests });
    }
  }

  /** Recent latency: time to first token (streams) and per output token (other answers). */
  function latencyText(latency) {
    const parts = [];
    if (latency.firstTokenMs !== undefined) {
      parts.push(`${number.format(Math.round(latency.firstTokenMs))} ms to first token`);
    }
    if (latency.perTokenMs !== undefined) {
      parts.push(`${latency.perTokenMs.toFixed(1)} ms per token`);
    }
    return parts.length > 0 ? parts.join(' · ') : '–';
  }

  const DEPLOYMENT_FAULT = /^(unauthorized|not deployed|quota exhausted)/;

  function stateOf(m) {
    if (m.cooling) {
      const left = `${Math.max(1, Math.ceil(m.cooldownRemaining / 1000))} s`;
      return {
        kind: 'cooling',
        // A fault of the deployment (unauthorized, not deployed, quota exhausted) says which.
        text: DEPLOYMENT_FAULT.test(m.downReason ?? '')
          ? `${m.downReason}, retried in ${left}`
          : `cooling ${left}`,
      };
    }
    if (!m.healthy) return { kind: 'saturated', text: 'quota used up' };
    return { kind: 'healthy', text: 'healthy' };
  }

  function render(snapshot) {
    latest = snapshot;
    build(snapshot);
    const simulated = snapshot.simulated === true;
    $('mode').textContent = simulated ? 'simulated' : 'configured';
    $('rate').textContent = number.format(snapshot.requests.perSecond);
    $('total').textContent = number.format(snapshot.requests.total);
    $('sessions').textContent =
      `${number.format(snapshot.sessions.held)} of ${number.format(snapshot.sessions.max)}`;
    $('controls').hidden = !simulated;
    for (const el of document.querySelectorAll('th.simulated-only')) el.hidden = !simulated;

    for (const d of snapshot.deployments) {
      for (const m of d.models) {
        const row = rows.get(`${d.name}/${m.name}`);
        const state = stateOf(m);
        row.tier.textContent = m.weight === 1 ? `P${m.priority}` : `P${m.priority} × ${m.weight}`;
        row.state.className = `state ${state.kind}`;
        row.state.textContent = state.text;
        setQuota(row.tpm, m.tpm, 'tokens per minute');
        // Claude on Foundry: input and output tokens have limits of their own, each a bar.
        for (const [key, unit, name] of [
          ['itpm', 'input tokens per minute', 'input'],
          ['otpm', 'output tokens per minute', 'output'],
        ]) {
          if (!m[key]) continue;
          row[key] ??= meter(
            `${unit[0].toUpperCase()}${unit.slice(1)}, ${d.name} ${m.name}`,
            row.tpm.td,
          );
          setQuota(row[key], m[key], unit, name);
        }
        setQuota(row.rpm, m.rpm, 'requests per minute');
        row.util.textContent = `${Math.round(m.util * 100)} %`;
        row.inFlight.textContent = m.inFlight.cap
          ? `${number.format(m.inFlight.count)} of ${number.format(m.inFlight.cap)}`
          : number.format(m.inFlight.count);
        row.latency.textContent = latencyText(m.latency);
        row.requests.textContent = number.format(m.requests);
        row.sessions.textContent = number.format(d.sessions);
        row.action.hidden = !simulated;
      }
    }
    for (const m of snapshot.models) {
      const row = modelRows.get(m.name);
      row.healthy.textContent =
        `${m.healthy} of ${m.total}` +
        (m.queued > 0 ? `, ${m.queued} waiting for room (longest ${seconds(m.queueWaitMs)})` : '') +
        (m.failed.rateLimited + m.failed.other > 0
          ? `, failed for callers: ${m.failed.rateLimited} rate-limited, ${m.failed.other} other`
          : '');
      row.tiers.textContent = m.tiers
        ? m.tiers.map((t) => `P${t.priority}: ${t.healthy} of ${t.total}`).join(' · ')
        : 'one tier';
      row.spilled.textContent = m.tiers ? number.format(m.spilled) : '–';
      row.fallbacks.textContent =
        m.fallbacks.length === 0
          ? 'none'
          : m.fallbacks.join(' → ') + (m.fallbackInUse ? ` (in use: ${m.fallbackInUse})` : '');
      row.fallbacks.classList.toggle('in-use', !!m.fallbackInUse);
      row.requests.textContent = number.format(m.requests);
    }
    renderQueue(snapshot.queue ?? []);
    renderCosts(snapshot.costs ?? []);
    window.statusChart?.push(snapshot);
    refreshes += 1;
    document.body.dataset.refreshes = String(refreshes);
  }

  /** The queue per model, lane and tenant: rebuilt on each refresh (at most a few dozen rows). */
  function renderQueue(lines) {
    const body = $('queue').tBodies[0];
    body.replaceChildren(
      ...lines.map((q) => {
        const tr = document.createElement('tr');
        tr.append(
          cell('td', '', q.model),
          cell('td', '', q.lane),
          cell('td', '', q.tenant),
          cell('td', '', number.format(q.waiting)),
        );
        return tr;
      }),
    );
    $('queue').hidden = lines.length === 0;
    $('queue-empty').hidden = lines.length > 0;
  }

  /** USD per tenant, the largest first: rebuilt on each refresh (named tenants and `other`). */
  function renderCosts(costs) {
    const body = $('costs').tBodies[0];
    body.replaceChildren(
      ...costs.map((c) => {
        const tr = document.createElement('tr');
        tr.dataset.tenant = c.tenant;
        const name = cell('th', '', c.tenant);
        name.scope = 'row';
        const spent = cell('td', 'usd', usd.format(c.usd));
        spent.dataset.usd = String(c.usd);
        tr.append(name, spent);
        return tr;
      }),
    );
    $('costs').hidden = costs.length === 0;
    $('costs-none').hidden = costs.length > 0;
  }

  function setConnection(text, offline) {
    const el = $('connection');
    el.textContent = text;
    el.classList.toggle('offline', offline);
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const res = await fetch('/switchboard', {
        cache: 'no-store',
        headers: withKey({ accept: 'application/json' }),
      });
      if (res.status === 401) askForKey();
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      render(await res.json());
      setConnection(`Live, updated ${new Date().toLocaleTimeString()}`, false);
    } catch {
      setConnection('Gateway unreachable: retrying every second', true);
    } finally {
      clearTimeout(timer);
      timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  async function markDown(deployment, model, button) {
    button.disabled = true;
    try {
      const res = await fetch(
        `/switchboard/deployments/${encodeURIComponent(deployment)}/mark-down`,
        {
          method: 'POST',
          headers: withKey({ 'content-type': 'application/json' }),
          body: JSON.stringify({ model }),
        },
      );
      if (!res.ok) {
        const body = await res.json().catch(() => ({}));
        $('burst-result').textContent =
          `Could not mark ${deployment} down: ${body.message || res.status}`;
      }
    } finally {
      button.disabled = false;
      void refresh();
    }
  }

  const FILLER =
    'The switchboard spreads calls over deployments by the power of two random choices, ' +
    'keeps sessions on one deployment while it is healthy, and cools a deployment down after a 429. ';

  /** One demo request through the gateway's own API; resolves to its HTTP status (0: no answer). */
  async function send(path, body, sessionId) {
    const headers = { 'content-type': 'application/json' };
    if (sessionId) headers['x-session-id'] = sessionId;
    try {
      const res = await fetch(path, {
        method: 'POST',
        headers: withKey(headers),
        body: JSON.stringify(body),
      });
      await res.text();
      return res.status;
    } catch {
      return 0;
    }
  }

  async function burst(size) {
    const out = $('burst-result');
    const button = $('burst');
    const chatModel = latest && latest.models.find((m) => m.provider === 'openai');
    const claudeModel = latest && latest.models.find((m) => m.provider === 'anthropic');
    const jobs = [];
    if (chatModel) {
      for (let i = 0; i < size; i++) {
        jobs.push(
          send(
            '/v1/chat/completions',
            {
              model: chatModel.name,
              messages: [
                { role: 'user', content: `Request ${i + 1}. ${FILLER.repeat(1 + (i % 4))}` },
              ],
              stream: i % 4 === 3,
            },
            i % 3 === 0 ? `demo-chat-${i % 4}` : undefined,
          ),
        );
      }
    }
    if (claudeModel) {
      for (let i = 0; i < Math.max(1, Math.round(size / 3)); i++) {
        jobs.push(
          send(
            '/v1/messages',
            {
              model: claudeModel.name,
              max_tokens: 512,
              messages: [
                { role: 'user', content: `Message ${i + 1}. ${FILLER.repeat(1 + (i % 3))}` },
              ],
              stream: i % 2 === 1,
            },
            i % 2 === 0 ? `demo-claude-${i % 3}` : undefined,
          ),
        );
      }
    }
    button.disabled = true;
    out.textContent = `Sending ${jobs.length} requests…`;
    const statuses = await Promise.all(jobs);
    button.disabled = false;
    const ok = statuses.filter((s) => s === 200).length;
    const failed = {};
    for (const s of statuses)
      if (s !== 200) failed[s || 'no answer'] = (failed[s || 'no answer'] || 0) + 1;
    const detail = Object.entries(failed)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ');
    out.textContent = `Burst done: ${jobs.length} requests, ${ok} answered${detail ? `, failed: ${detail}` : ''}.`;
    void refresh();
  }

  $('burst-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const size = Math.min(200, Math.max(1, Number.parseInt($('burst-size').value, 10) || 24));
    void burst(size);
  });

  void refresh();
})();
