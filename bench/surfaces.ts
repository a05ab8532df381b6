/**
 * Section 2c: the switchboard's cost per call on each API surface, against the same call on a
 * plain SDK client. Both sides' clients get a `fetch` that answers at once with a canned body, so
 * what is measured is the SDK's own work and the switchboard's on top: CPU per call and its
 * synchronous part (what the original calls the overhead per request), compared round by round
 * ({@link paired}), with bytes allocated and promises made per call.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { AnthropicFoundry } from '@anthropic-ai/foundry-sdk';
import OpenAI from 'openai';
import { createSwitchboard, type DeploymentConfig, type Switchboard } from '../src';
import type { BenchArgs } from './cli';
import {
  loadAgainst,
  paired,
  pairedNote,
  pairedRows,
  versusLine,
  PAIRED_HEADER,
  type PairedSide,
} from './paired';
import { quietLogger, table } from './util';

const GPT = 'gpt-4o-mini';
const EMBED = 'text-embedding-3-small';
const CLAUDE = 'claude-sonnet-5';

const json = (body: unknown) => {
  const text = JSON.stringify(body);
  return (): Promise<Response> =>
    Promise.resolve(
      new Response(text, {
        status: 200,
        headers: {
          'content-type': 'application/json',
          'x-request-id': 'req_1',
          'request-id': 'req_1',
        },
      }),
    );
};

const vector = Buffer.from(new Float32Array(64).map((_, i) => i / 64).buffer).toString('base64');

/** Per surface, a `fetch` that answers at once with a canned body (section 2b uses `chat` too). */
export const CANNED: Record<string, () => Promise<Response>> = {
  chat: json({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: GPT,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'A fact.', refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
  }),
  responses: json({
    id: 'resp_1',
    object: 'response',
    created_at: 0,
    status: 'completed',
    model: GPT,
    output: [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'A fact.', annotations: [] }],
      },
    ],
    usage: { input_tokens: 11, output_tokens: 3, total_tokens: 14 },
  }),
  embeddings: json({
    object: 'list',
    model: EMBED,
    data: [{ object: 'embedding', index: 0, embedding: vector }],
    usage: { prompt_tokens: 5, total_tokens: 5 },
  }),
  messages: json({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: CLAUDE,
    content: [{ type: 'text', text: 'A fact.' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 11, output_tokens: 3 },
  }),
};

// Quotas far above what a round sends: this section measures the happy path of each surface, not
// selection among saturated deployments (sections 1-2 load those to twice Azure's 10-s limit).
const QUOTA = { tpm: 100_000_000, rpm: 10_000_000 };

const question = (i: number) => `Can you tell me a fact about the number ${i}?`;

interface SurfaceCase {
  name: string;
  sb: (sb: Switchboard, i: number) => Promise<unknown>;
  direct: (i: number) => Promise<unknown>;
}

