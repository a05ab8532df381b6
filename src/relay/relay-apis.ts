import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import { messages } from '../providers/anthropic/messages';
import { chatCompletions } from '../providers/openai/chat';
import { embeddings } from '../providers/openai/embeddings';
import { responses } from '../providers/openai/responses';
import type { Provider } from '../types';
import {
  checkChat,
  checkCountTokens,
  checkEmbeddings,
  checkMessagesApi,
  checkResponses,
  type BodyCheck,
} from './body-checks';
import { anthropicErrorBody, openaiErrorBody, type Problem } from './error-body';
import { relayGet, relayPost } from './relay-operations';

/**
 * One API the relay serves: the adapter whose accounting and routing it uses, the operation that
 * sends the client's body, the checks before anything is sent, and how a stream that fails
 * after its first event ends.
 */
export interface RelayApi {
  /** The API's path as clients of an OpenAI-style `/v1` base call it, for messages. */
  readonly path: string;
  readonly provider: Provider;
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly check: BodyCheck;
  /** The SSE event that ends a stream failing after its first event, as the API sends it. */
  errorFrame(problem: Problem): string;
}

const chatFrame = (problem: Problem): string =>
  `data: ${JSON.stringify(openaiErrorBody(problem))}\n\n`;
const responsesFrame = (problem: Problem): string =>
  `event: error\ndata: ${JSON.stringify({ type: 'error', ...openaiErrorBody(problem) })}\n\n`;
const messagesFrame = (problem: Problem): string =>
  `event: error\ndata: ${JSON.stringify(anthropicErrorBody(problem))}\n\n`;

const as = (adapter: unknown): ApiAdapter => adapter as ApiAdapter;

/** `POST …/chat/completions`. */
const CHAT: RelayApi = {
  path: '/v1/chat/completions',
  provider: 'openai',
  adapter: as(chatCompletions),
  op: relayPost('/chat/completions'),
  check: checkChat,
  errorFrame: chatFrame,
};

/** `POST …/responses`. */
export const RESPONSES: RelayApi = {
  path: '/v1/responses',
  provider: 'openai',
  adapter: as(responses),
  op: relayPost('/responses'),
  check: checkResponses,
  errorFrame: responsesFrame,
};

/** `POST …/embeddings`. */
const EMBEDDINGS: RelayApi = {
  path: '/v1/embeddings',
  provider: 'openai',
  adapter: as(embeddings),
  op: relayPost('/embeddings', { streams: false }),
  check: checkEmbeddings,
  errorFrame: chatFrame,
};

/** `POST …/messages`. */
const MESSAGES: RelayApi = {
  path: '/v1/messages',
  provider: 'anthropic',
  adapter: as(messages),
  op: relayPost('/v1/messages'),
  check: checkMessagesApi,
  errorFrame: messagesFrame,
};

/** `POST …/messages/count_tokens`: no quota used. */
const COUNT_TOKENS: RelayApi = {
  path: '/v1/messages/count_tokens',
  provider: 'anthropic',
  adapter: as(messages),
  op: relayPost('/v1/messages/count_tokens', { metered: false, streams: false }),
  check: checkCountTokens,
  errorFrame: messagesFrame,
};

/** `GET …/responses/:id`, from the deployment that stored it. */
export const RETRIEVE_RESPONSE: ApiOperation = relayGet('/responses/');

/** Every API that takes a body, in the order messages list their paths. */
export const RELAY_APIS: readonly RelayApi[] = [
  CHAT,
  RESPONSES,
  EMBEDDINGS,
  MESSAGES,
  COUNT_TOKENS,
];

/** What a request path names. */
type RelayRoute =
  | { kind: 'api'; api: RelayApi }
  | { kind: 'retrieve'; id: string }
  | { kind: 'models'; id: string | undefined };

/**
 * What a request path names, by its end (the host and any prefix before the API's path are the
 * client's business): `…/chat/completions`, `…/responses[/:id]`, `…/embeddings`,
 * `…/messages[/count_tokens]`, `…/models[/:id]`.
 *
 * @example
 * ```ts
 * routeOf('/openai/v1/chat/completions'); // { kind: 'api', api: CHAT }
 * ```
 */
export function routeOf(path: string): RelayRoute | undefined {
  if (path.endsWith('/chat/completions')) return ROUTES.chat;
  if (path.endsWith('/messages')) return ROUTES.messages;
  if (path.endsWith('/messages/count_tokens')) return ROUTES.countTokens;
  if (path.endsWith('/responses')) return ROUTES.responses;
  if (path.endsWith('/embeddings')) return ROUTES.embeddings;
  if (path.endsWith('/models')) return ROUTES.models;
  const slash = path.lastIndexOf('/');
  const parent = path.slice(0, slash);
  const id = decodeSegment(path.slice(slash + 1));
  if (id === undefined || id === '') return undefined;
  if (parent.endsWith('/responses')) return { kind: 'retrieve', id };
  if (parent.endsWith('/models')) return { kind: 'models', id };
  return undefined;
}

/** The routes without an id, made once. */
const ROUTES = {
  chat: { kind: 'api', api: CHAT },
  messages: { kind: 'api', api: MESSAGES },
  countTokens: { kind: 'api', api: COUNT_TOKENS },
  responses: { kind: 'api', api: RESPONSES },
  embeddings: { kind: 'api', api: EMBEDDINGS },
  models: { kind: 'models', id: undefined },
} as const satisfies Record<string, RelayRoute>;

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
