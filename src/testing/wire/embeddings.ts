/**
 * OpenAI / Azure OpenAI Embeddings wire format of the simulated deployments: request validation
 * and `CreateEmbeddingResponse` bodies with deterministic vectors, as floats or base64.
 */
import { seededRandom } from '../seeded-random';
import { estimateTokens, readModelBody, type CompletionPlan, type PlanResult } from './common';

/** Inputs per request the API accepts. */
const MAX_INPUTS = 2048;
/** Vector size when the request sets no `dimensions`. */
const DEFAULT_DIMENSIONS = 1536;
const LARGE_DIMENSIONS = 3072;

/** What an Embeddings answer needs beyond the common plan (internal). */
interface EmbeddingsPlan extends CompletionPlan {
  api: 'embeddings';
  /** One text per input (token arrays as their ids joined by spaces). */
  inputs: string[];
  dimensions: number;
  encoding: 'float' | 'base64';
}

/** FNV-1a, 32 bits: a stable seed per input text. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The simulator's embedding of `text`: a unit-length vector of `dimensions` float32 values
 * derived from the text alone, so every deployment answers the same vector for the same input.
 *
 * @example
 * ```ts
 * simulatedEmbedding('hello', 8).length; // => 8
 * ```
 */
export function simulatedEmbedding(text: string, dimensions: number): number[] {
  const random = seededRandom(hash(text));
  const raw = Array.from({ length: dimensions }, () => random() * 2 - 1);
  const norm = Math.sqrt(raw.reduce((sum, value) => sum + value * value, 0)) || 1;
  // float32 values, so that the float and base64 encodings carry exactly the same numbers.
  return raw.map((value) => Math.fround(value / norm));
}

const isTokenArray = (value: unknown): value is number[] =>
  Array.isArray(value) && value.length > 0 && value.every((v) => Number.isInteger(v));

/** The inputs of `input` as texts plus their token count, or undefined when the shape is wrong. */
function readInputs(input: unknown): { texts: string[]; tokens: number } | undefined {
  const one = (value: unknown): { text: string; tokens: number } | undefined => {
    if (typeof value === 'string' && value !== '') {
      return { text: value, tokens: Math.max(1, estimateTokens(value)) };
    }
    if (isTokenArray(value)) return { text: value.join(' '), tokens: value.length };
    return undefined;
  };
  const single = one(input);
  if (single) return { texts: [single.text], tokens: single.tokens };
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_INPUTS) return undefined;
  const texts: string[] = [];
  let tokens = 0;
  for (const value of input) {
    const item = one(value);
    if (!item) return undefined;
    texts.push(item.text);
    tokens += item.tokens;
  }
  return { texts, tokens };
}

/**
 * Reads a `POST embeddings` body into a plan, or the reason for a 400. `input` is a non-empty
 * string, an array of up to 2048 of them, a token array or an array of token arrays; the prompt
 * tokens are the sum over the inputs (a token array counts its length).
 */
export function readEmbeddingsRequest(raw: unknown): PlanResult<EmbeddingsPlan> {
  const read = readModelBody(raw, 'you must provide a model parameter');
  if (!read.ok) return read;
  const { body, model } = read;
  if (body['input'] === undefined || body['input'] === null) {
    return {
      ok: false,
      message: "Missing required parameter: 'input'.",
      param: 'input',
      code: 'missing_required_parameter',
    };
  }
  const inputs = readInputs(body['input']);
  if (!inputs) {
    return {
      ok: false,
      message:
        "'$.input' is invalid: expected a non-empty string, an array of 1 to " +
        `${MAX_INPUTS} non-empty strings, or token arrays.`,
      param: 'input',
    };
  }
  const encoding = body['encoding_format'] ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') {
    return {
      ok: false,
      message: `Invalid value for 'encoding_format': expected 'float' or 'base64', got ${JSON.stringify(encoding)}.`,
      param: 'encoding_format',
    };
  }
  const dimensions = body['dimensions'];
  if (
    dimensions !== undefined &&
    dimensions !== null &&
    !(typeof dimensions === 'number' && Number.isInteger(dimensions) && dimensions >= 1)
  ) {
    return {
      ok: false,
      message: "Invalid 'dimensions': expected an integer >= 1.",
      param: 'dimensions',
    };
  }
  return {
    ok: true,
    plan: {
      api: 'embeddings',
      model,
      stream: false,
      includeUsage: false,
      text: '',
      promptTokens: inputs.tokens,
      completionTokens: 0,
      truncated: false,
      maxTokens: 0,
      inputs: inputs.texts,
      dimensions:
        typeof dimensions === 'number'
          ? dimensions
          : model.includes('3-large')
            ? LARGE_DIMENSIONS
            : DEFAULT_DIMENSIONS,
      encoding,
    },
  };
}

/** The `CreateEmbeddingResponse` body: one embedding per input, in input order. */
export function embeddingsBody(plan: EmbeddingsPlan): Record<string, unknown> {
  return {
    object: 'list',
    data: plan.inputs.map((text, index) => {
      const vector = simulatedEmbedding(text, plan.dimensions);
      return {
        object: 'embedding',
        index,
        embedding:
          plan.encoding === 'float'
            ? vector
            : Buffer.from(new Float32Array(vector).buffer).toString('base64'),
      };
    }),
    model: plan.model,
    usage: { prompt_tokens: plan.promptTokens, total_tokens: plan.promptTokens },
  };
}
