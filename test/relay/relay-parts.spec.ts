/**
 * The relay's parts on their own: SSE events read across chunk boundaries with their bytes kept,
 * and request paths.
 */
import { routeOf } from '../../src/relay/relay-apis';
import { bytesOf, SseEvents } from '../../src/relay/sse-events';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function sse(chunks: string[]): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}

describe('SseEvents', () => {
  it('parses events split anywhere, keeping each one’s bytes as they came', async () => {
    const wire =
      'event: message_start\ndata: {"type":"message_start","n":1}\n\n' +
      'data: {"a":\r\ndata: 2}\r\n\r\n' +
      ': keep-alive\n\n' +
      'data: [DONE]\n\n';
    for (const size of [1, 3, 7, wire.length]) {
      const chunks: string[] = [];
      for (let i = 0; i < wire.length; i += size) chunks.push(wire.slice(i, i + size));
      const events: unknown[] = [];
      let bytes = '';
      for await (const event of new SseEvents(sse(chunks))) {
        events.push(event);
        bytes += decoder.decode(bytesOf(event));
      }
      expect(events).toEqual([{ type: 'message_start', n: 1 }, { a: 2 }, {}, {}]);
      expect(bytes).toBe(wire);
    }
  });

  it('cancels the upstream body when aborted', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('data: {"x":1}\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const events = new SseEvents(new Response(body));
    for await (const _ of events) break;
    expect(cancelled).toBe(true);
  });
});

describe('routeOf', () => {
  it('names the API by the end of the path, whatever comes before', () => {
    expect(routeOf('/openai/v1/chat/completions')).toMatchObject({ kind: 'api' });
    expect(routeOf('/v1/messages/count_tokens')).toMatchObject({
      kind: 'api',
      api: { path: '/v1/messages/count_tokens' },
    });
    expect(routeOf('/v1/responses/resp_1')).toEqual({ kind: 'retrieve', id: 'resp_1' });
    expect(routeOf('/v1/models/gpt%2F4')).toEqual({ kind: 'models', id: 'gpt/4' });
    expect(routeOf('/v1/files')).toBeUndefined();
    expect(routeOf('/v1/responses/%E0%A4%A')).toBeUndefined();
  });
});