/** Section 2c, per surface: CPU per call, switchboard vs direct, compared round by round. */
export async function perSurface(args: BenchArgs): Promise<Record<string, unknown>> {
  const n = args.deployments;
  const openaiBase = 'http://127.0.0.1:2/v1/';
  const foundryBase = 'http://127.0.0.1:2/anthropic/';
  const deployments: DeploymentConfig[] = [];
  for (let i = 0; i < n; i++) {
    deployments.push({
      provider: 'openai',
      name: `oai_${i}`,
      baseURL: openaiBase,
      apiKey: 'bench',
      models: [
        { name: GPT, tpm: QUOTA.tpm, rpm: QUOTA.rpm },
        { name: EMBED, tpm: QUOTA.tpm, rpm: QUOTA.rpm },
      ],
    });
    deployments.push({
      provider: 'anthropic',
      name: `claude_${i}`,
      baseURL: foundryBase,
      apiKey: 'bench',
      models: [{ name: CLAUDE, tpm: QUOTA.tpm, rpm: QUOTA.rpm }],
    });
  }
  // Route each client's requests to the canned answer of the surface called (bench only).
  const route = (url: string): (() => Promise<Response>) =>
    url.includes('/chat/completions')
      ? CANNED.chat!
      : url.includes('/responses')
        ? CANNED.responses!
        : url.includes('/embeddings')
          ? CANNED.embeddings!
          : CANNED.messages!;
  const fetch = (url: string | URL | Request) => route(String(url))();
  const against = loadAgainst(args.against);
  const sbs: Array<[string, Switchboard]> = [
    [
      'switchboard',
      createSwitchboard({ deployments, usageWindow: args.window, logger: quietLogger() }),
    ],
  ];
  if (against) {
    sbs.push([
      'switchboard --against',
      against({ deployments, usageWindow: args.window, logger: quietLogger() }),
    ]);
  }
  for (const [, sb] of sbs) {
    for (const d of sb.deployments.values()) {
      (d as unknown as { client: { fetch: unknown } }).client.fetch = fetch;
    }
  }
  const oai = Array.from(
    { length: n },
    () =>
      new OpenAI({ baseURL: openaiBase, apiKey: 'bench', maxRetries: 0, timeout: 30_000, fetch }),
  );
  const claude = Array.from(
    { length: n },
    () =>
      new AnthropicFoundry({
        baseURL: foundryBase,
        resource: null,
        apiKey: 'bench',
        maxRetries: 0,
        timeout: 30_000,
        fetch,
      }) as unknown as Anthropic,
  );
  const cases: SurfaceCase[] = [
    {
      name: 'chat.completions.create',
      sb: (s, i) =>
        s.chat.completions.create({
          model: GPT,
          messages: [{ role: 'user', content: question(i) }],
        }),
      direct: (i) =>
        oai[i % n]!.chat.completions.create({
          model: GPT,
          messages: [{ role: 'user', content: question(i) }],
        }),
    },
    {
      name: 'responses.create',
      sb: (s, i) => s.responses.create({ model: GPT, input: question(i) }),
      direct: (i) => oai[i % n]!.responses.create({ model: GPT, input: question(i) }),
    },
    {
      name: 'embeddings.create',
      sb: (s, i) => s.embeddings.create({ model: EMBED, input: question(i) }),
      direct: (i) => oai[i % n]!.embeddings.create({ model: EMBED, input: question(i) }),
    },
    {
      name: 'messages.create',
      sb: (s, i) =>
        s.messages.create({
          model: CLAUDE,
          max_tokens: 64,
          messages: [{ role: 'user', content: question(i) }],
        }),
      direct: (i) =>
        claude[i % n]!.messages.create({
          model: CLAUDE,
          max_tokens: 64,
          messages: [{ role: 'user', content: question(i) }],
        }),
    },
  ];
  const options = {
    cycles: Math.max(2, Math.round(args.cpuCycles / 2)),
    calls: 50,
    inflight: 50,
    warmup: args.smoke ? 1 : 4,
  };
  const out: Record<string, unknown> = {};
  const rows: string[][] = [];
  const versus: string[] = [];
  try {
    for (const c of cases) {
      const sides: PairedSide[] = sbs.map(([name, sb]) => ({
        name,
        call: (i) => c.sb(sb, i),
        reset: () => sb.resetUsage(),
      }));
      sides.push({ name: 'direct', call: c.direct });
      const figures = await paired(sides, options);
      out[c.name] = figures;
      rows.push(...pairedRows(`${c.name}: `, figures));
      if (against)
        versus.push(`${c.name}: ${versusLine(figures, 'switchboard', 'switchboard --against')}`);
    }
  } finally {
    for (const [, sb] of sbs) await sb.close();
  }
  console.log(`${n} deployments per provider; ${pairedNote(options)}`);
  console.log(table(PAIRED_HEADER, rows));
  for (const line of versus) console.log(line);
  return out;
}
