/**
 * Section 5: PTU + PAYG. Provisioned-throughput deployments are paid for whether used or not, so
 * they should run full and pay-as-you-go ones take only the overflow. The same six simulated
 * deployments (two "PTU", four "PAYG", equal Azure-like quotas) are driven at shares of the PTU
 * capacity, once as priority tiers (PTU `priority: 0`, PAYG `priority: 1`) and once as a flat
 * pool, side by side: how much goes to PAYG, and how full the PTU deployments run.
 */
import { TwoRandomChoices } from '../src';
import {
  DEFAULT_SETUP,
  capacity,
  promptSizes,
  quotaUpstreams,
  scenario,
  type QuotaSetup,
  type ScenarioResult,
} from './strategies';
import { fixed, mean, pct, table } from './util';

const PTU = 2;
const PAYG = 4;
const isPtu = (name: string) => name.startsWith('ptu');

export interface TiersOptions {
  seconds: number;
  /** Offered loads as shares of the PTU tier's capacity. */
  loads: readonly number[];
  seed: number;
  inproc: boolean;
  window: 'fixed' | 'sliding';
}

interface TierRow {
  layout: 'tiers' | 'flat';
  load: number;
  calls: number;
  failed: number;
  ptuServed: number;
  paygServed: number;
  /** PAYG answers over all answers. */
  spilloverShare: number;
  /** PTU answers over what the PTU deployments can serve in the run. */
  ptuUtilization: number;
  ptu429: number;
  upstream429: number;
}

export async function tiers(o: TiersOptions): Promise<Record<string, unknown>> {
  const setup: QuotaSetup = { ...DEFAULT_SETUP, deployments: PTU + PAYG };
  const sizes = promptSizes(20_000, o.seed);
  const meanTokens = mean(sizes.map((c) => Math.max(1, Math.ceil(c / 4)))) + setup.completionTokens;
  const perDeployment = capacity({ ...setup, deployments: 1 }, meanTokens).perSecond;
  const ptuCapacity = PTU * perDeployment;
  console.log(
    `${PTU} PTU + ${PAYG} PAYG simulated deployments, each tpm ${setup.tpm} / rpm ${setup.rpm}, time scale ${setup.timeScale}; ` +
      `PTU capacity ${fixed(ptuCapacity, 1)} calls/s. Loads are shares of the PTU capacity, ${o.seconds} s each. ` +
      `"tiers": PTU priority 0, PAYG priority 1; "flat": the same deployments as one pool.`,
  );
  const names = [
    ...Array.from({ length: PTU }, (_, i) => `ptu${i}`),
    ...Array.from({ length: PAYG }, (_, i) => `payg${i}`),
  ];
  const upstreams = await quotaUpstreams(names, setup, o.inproc);
  const rows: TierRow[] = [];
  try {
    let seq = 0;
    for (const load of o.loads) {
      for (const layout of ['tiers', 'flat'] as const) {
        // The scenario's load is a share of all six deployments' capacity.
        const r: ScenarioResult = await scenario({
          window: o.window,
          upstreams,
          setup,
          id: `tiers-${++seq}-${layout}-${Math.round(load * 100)}`,
          strategy: layout,
          selector: () => new TwoRandomChoices(),
          instances: 1,
          load: (load * PTU) / (PTU + PAYG),
          seconds: o.seconds,
          sizes,
          meanTokens,
          priority: layout === 'tiers' ? (name) => (isPtu(name) ? 0 : 1) : undefined,
        });
        if (r.failed > 0)
          console.log(`${layout} at ${pct(load, 0)}: failed ${JSON.stringify(r.failedByClass)}`);
        let ptuServed = 0;
        let paygServed = 0;
        let ptu429 = 0;
        for (const [name, d] of Object.entries(r.byDeployment)) {
          if (isPtu(name)) {
            ptuServed += d.ok;
            ptu429 += d.rateLimited;
          } else paygServed += d.ok;
        }
        rows.push({
          layout,
          load,
          calls: r.calls,
          failed: r.failed,
          ptuServed,
          paygServed,
          spilloverShare: paygServed / Math.max(1, ptuServed + paygServed),
          ptuUtilization: ptuServed / (ptuCapacity * r.elapsed),
          ptu429,
          upstream429: r.upstream429,
        });
      }
    }
  } finally {
    await upstreams.close();
  }
  console.log(
    table(
      [
        'load (of PTU)',
        'layout',
        'calls',
        'to PAYG',
        'PTU utilization',
        'PTU 429s',
        'all 429s',
        'failed for caller',
      ],
      rows.map((r) => [
        pct(r.load, 0),
        r.layout,
        String(r.calls),
        `${r.paygServed} (${pct(r.spilloverShare, 1)})`,
        pct(r.ptuUtilization, 1),
        String(r.ptu429),
        String(r.upstream429),
        `${r.failed} (${pct(r.failed / Math.max(1, r.calls), 2)})`,
      ]),
    ),
  );
  return { setup, ptu: PTU, payg: PAYG, meanTokens, ptuCapacityPerSecond: ptuCapacity, rows };
}
