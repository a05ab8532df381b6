/**
 * Section `retained`: what building and closing switchboards leaves behind. A process that builds
 * one per tenant, per test or per hot reload must end where it began: the heap and the array
 * buffers are measured after full collections, before and after `count` switchboards of 5
 * deployments x 2 models were built and closed one after another.
 */
import { createSwitchboard, type DeploymentConfig } from '../src';
import { fixed, gc, hasGc, quietLogger, table } from './util';

export interface RetainedFigures {
  switchboards: number;
  /** Growth of `heapUsed` (bytes) over them, after full collections. */
  heapBytes: number;
  /** Growth of `arrayBuffers` (bytes): typed arrays' stores live there, outside the heap. */
  arrayBufferBytes: number;
}

const DEPLOYMENTS: DeploymentConfig[] = Array.from({ length: 5 }, (_, i) => ({
  provider: 'openai' as const,
  name: `d${i}`,
  baseURL: 'http://127.0.0.1:2/v1/',
  apiKey: 'x',
  models: [
    { name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 },
    { name: 'gpt-4o', tpm: 30_000, rpm: 300 },
  ],
}));

/** Heap and array buffers in use, after collections that leave nothing collectable behind. */
function settled(): { heap: number; buffers: number } {
  for (let i = 0; i < 4; i++) gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heap: heapUsed, buffers: arrayBuffers };
}

async function buildAndClose(count: number): Promise<void> {
  const logger = quietLogger();
  for (let i = 0; i < count; i++) {
    const sb = createSwitchboard({ deployments: DEPLOYMENTS, logger });
    // A draw, so that what selection keeps of a pool is made too.
    sb.selectDeployment({ model: 'gpt-4o-mini' });
    await sb.close();
  }
}

export async function retained(count: number): Promise<RetainedFigures> {
  if (!hasGc()) console.log('(node without --expose-gc: the figures include garbage)');
  // A first round warms up what every switchboard shares (code, shapes, the SDKs' modules).
  await buildAndClose(Math.min(count, 200));
  const before = settled();
  await buildAndClose(count);
  const after = settled();
  const figures: RetainedFigures = {
    switchboards: count,
    heapBytes: after.heap - before.heap,
    arrayBufferBytes: after.buffers - before.buffers,
  };
  const mb = (bytes: number) => fixed(bytes / 2 ** 20, 2);
  console.log(
    table(
      ['switchboards built and closed', 'heap growth (MB)', 'array buffers growth (MB)'],
      [[String(count), mb(figures.heapBytes), mb(figures.arrayBufferBytes)]],
    ),
  );
  return figures;
}
