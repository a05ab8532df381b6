import type { Problem } from './error-body';

/**
 * Why a request body cannot be sent at all, if it cannot: the checks each API makes before a
 * request costs anything. Only the fields routing and accounting read are looked at; the rest is
 * the upstream's to judge.
 */
export type BodyCheck = (body: Record<string, unknown>) => Problem | undefined;

const openaiMissing = (field: string): Problem => ({
  status: 400,
  message: `Missing required parameter: '${field}'.`,
  param: field,
  code: 'missing_required_parameter',
});

const anthropicMissing = (field: string): Problem => ({
  status: 400,
  message: `${field}: Field required`,
  param: field,
});

/** Every API: a `model` string and a boolean `stream`, if any. */
function checkModel(
  body: Record<string, unknown>,
  missing: (field: string) => Problem,
): Problem | undefined {
  if (body.model === undefined) return missing('model');
  if (typeof body.model !== 'string' || body.model === '') {
    return { status: 400, message: 'model must be a non-empty string.', param: 'model' };
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    return { status: 400, message: 'stream must be a boolean.', param: 'stream' };
  }
  return undefined;
}

function checkMessages(
  body: Record<string, unknown>,
  missing: (field: string) => Problem,
): Problem | undefined {
  const problem = checkModel(body, missing);
  if (problem) return problem;
  if (body.messages === undefined) return missing('messages');
  if (!Array.isArray(body.messages)) {
    return { status: 400, message: 'messages must be an array.', param: 'messages' };
  }
  return undefined;
}

/** `POST …/chat/completions`. */
export const checkChat: BodyCheck = (body) => checkMessages(body, openaiMissing);

/** `POST …/responses`. */
export const checkResponses: BodyCheck = (body) => {
  const problem = checkModel(body, openaiMissing);
  if (problem) return problem;
  const { input } = body;
  if (input === undefined) return openaiMissing('input');
  if (typeof input !== 'string' && !Array.isArray(input)) {
    return { status: 400, message: 'input must be a string or an array.', param: 'input' };
  }
  return undefined;
};

/** `POST …/embeddings`: no streaming. */
export const checkEmbeddings: BodyCheck = (body) => {
  const problem = checkModel(body, openaiMissing);
  if (problem) return problem;
  if (body.input === undefined) return openaiMissing('input');
  if (body.stream === true) {
    return { status: 400, message: 'Embeddings do not stream.', param: 'stream' };
  }
  return undefined;
};

/** `POST …/messages`: `max_tokens` is required. */
export const checkMessagesApi: BodyCheck = (body) => {
  const problem = checkMessages(body, anthropicMissing);
  if (problem) return problem;
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined) return anthropicMissing('max_tokens');
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
    return {
      status: 400,
      message: 'max_tokens: Input should be a valid integer greater than or equal to 1',
      param: 'max_tokens',
    };
  }
  return undefined;
};

/** `POST …/messages/count_tokens`: a Messages body without `max_tokens`; no streaming. */
export const checkCountTokens: BodyCheck = (body) => {
  const problem = checkMessages(body, anthropicMissing);
  if (problem) return problem;
  if (body.stream !== undefined) {
    return { status: 400, message: 'stream: Extra inputs are not permitted', param: 'stream' };
  }
  return undefined;
};

/**
 * The deepest nesting of objects and arrays a request body may have. `JSON.parse` reads any
 * depth, `JSON.stringify` recurses and runs out of stack near ten thousand, and parsing millions
 * of nested arrays holds the event loop for seconds; no API body comes near a hundred.
 */
export const MAX_BODY_DEPTH = 512;

/**
 * The most objects and arrays a request body may hold. Each costs `JSON.parse` about a
 * microsecond, so this bounds the parse near a tenth of a second; a chat body with hundreds of
 * messages, content parts and tool schemas holds a few thousand.
 */
export const MAX_BODY_CONTAINERS = 100_000;

/**
 * The most values (scalars, objects and arrays) a request body may hold: room for the 300 000
 * token ids an embeddings request may send as arrays, and a bound on the parse (a few tenths of a
 * microsecond each).
 */
export const MAX_BODY_VALUES = 1_000_000;

/** Why a JSON text is refused before it is parsed: what it exceeds, and the bound. */
export interface BodyShapeProblem {
  readonly exceeds: 'depth' | 'containers' | 'values';
  readonly limit: number;
  /** The character offset where the bound was passed: the scan stops there. */
  readonly at: number;
}

/**
 * Whether the JSON `text` may be parsed at bounded cost: one pass over its characters (no
 * recursion, no parse, brackets and commas inside strings ignored) that stops at the first
 * character passing {@link MAX_BODY_DEPTH}, {@link MAX_BODY_CONTAINERS} or
 * {@link MAX_BODY_VALUES}. Undefined when it may; the text is not checked for being JSON.
 *
 * @example
 * ```ts
 * bodyShapeProblem('{"a":[[1]]}', { depth: 2 }); // { exceeds: 'depth', limit: 2, at: 6 }
 * bodyShapeProblem('{"a":1}'); // undefined
 * ```
 */
export function bodyShapeProblem(
  text: string,
  limits: { depth?: number; containers?: number; values?: number } = {},
): BodyShapeProblem | undefined {
  const maxDepth = limits.depth ?? MAX_BODY_DEPTH;
  const maxContainers = limits.containers ?? MAX_BODY_CONTAINERS;
  const maxValues = limits.values ?? MAX_BODY_VALUES;
  let depth = 0;
  let containers = 0;
  // Commas and opening brackets: every value but the first of each container is after a comma.
  let values = 1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* backslash: skip what it escapes */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return { exceeds: 'depth', limit: maxDepth, at: i };
      if (++containers > maxContainers) {
        return { exceeds: 'containers', limit: maxContainers, at: i };
      }
      if (++values > maxValues) return { exceeds: 'values', limit: maxValues, at: i };
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
    else if (c === 0x2c /* , */ && ++values > maxValues) {
      return { exceeds: 'values', limit: maxValues, at: i };
    }
  }
  return undefined;
}

/**
 * The sentence that refuses a body {@link bodyShapeProblem} found.
 *
 * @example
 * ```ts
 * bodyShapeMessage({ exceeds: 'depth', limit: 512, at: 512 });
 * // 'The request body is nested deeper than 512 levels.'
 * ```
 */
export function bodyShapeMessage(problem: BodyShapeProblem): string {
  switch (problem.exceeds) {
    case 'depth':
      return `The request body is nested deeper than ${problem.limit} levels.`;
    case 'containers':
      return `The request body holds more than ${problem.limit} objects and arrays.`;
    case 'values':
      return `The request body holds more than ${problem.limit} values.`;
  }
}

/**
 * Whether the JSON `text` nests objects and arrays deeper than `max` (see
 * {@link bodyShapeProblem}, which also bounds how many values it holds).
 *
 * @example
 * ```ts
 * nestedDeeperThan('{"a":[[1]]}', 2); // true
 * ```
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  return (
    bodyShapeProblem(text, { depth: max, containers: Infinity, values: Infinity })?.exceeds ===
    'depth'
  );
}
