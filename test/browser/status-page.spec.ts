/**
 * The gateway's status page in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core): it lists the deployments, its bars and counts follow a burst of traffic, a
 * mark-down shows as cooling and recovers, and it never requests anything outside the gateway.
 *
 * Without /usr/bin/chromium the suite is skipped, unless CI is set: there it must run
 * (`apt-get install -y chromium`).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { createGateway, type Gateway } from '../../sample/main';
import type { SwitchboardStatus } from '../../sample/status/status.service';

const CHROMIUM = '/usr/bin/chromium';
const COOLDOWN = 1_500;
// The suite writes nothing tracked: docs/status-page.png is a committed asset. To refresh it,
// run this spec with STATUS_PAGE_SCREENSHOT=docs/status-page.png.
const SCREENSHOT =
  process.env.STATUS_PAGE_SCREENSHOT ?? join(tmpdir(), 'nestjs-switchboard', 'status-page.png');

const inCI = !!process.env.CI && !['0', 'false'].includes(process.env.CI.toLowerCase());
const haveChromium = existsSync(CHROMIUM);
// Without Chromium (and CI unset) the suite is skipped, its title saying why: nothing is printed
// into Jest's report.
const suite = haveChromium || inCI ? describe : describe.skip;
const title = `status page in headless Chromium${
  suite === describe
    ? ''
    : ` (skipped: ${CHROMIUM} is missing; install it with \`apt-get install -y chromium\`)`
}`;

suite(title, () => {
  jest.setTimeout(60_000);

  let gateway: Gateway;
  let browser: Browser;
  let page: Page;
  const requested: string[] = [];

  beforeAll(async () => {
    if (!haveChromium) {
      throw new Error(`${CHROMIUM} is missing: install it with \`apt-get install -y chromium\``);
    }
    gateway = await createGateway({
      port: 0,
      host: '127.0.0.1',
      simulation: { cooldown: COOLDOWN, latencyFactor: 0.25, chunkDelay: 2 },
      logger: false,
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (request) => requested.push(request.url()));
    // The page's timers run on a clock the test can move: a refresh it waits for comes at once,
    // not a second later. Installed before the page loads, it flows as time does until moved.
    await page.clock.install();
    await page.goto(`${gateway.url}/`);
  });

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  async function snapshot(): Promise<SwitchboardStatus> {
    const res = await fetch(`${gateway.url}/switchboard`);
    return (await res.json()) as SwitchboardStatus;
  }

  const refreshes = (): Promise<number> =>
    page.evaluate(() => Number(document.body.dataset.refreshes ?? 0));

  /**
   * Waits for a refresh after the `after`th, moving the page's clock by its refresh period so that
   * the next one starts now (if a refresh is under way, the one after it comes on its own).
   */
  async function refreshAfter(after: number): Promise<void> {
    await page.clock.fastForward(1_000);
    await page.waitForFunction((n) => Number(document.body.dataset.refreshes) > n, after);
  }

  /** What the page shows, row by row. */
  function shown(): Promise<
    Array<{ deployment: string; model: string; state: string; requests: number; tpm: number }>
  > {
    return page.$$eval('#deployments tbody tr', (rows) =>
      rows.map((tr) => {
        const row = tr as HTMLTableRowElement;
        const meter = row.querySelector('.quota .bar');
        return {
          deployment: row.dataset.deployment ?? '',
          model: row.dataset.model ?? '',
          state: row.querySelector('.state')?.textContent ?? '',
          requests: Number((row.querySelector('.requests')?.textContent ?? '').replace(/,/g, '')),
          tpm: Number(meter?.getAttribute('aria-valuenow') ?? 0),
        };
      }),
    );
  }

  it('lists every configured deployment in an accessible table', async () => {
    await page.waitForFunction(() => Number(document.body.dataset.refreshes ?? 0) >= 1);
    const expected = await snapshot();
    const rows = await shown();
    expect(rows.map((r) => [r.deployment, r.model])).toEqual(
      expected.deployments.flatMap((d) => d.models.map((m) => [d.name, m.name])),
    );
    expect(rows.every((r) => r.state === 'healthy')).toBe(true);

    // Headers, labelled controls, and state in words.
    const headers = await page.$$eval('#deployments thead th[scope="col"]', (ths) =>
      ths.map((th) => th.textContent?.trim()),
    );
    expect(headers).toEqual(expect.arrayContaining(['Deployment', 'State', 'Tokens per minute']));
    expect(await page.locator('#deployments tbody th[scope="row"]').count()).toBe(rows.length);
    await expect(
      page.getByRole('button', { name: 'Mark aoai-eastus down (gpt-4o-mini)' }).isVisible(),
    ).resolves.toBe(true);
    await expect(page.getByLabel('Chat requests in a burst').inputValue()).resolves.toBe('24');
    await expect(
      page.getByRole('meter', { name: 'Tokens per minute, aoai-eastus gpt-4o-mini' }).count(),
    ).resolves.toBe(1);
    await expect(
      page.locator('#models tbody tr[data-model="gpt-4o-mini"] .healthy').textContent(),
    ).resolves.toBe('3 of 3');
  });

  it('moves the bars after a burst, with the request counts of /switchboard', async () => {
    await page.getByRole('button', { name: 'Send a burst of demo traffic' }).click();
    await page.waitForFunction(
      () =>
        /^Burst done: 32 requests/.test(document.getElementById('burst-result')?.textContent ?? ''),
      undefined,
      { timeout: 30_000 },
    );
    // The burst is over: wait for a refresh that saw all of it, then compare with the server.
    await refreshAfter(await refreshes());
    const expected = await snapshot();
    const rows = await shown();
    expect(expected.requests.total).toBeGreaterThanOrEqual(32);
    expect(rows.map((r) => r.requests)).toEqual(
      expected.deployments.flatMap((d) => d.models.map((m) => m.requests)),
    );
    expect(rows.every((r) => r.requests > 0)).toBe(true);
    expect(rows.every((r) => r.tpm > 0)).toBe(true);
    const total = await page.textContent('#total');
    expect(Number(total?.replace(/,/g, ''))).toBe(expected.requests.total);
    const widths = await page.$$eval('#deployments .quota .fill', (fills) =>
      fills.map((f) => Number.parseFloat((f as HTMLElement).style.width)),
    );
    expect(widths.filter((w) => w > 0).length).toBeGreaterThanOrEqual(rows.length);
    expect(await page.textContent('#sessions')).toMatch(/^[1-9]\d* of 1,024$/);
    expect(Number.isFinite(Number(await page.textContent('#rate')))).toBe(true);
  });

  it('shows the USD spent per tenant that /switchboard reports, priced from the burst', async () => {
    await refreshAfter(await refreshes());
    const expected = await snapshot();
    const rows = await page.$$eval('#costs tbody tr', (trs) =>
      trs.map((tr) => {
        const cell = tr.querySelector('.usd') as HTMLElement | null;
        return {
          tenant: (tr as HTMLElement).dataset.tenant ?? '',
          usd: Number(cell?.dataset.usd),
          text: cell?.textContent ?? '',
        };
      }),
    );
    // The simulated deployments have list prices; the burst named no tenant: all of it is other's.
    expect(rows.map(({ tenant, usd }) => ({ tenant, usd }))).toEqual(expected.costs);
    const other = rows.find((r) => r.tenant === 'other')!;
    expect(other.usd).toBeGreaterThan(0);
    expect(other.text).toMatch(/^\$\d+\.\d{2,6}$/);
    expect(await page.isHidden('#costs-none')).toBe(true);
    await expect(
      page.getByRole('table', { name: 'USD spent per tenant since the gateway started' }).count(),
    ).resolves.toBe(1);
  });

  it('draws the last minutes itself: utilization per deployment, requests and 429s per second', async () => {
    const now = await refreshes();
    await refreshAfter(now);
    await refreshAfter(now + 1);
    const chart = await page.evaluate(() => {
      const lines = (id: string) =>
        Array.from(document.querySelectorAll(`#${id} polyline`)).map((p) => {
          const ys = (p.getAttribute('points') ?? '')
            .split(' ')
            .filter((xy: string) => xy !== '')
            .map((xy: string) => Number(xy.split(',')[1]));
          return {
            series: p.getAttribute('data-series') ?? '',
            points: Number(p.getAttribute('data-points')),
            // The chart's y grows downwards: the line's highest point against its lowest.
            rises: ys.length > 1 && Math.min(...ys) < Math.max(...ys),
          };
        });
      return {
        util: lines('history-util'),
        rates: lines('history-rates'),
        legend: Array.from(document.querySelectorAll('#history-rates-legend li')).map((li) =>
          li.textContent?.trim(),
        ),
      };
    });
    const rows = await shown();
    expect(chart.util.map((l) => l.series)).toEqual(
      rows.map((r) => `util ${r.deployment} ${r.model}`),
    );
    expect(chart.util.every((l) => l.points >= 3)).toBe(true);
    // The burst moved utilization and the request rate.
    expect(chart.util.some((l) => l.rises)).toBe(true);
    expect(chart.rates.map((l) => l.series)).toEqual(['requests', '429s']);
    expect(chart.rates[0]!.rises).toBe(true);
    expect(chart.legend).toEqual(['requests sent / s', '429s to callers / s']);
  });

  it('shows a deployment marked down from the page as cooling, then recovered', async () => {
    const button = page.getByRole('button', { name: 'Mark aoai-eastus down (gpt-4o-mini)' });
    const [response] = await Promise.all([
      page.waitForResponse((r) =>
        r.url().endsWith('/switchboard/deployments/aoai-eastus/mark-down'),
      ),
      button.click(),
    ]);
    expect(response.status()).toBe(200);
    const atMarkDown = await refreshes();
    // The state and the healthy count of one render, read together.
    const seen = await page.waitForFunction(
      () => {
        const state =
          document.querySelector('#deployments tr[data-deployment="aoai-eastus"] .state')
            ?.textContent ?? '';
        const healthy =
          document.querySelector('#models tr[data-model="gpt-4o-mini"] .healthy')?.textContent ??
          '';
        return /^cooling \d+ s$/.test(state) && { state, healthy };
      },
      undefined,
      { timeout: 5_000 },
    );
    // Within two refreshes of the mark-down (the page refreshes at once after its own POST).
    expect(await refreshes()).toBeLessThanOrEqual(atMarkDown + 2);
    expect(await seen.jsonValue()).toEqual({
      state: expect.stringMatching(/^cooling [12] s$/),
      healthy: '2 of 3',
    });

    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    await page.waitForFunction(
      () =>
        document.querySelector('#deployments tr[data-deployment="aoai-eastus"] .state')
          ?.textContent === 'healthy',
      undefined,
      { timeout: COOLDOWN + 4_000 },
    );
    await expect(
      page.locator('#models tbody tr[data-model="gpt-4o-mini"] .healthy').textContent(),
    ).resolves.toBe('3 of 3');
  });

  it('offers no controls when the gateway runs on configured deployments', async () => {
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'azure' }] });
    const saved = { ...process.env };
    process.env.AZURE_OPENAI_ENDPOINT = upstream.deployment('azure').azureEndpoint;
    process.env.AZURE_OPENAI_API_KEY = 'k';
    delete process.env.SWITCHBOARD_CONFIG;
    delete process.env.OPENAI_API_KEY;
    let configured: Gateway | undefined;
    try {
      configured = await createGateway({ port: 0, host: '127.0.0.1', logger: false });
      const other = await browser.newPage();
      await other.goto(`${configured.url}/`);
      await other.waitForFunction(() => Number(document.body.dataset.refreshes ?? 0) >= 1);
      expect(await other.textContent('#mode')).toBe('configured');
      expect(await other.isHidden('#controls')).toBe(true);
      expect(await other.getByRole('button', { name: /Mark .* down/ }).count()).toBe(0);
      expect(await other.$$eval('#deployments tbody tr', (rows) => rows.length)).toBe(1);
      // No prices configured: nothing is priced, and the page says so.
      expect(await other.isVisible('#costs-none')).toBe(true);
      expect(await other.isHidden('#costs')).toBe(true);
      await other.close();
    } finally {
      process.env = saved;
      await configured?.close();
      await upstream.close();
    }
  });

  it('requested nothing outside the gateway', () => {
    expect(requested.length).toBeGreaterThan(5);
    const outside = requested.filter(
      (url) => !url.startsWith(`${gateway.url}/`) && !url.startsWith('data:'),
    );
    expect(outside).toEqual([]);
  });
});
