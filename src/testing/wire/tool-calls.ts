/**
 * Tool calls of the simulated deployments: which function tools an answer calls, read from the
 * request the way the APIs document `tools` and `tool_choice` (OpenAI Chat Completions and
 * Anthropic Messages), with arguments sampled from each tool's JSON schema.
 *
 * The simulated model decides deterministically:
 * - no tools, or `tool_choice` `none`: no call;
 * - a named tool (`{ type: 'function', function: { name } }`, `{ type: 'tool', name }`): that one;
 * - `required` / `{ type: 'any' }`: every offered tool, in parallel;
 * - `auto` (or absent): every tool whose name the last user message mentions, unless the last
 *   message is a tool result (then the model answers in text);
 * - `parallel_tool_calls: false` / `disable_parallel_tool_use: true`: the first call only.
 */
import { contentText, isRecord, sizeCompletion, type SimulatedToolCall } from './common';
import { sampleJsonSchema } from './json-schema-sample';

interface OfferedTool {
  name: string;
  schema: unknown;
}

/** The tool calls a Chat Completions request gets, if any. */
export function chatToolCalls(body: Record<string, unknown>): SimulatedToolCall[] | undefined {
  const tools = offered(body['tools'], (t) =>
    t['type'] === 'function' && isRecord(t['function']) ? t['function'] : undefined,
  );
  if (tools.length === 0) return undefined;
  const choice = body['tool_choice'];
  const named =
    isRecord(choice) && isRecord(choice['function']) ? choice['function']['name'] : undefined;
  const mode = typeof choice === 'string' ? choice : named !== undefined ? 'named' : 'auto';
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  const last: unknown = messages[messages.length - 1];
  const afterResult = isRecord(last) && last['role'] === 'tool';
  return decide(tools, {
    mode,
    named,
    afterResult,
    userText: lastUserText(messages),
    single: body['parallel_tool_calls'] === false,
  });
}

/** The tool calls a Messages request gets, if any. */
export function messagesToolCalls(body: Record<string, unknown>): SimulatedToolCall[] | undefined {
  const tools = offered(body['tools'], (t) =>
    t['type'] === undefined || t['type'] === null || t['type'] === 'custom'
      ? { name: t['name'], parameters: t['input_schema'] }
      : undefined,
  );
  if (tools.length === 0) return undefined;
  const choice = isRecord(body['tool_choice']) ? body['tool_choice'] : {};
  const type = typeof choice['type'] === 'string' ? choice['type'] : 'auto';
  const mode = type === 'any' ? 'required' : type === 'tool' ? 'named' : type;
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  const last: unknown = messages[messages.length - 1];
  const afterResult =
    isRecord(last) &&
    Array.isArray(last['content']) &&
    last['content'].some((b) => isRecord(b) && b['type'] === 'tool_result');
  return decide(tools, {
    mode,
    named: choice['name'],
    afterResult,
    userText: lastUserText(messages),
    single: choice['disable_parallel_tool_use'] === true,
  });
}

function decide(
  tools: OfferedTool[],
  how: { mode: string; named: unknown; afterResult: boolean; userText: string; single: boolean },
): SimulatedToolCall[] | undefined {
  let chosen: OfferedTool[];
  if (how.mode === 'none') return undefined;
  if (how.mode === 'named') chosen = tools.filter((t) => t.name === how.named);
  else if (how.mode === 'required') chosen = tools;
  else if (how.afterResult) return undefined;
  else chosen = tools.filter((t) => how.userText.includes(t.name));
  if (chosen.length === 0) return undefined;
  if (how.single) chosen = chosen.slice(0, 1);
  return chosen.map((t) => ({ name: t.name, arguments: JSON.stringify(sampleOf(t.schema)) }));
}

function sampleOf(schema: unknown): unknown {
  return isRecord(schema) ? sampleJsonSchema(schema) : {};
}

function offered(
  tools: unknown,
  functionOf: (tool: Record<string, unknown>) => Record<string, unknown> | undefined,
): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  const out: OfferedTool[] = [];
  for (const tool of tools) {
    const fn = isRecord(tool) ? functionOf(tool) : undefined;
    if (fn !== undefined && typeof fn['name'] === 'string') {
      out.push({ name: fn['name'], schema: fn['parameters'] });
    }
  }
  return out;
}

function lastUserText(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m: unknown = messages[i];
    if (isRecord(m) && m['role'] === 'user') return contentText(m['content']);
  }
  return '';
}

/**
 * Splits a tool call's arguments into the pieces a stream sends them in (a few characters each,
 * so a call's JSON arrives over several events, as the APIs' do).
 */
export function argumentDeltas(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += 8) pieces.push(text.slice(i, i + 8));
  return pieces.length > 0 ? pieces : [''];
}

/** Tokens the calls' arguments come to, by the simulator's estimate (names included). */
export function toolCallTokens(calls: readonly SimulatedToolCall[]): number {
  let chars = 0;
  for (const c of calls) chars += c.name.length + c.arguments.length;
  return Math.max(1, Math.ceil(chars / 4));
}

/**
 * The size of an answer: tool calls (no text; their arguments' tokens) when the model calls any,
 * else `answer` cut at `maxTokens` (see `sizeCompletion`); `fixedCompletionTokens` stands for
 * either, as the deployment's `completionTokens`.
 *
 * @example
 * ```ts
 * sizeAnswer(undefined, 'Hello there.', 100, undefined); // { text: 'Hello there.', completionTokens: 3, truncated: false }
 * ```
 */
export function sizeAnswer(
  toolCalls: readonly SimulatedToolCall[] | undefined,
  answer: string,
  maxTokens: number | undefined,
  fixedCompletionTokens: number | undefined,
): { text: string; completionTokens: number; truncated: boolean } {
  if (toolCalls === undefined) return sizeCompletion(answer, maxTokens, fixedCompletionTokens);
  const completionTokens = fixedCompletionTokens ?? toolCallTokens(toolCalls);
  return { text: '', completionTokens, truncated: false };
}
