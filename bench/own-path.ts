/**
 * Section 2d: the switchboard's own path, without the SDK. Each deployment's client is replaced
 * by one whose `chat.completions.create` returns at once an object shaped as the SDK's
 * `APIPromise` (a settled response head and data), so what is measured is the switchboard's work
 * alone: params, routing, accounting, the attempt, the answer's headers, the promise its caller
 * holds. A call then costs a few µs instead of the SDK's ~60-100, so the paired differences are
 * tight even on a busy machine; the same calls on the bare client are the reference.
 */
import { createSwitchboard, type Switchboard } from '../src';
import type { BenchArgs } from './cli';
import {
  loadAgainst,
  paired,
  pairedNote,
  pairedRows,
  versusLine,
  PAIRED_HEADER,
  type CreateSwitchboard,
  type PairedSide,
} from './paired';
import { quietLogger, table } from './util';

const MODEL = 'gpt-4o-mini';

/** A client whose call answers at once, as the SDK's APIPromise would with its head and data. */
function instantClient() {
  const response = new Response('{}', {
    headers: { 'content-type': 'application/json', 'x-request-id': 'req_1' },
  });
  const data = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [],
    usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
  };
  const props = { response, options: {}, controller: new AbortController() };
  // It holds the body it was given, as the SDK's request does until it is sent.
  const create = (body?: unknown) => {
    const responsePromise = Promise.resolve(props);
    return {
      body,
      responsePromise,
      parseResponse: () => data,
      asResponse: () => responsePromise.then((p) => p.response),
      then: <A, B>(
        onfulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
        onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
      ) => responsePromise.then(() => data).then(onfulfilled, onrejected),
    };
  };
  return { chat: { completions: { create } } };
}

function switchboard(n: number, create: CreateSwitchboard, client: object): Switchboard {
  const sb = create({
    deployments: Array.from({ length: n }, (_, i) => ({
      provider: 'openai' as const,
      name: `own_${i}`,
      baseURL: 'http://127.0.0.1:2/v1/',
      apiKey: 'bench',
      models: [{ name: MODEL, tpm: 100_000_000, rpm: 10_000_000 }],
    })),
    logger: quietLogger(),
  });
  for (const d of sb.deployments.values()) Object.defineProperty(d, 'client', { value: client });
  return sb;
}

/** Section 2d: CPU per call of the switchboard's own path (chat), against the bare client. */
export async function ownPath(args: BenchArgs): Promise<Record<string, unknown>> {
  const client = instantClient();
  const against = loadAgainst(args.against);
  const sbs: Array<[string, Switchboard]> = [
    ['switchboard', switchboard(args.deployments, createSwitchboard, client)],
  ];
  if (against) {
    sbs.push(['switchboard --against', switchboard(args.deployments, against, client)]);
  }
  const params = (i: number) => ({
    model: MODEL,
    messages: [{ role: 'user' as const, content: `Can you tell me a fact about the number ${i}?` }],
  });
  const sides: PairedSide[] = sbs.map(([name, sb]) => ({
    name,
    call: (i) => sb.chat.completions.create(params(i)),
    reset: () => sb.resetUsage(),
  }));
  // The bare client is given the same params, built per call as its caller would: they are the
  // caller's bytes on both sides, not the switchboard's.
  const bare = client.chat.completions.create as unknown as (body: unknown) => Promise<unknown>;
  sides.push({ name: 'bare client', call: (i) => bare(params(i)) });
  const options = { cycles: args.cpuCycles, calls: 50, inflight: 50, warmup: args.smoke ? 1 : 20 };
  // The same calls 1 000 at once, as a server under load launches them: what a call costs while
  // a thousand others are in flight (their admissions in the counters, their rows forgotten).
  const crowd = {
    cycles: Math.max(2, Math.round(args.cpuCycles / 8)),
    calls: 1_000,
    inflight: 1_000,
    warmup: args.smoke ? 1 : 5,
  };
  try {
    const out = await paired(sides, options);
    console.log(`chat.completions.create, ${args.deployments} deployments; ${pairedNote(options)}`);
    console.log(table(PAIRED_HEADER, pairedRows('', out)));
    if (against) console.log(versusLine(out, 'switchboard', 'switchboard --against'));
    const thousand = await paired(sides, crowd);
    console.log(`\nThe same, 1 000 in flight; ${pairedNote(crowd)}`);
    console.log(table(PAIRED_HEADER, pairedRows('', thousand)));
    if (against) console.log(versusLine(thousand, 'switchboard', 'switchboard --against'));
    return { ...(out as unknown as Record<string, unknown>), thousandInFlight: thousand };
  } finally {
    for (const [, sb] of sbs) await sb.close();
  }
}
