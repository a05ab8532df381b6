import type { Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { parseChatCompletion } from 'openai/lib/parser';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import { messages as messagesAdapter } from '../providers/anthropic/messages';
import { Answered } from '../providers/answered';
import type { AttemptOutcome } from '../providers/attempt-types';
import type { PreparedRequest } from '../providers/attempt-types';
import { chatCompletions } from '../providers/openai/chat';
import type { Answer, Deployment } from '../registry/deployment';
import type { Provider } from '../types';
import { chatCompletionToMessage, messageToChatCompletion } from './answers';
import { callerError } from './caller-errors';
import { chatToMessages } from './chat-to-messages';
import { messagesToChat } from './messages-to-chat';
import { refuse, translating, type Refusal, type Translated } from './refusal';
import { chatCompletionToResponse, chunksToResponseEvents } from './responses-answer';
import { responsesToChatBody } from './responses-request';
import { chunksToMessageEvents, messageEventsToChunks } from './streams';

/** The operations translated: `fetch` is `sb.fetch`'s relay of a create call. */
const RELAYED: ReadonlySet<string> = new Set(['create', 'parse', 'fetch']);

/** One direction of translation: the caller's API and the target's, both ways. */
interface Direction {
  readonly target: ApiAdapter;
  readonly ops: ReadonlySet<string>;
  request(body: Record<string, unknown>, model: string, maxTokens: number): Translated<object>;
  answer(data: unknown, model: string, created: number, body: Record<string, unknown>): unknown;
  stream(
    events: AsyncIterable<unknown>,
    model: string,
    created: number,
    body: Record<string, unknown>,
  ): AsyncIterable<unknown>;
}

const CHAT_TO_MESSAGES: Direction = {
  target: messagesAdapter as unknown as ApiAdapter,
  ops: RELAYED,
  request: (body, model, maxTokens) => chatToMessages(body, { model, maxTokens }),
  answer: (data, model, created) => messageToChatCompletion(data as Message, model, created),
  stream: (events, model, created, body) =>
    messageEventsToChunks(events as AsyncIterable<RawMessageStreamEvent>, {
      model,
      created,
      includeUsage:
        (body['stream_options'] as { include_usage?: unknown } | null | undefined)
          ?.include_usage === true,
    }),
};

const MESSAGES_TO_CHAT: Direction = {
  target: chatCompletions as unknown as ApiAdapter,
  ops: RELAYED,
  request: (body, model) => messagesToChat(body, model),
  answer: (data, model) => chatCompletionToMessage(data as ChatCompletion, model),
  stream: (events, model) =>
    chunksToMessageEvents(events as AsyncIterable<ChatCompletionChunk>, { model }),
};

const RESPONSES_TO_MESSAGES: Direction = {
  target: messagesAdapter as unknown as ApiAdapter,
  ops: new Set(['create', 'fetch']),
  request: (body, model, maxTokens) =>
    translating(() => {
      const out = chatToMessages(responsesToChatBody(body) as never, { model, maxTokens });
      return 'refused' in out ? refuse(out.refused.field, out.refused.why) : out.body;
    }),
  answer: (data, model, created, body) =>
    chatCompletionToResponse(messageToChatCompletion(data as Message, model, created), body),
  stream: (events, model, created, body) =>
    chunksToResponseEvents(
      messageEventsToChunks(events as AsyncIterable<RawMessageStreamEvent>, {
        model,
        created,
        includeUsage: true,
      }),
      body,
    ),
};

const DIRECTIONS: Readonly<Record<string, Direction>> = {
  'chat.completions>anthropic': CHAT_TO_MESSAGES,
  'messages>openai': MESSAGES_TO_CHAT,
  'responses>anthropic': RESPONSES_TO_MESSAGES,
};

/**
 * Whether a call of `adapter`'s `op` with `body` can be translated for a model of `provider`:
 * `undefined` when it can, else the refusal naming the field (or the API) that stops it.
 *
 * @example
 * ```ts
 * refusalFor(chatCompletions, 'create', { model: 'gpt-4o', messages, n: 2 }, 'anthropic');
 * // { field: 'n', why: 'Claude answers one choice per call' }
 * ```
 */
export function refusalFor(
  adapter: ApiAdapter,
  op: string,
  body: Record<string, unknown>,
  provider: Provider,
): Refusal | undefined {
  const direction = DIRECTIONS[`${adapter.name}>${provider}`];
  if (direction === undefined) {
    return { field: `sb.${adapter.name}`, why: `no translation to the ${provider} API` };
  }
  if (!direction.ops.has(op))
    return { field: op, why: `sb.${adapter.name}.${op}() is not translated` };
  const out = direction.request(body, String(body['model']), 1);
  return 'refused' in out ? out.refused : undefined;
}

/** What an attempt on the other vendor's deployment sends, and who hears its outcome. */
interface Crossing {
  readonly adapter: ApiAdapter;
  readonly op: ApiOperation;
  readonly request: PreparedRequest;
  readonly outcome: AttemptOutcome;
}

/**
 * One attempt of a call of `caller.adapter` on `target`, a deployment of the other vendor: the
 * request translated into the target's API, admitted and priced by the target's adapter (its
 * estimate, its cap), and an outcome that translates the answer, stream or error back into the
 * caller's SDK types before `outcome` hears of it. `undefined` when the call cannot be translated
 * (see {@link refusalFor}: the router skips such fallbacks before they are routed to).
 *
 * @example
 * ```ts
 * const crossing = crossVendor({ adapter, opName: 'create', request, deployment: own }, { deployment: claude, model: 'claude-sonnet-5', maxTokens: 8192, clock }, outcome);
 * if (crossing) runAttempt({ ...crossing, options, context }, claude, state, hooks, crossing.outcome);
 * ```
 */
export function crossVendor(
  caller: {
    adapter: ApiAdapter;
    opName: string;
    op: ApiOperation;
    request: PreparedRequest;
    deployment: Deployment;
  },
  target: { deployment: Deployment; model: string; maxTokens: number; clock: () => number },
  outcome: AttemptOutcome,
): Crossing | undefined {
  const direction = DIRECTIONS[`${caller.adapter.name}>${target.deployment.provider}`];
  if (direction === undefined || !direction.ops.has(caller.opName)) return undefined;
  const callerBody = caller.request.body;
  const translated = direction.request(callerBody, target.model, target.maxTokens);
  if ('refused' in translated) return undefined;
  const adapter = direction.target;
  const stream = caller.request.stream;
  let body = translated.body as Record<string, unknown>;
  // The target's stream must report its usage: the translation reads it, and its charge settles by it.
  if (stream && adapter.prepareStream) body = adapter.prepareStream(body).body;
  const request: PreparedRequest = {
    body,
    stream,
    admission: adapter.admission(body, 0),
    metered: true,
    hideUsageEvents: false,
    ...(caller.request.account ? { account: caller.request.account } : {}),
  };
  const own = caller.deployment;
  const from = target.deployment.errors;
  const toCaller = (error: unknown) => callerError(error, from, own.errors, own.provider);
  const created = Math.floor(target.clock() / 1000);
  // Usage the switchboard asked for, not the caller, stays out of the caller's stream.
  const streamBody = caller.request.hideUsageEvents
    ? { ...callerBody, stream_options: undefined }
    : callerBody;
  return {
    adapter,
    op: adapter.operations['create']!,
    request,
    outcome: {
      reject: (error: Error) => outcome.reject(toCaller(error) as Error),
      resolve: (answer: Answer) => {
        let data: unknown;
        try {
          data = stream
            ? own.makeStream(
                () =>
                  caught(
                    direction.stream(
                      answer.data as AsyncIterable<unknown>,
                      target.model,
                      created,
                      streamBody,
                    ),
                    toCaller,
                  ),
                (answer.data as { controller: AbortController }).controller,
              )
            : parsed(caller, direction.answer(answer.data, target.model, created, callerBody), own);
        } catch (error) {
          outcome.reject(toCaller(error) as Error);
          return;
        }
        outcome.resolve(new Answered(data, answer.response));
      },
    },
  };
}

/** What the caller's operation makes of the answer (`parse()` parses it, as the SDK's does). */
function parsed(
  caller: { adapter: ApiAdapter; opName: string; op: ApiOperation; request: PreparedRequest },
  data: unknown,
  own: Deployment,
): unknown {
  if (caller.op.data) return caller.op.data(data, caller.request.body, own.client);
  if (caller.adapter.name === 'chat.completions' && caller.opName === 'parse') {
    return parseChatCompletion(data as ChatCompletion, caller.request.body as never);
  }
  return data;
}

/** The events of `source`, its errors in the caller's classes. */
async function* caught(
  source: AsyncIterable<unknown>,
  toCaller: (error: unknown) => unknown,
): AsyncGenerator<unknown> {
  try {
    yield* source;
  } catch (error) {
    throw toCaller(error);
  }
}
