/**
 * OpenAI / Azure OpenAI Chat Completions wire format of the simulated deployments:
 * request validation, `ChatCompletion` bodies and `chat.completion.chunk` SSE frames.
 */
import { imageTokens, toolChars } from '../prompt-media';
import { sampleJsonSchema } from './json-schema-sample';
import {
  contentText,
  dataFrame,
  echoText,
  isRecord,
  readModelBody,
  typeProblem,
  readMaxTokens,
  splitDeltas,
  type CompletionPlan,
  type PlanResult,
} from './common';
import { refuseChatBody } from './strict-chat';
import { argumentDeltas, chatToolCalls, sizeAnswer } from './tool-calls';

const SYSTEM_FINGERPRINT = 'fp_simulated';

/**
 * Reads a `POST chat/completions` body into a completion plan, or the reason for a 400.
 * The answer echoes the text of the last `user` message; with `response_format` `json_schema`
 * it is a JSON sample of the schema, with `json_object` it is `{"echo": <text>}`.
 */
export function readChatRequest(raw: unknown, fixedCompletionTokens?: number): PlanResult {
  const read = readModelBody(raw, 'you must provide a model parameter');
  if (!read.ok) return read;
  const { body, model } = read;
  const messages = body['messages'];
  if (!Array.isArray(messages)) {
    return {
      ok: false,
      message: "Missing required parameter: 'messages'.",
      param: 'messages',
      code: 'missing_required_parameter',
    };
  }
  if (messages.length === 0) {
    return {
      ok: false,
      message:
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an " +
        'empty array instead.',
      param: 'messages',
      code: 'empty_array',
    };
  }
  let prompt = '';
  let lastUser: unknown = undefined;
  for (const [i, message] of messages.entries()) {
    if (!isRecord(message) || typeof message['role'] !== 'string') {
      return {
        ok: false,
        message: `Missing required parameter: 'messages[${i}].role'.`,
        param: `messages[${i}].role`,
        code: 'missing_required_parameter',
      };
    }
    prompt += contentText(message['content']);
    if (message['role'] === 'user') lastUser = message['content'];
  }
  const stream = body['stream'];
  const streamProblem = typeProblem('stream', stream, 'boolean');
  if (streamProblem !== undefined) return streamProblem;
  const refused = refuseChatBody(body);
  if (refused !== undefined) return { ok: false, ...refused };
  const maxTokens = readMaxTokens(
    body,
    body['max_completion_tokens'] !== undefined ? 'max_completion_tokens' : 'max_tokens',
  );
  if ('error' in maxTokens) return { ok: false, message: maxTokens.error, param: 'max_tokens' };
  const streamOptions = body['stream_options'];
  const includeUsage =
    stream === true && isRecord(streamOptions) && streamOptions['include_usage'] === true;

  const toolCalls = chatToolCalls(body);
  const answer = toolCalls ? '' : chatAnswer(body['response_format'], echoText(lastUser));
  const sized = sizeAnswer(toolCalls, answer, maxTokens.value, fixedCompletionTokens);
  const plan: CompletionPlan = {
    api: 'chat',
    model,
    stream: stream === true,
    includeUsage,
    text: sized.text,
    promptTokens:
      Math.max(1, Math.ceil((prompt.length + toolChars(body)) / 4)) + imageTokens(messages, model),
    completionTokens: sized.completionTokens,
    truncated: sized.truncated,
    maxTokens: maxTokens.value,
    prompt,
    ...(toolCalls ? { toolCalls } : {}),
  };
  return { ok: true, plan };
}

function chatAnswer(responseFormat: unknown, echo: string): string {
  if (!isRecord(responseFormat)) return echo;
  if (responseFormat['type'] === 'json_schema') {
    const spec = responseFormat['json_schema'];
    const schema = isRecord(spec) ? spec['schema'] : undefined;
    return JSON.stringify(schema === undefined ? {} : sampleJsonSchema(schema));
  }
  if (responseFormat['type'] === 'json_object') return JSON.stringify({ echo });
  return echo;
}

function usageOf(plan: CompletionPlan): Record<string, unknown> {
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens,
    prompt_tokens_details: { cached_tokens: plan.cacheReadTokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** The `ChatCompletion` body of a non-streaming answer. */
export function chatCompletionBody(
  plan: CompletionPlan,
  id: string,
  created: number,
): Record<string, unknown> {
  return {
    id,
    object: 'chat.completion',
    created,
    model: plan.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: plan.toolCalls ? null : plan.text,
          refusal: null,
          annotations: [],
          ...(plan.toolCalls ? { tool_calls: toolCallsOf(plan, id) } : {}),
        },
        logprobs: null,
        finish_reason: finishOf(plan),
      },
    ],
    usage: usageOf(plan),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

const finishOf = (plan: CompletionPlan): string =>
  plan.toolCalls ? 'tool_calls' : plan.truncated ? 'length' : 'stop';

/** A tool call's id: the answer's, numbered (`call_<answer>_<i>`). */
const callId = (id: string, i: number): string => `call_${id.replace(/^chatcmpl-/, '')}_${i}`;

function toolCallsOf(plan: CompletionPlan, id: string): Record<string, unknown>[] {
  return plan.toolCalls!.map((c, i) => ({
    id: callId(id, i),
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));
}

const frame = dataFrame;

/**
 * The SSE frames of a streaming answer, as the real API sends them: a chunk with the assistant
 * role, one chunk per content delta, a chunk with `finish_reason`, then (only with
 * `stream_options.include_usage`) a chunk with `choices: []` and `usage`, then `data: [DONE]`.
 */
export function chatCompletionFrames(plan: CompletionPlan, id: string, created: number): string[] {
  const base = {
    id,
    object: 'chat.completion.chunk',
    created,
    model: plan.model,
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  const usageNull = plan.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
    frame({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...usageNull,
    });
  const frames = [
    chunk({ role: 'assistant', content: plan.toolCalls ? null : '', refusal: null }, null),
  ];
  for (const piece of splitDeltas(plan.text)) frames.push(chunk({ content: piece }, null));
  // Each call opens with its id and name, then its arguments arrive in pieces.
  for (const [i, call] of (plan.toolCalls ?? []).entries()) {
    const open = {
      id: callId(id, i),
      type: 'function',
      function: { name: call.name, arguments: '' },
    };
    frames.push(chunk({ tool_calls: [{ index: i, ...open }] }, null));
    for (const piece of argumentDeltas(call.arguments)) {
      frames.push(chunk({ tool_calls: [{ index: i, function: { arguments: piece } }] }, null));
    }
  }
  frames.push(chunk({}, finishOf(plan)));
  if (plan.includeUsage) frames.push(frame({ ...base, choices: [], usage: usageOf(plan) }));
  frames.push('data: [DONE]\n\n');
  return frames;
}

/** A `data:` line whose JSON is cut short, for the `malformed` fault. */
export function malformedChatFrame(id: string): string {
  return `data: {"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{\n\n`;
}
