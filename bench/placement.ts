/**
 * Section 10: placement. Prompt caches: calls sharing a few long system prompts, without
 * session ids, over six simulated deployments whose caches behave like the real ones (per
 * deployment, from 1 024 tokens, five minutes after last use), on a simulated clock: how many
 * calls hit a cache, and what share of prompt tokens came from one, with `cacheAffinity` on and
 * off. Residency: calls tagged `eu` beside untagged ones, counted per deployment.
 */
import { createSwitchboard, type Switchboard } from '../src';
import { SimulatedUpstream, seededRandom } from '../src/testing';
import { quietLogger, table } from './util';

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

export interface PlacementOptions {
  calls: number;
  seed: number;
}

const MODEL = 'gpt-4o';
const NAMES = ['eu-west', 'eu-north', 'us-east', 'us-west', 'asia-1', 'asia-2'];
/** Shared system prompts, each about 1 500 tokens. */
const PROMPTS = 12;

interface CacheRow {
  affinity: boolean;
  calls: number;
  hits: number;
  cachedShare: number;
}

async function run(affinity: boolean, o: PlacementOptions): Promise<CacheRow> {
  let now = 1_700_000_000_000;
  const clock = () => now;
  const upstream = await SimulatedUpstream.start({
    deployments: NAMES.map((name) => ({ name })),
    clock,
  });
  const sb: Switchboard = createSwitchboard({
    deployments: NAMES.map((name) => ({
      provider: 'openai' as const,
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      models: [{ name: MODEL, tpm: 1_000_000 }],
    })),
    cacheAffinity: affinity,
    clock,
    random: seededRandom(o.seed),
    logger: quietLogger(),
  });
  const random = seededRandom(o.seed + 1);
  let hits = 0;
  let cached = 0;
  let prompt = 0;
  try {
    for (let i = 0; i < o.calls; i++) {
      // About one call every 10 s over all prompts: each prompt is used every two minutes or so.
      now += Math.floor(random() * 20_000);
      const p = Math.floor(random() * PROMPTS);
      const answer = await sb.chat.completions.create({
        model: MODEL,
        max_tokens: 16,
        messages: [
          {
            role: 'system',
            content: `Assistant ${p}. Answer from the product manual. `.repeat(130),
          },
          { role: 'user', content: `Question ${i}` },
        ],
      });
      const usage = answer.usage!;
      const read = usage.prompt_tokens_details?.cached_tokens ?? 0;
      if (read > 0) hits++;
      cached += read;
      prompt += usage.prompt_tokens;
    }
  } finally {
    await sb.close();
    await upstream.close();
  }
  return { affinity, calls: o.calls, hits, cachedShare: cached / prompt };
}

async function residency(o: PlacementOptions): Promise<Record<string, number>> {
  const upstream = await SimulatedUpstream.start({ deployments: NAMES.map((name) => ({ name })) });
  const sb = createSwitchboard({
    deployments: NAMES.map((name) => ({
      provider: 'openai' as const,
      name,
      baseURL: upstream.deployment(name).openaiBaseURL,
      apiKey: 'k',
      tags: [name.split('-')[0]!],
      models: [{ name: MODEL, tpm: 1_000_000 }],
    })),
    random: seededRandom(o.seed),
    logger: quietLogger(),
  });
  try {
    for (let i = 0; i < o.calls; i++) {
      await sb.chat.completions.create({
        model: MODEL,
        max_tokens: 8,
        messages: [{ role: 'user', content: `hello ${i}` }],
        tags: ['eu'],
      });
    }
    return Object.fromEntries(NAMES.map((n) => [n, upstream.deployment(n).stats.requests]));
  } finally {
    await sb.close();
    await upstream.close();
  }
}

export async function placement(o: PlacementOptions): Promise<Record<string, unknown>> {
  console.log(
    `${o.calls} calls without session ids over ${NAMES.length} deployments, ${PROMPTS} shared system prompts ` +
      `(~1 600 tokens each), about one call every 10 s on a simulated clock (caches live 5 min).`,
  );
  const rows = [await run(false, o), await run(true, o)];
  console.log(
    table(
      ['cacheAffinity', 'calls', 'cache hits', 'hit rate', 'prompt tokens from cache'],
      rows.map((r) => [
        String(r.affinity),
        String(r.calls),
        String(r.hits),
        pct(r.hits / r.calls),
        pct(r.cachedShare),
      ]),
    ),
  );
  const counts = await residency(o);
  console.log(`\n${o.calls} calls with tags: ['eu'], per deployment: ${JSON.stringify(counts)}`);
  return { cache: rows, residency: counts };
}
