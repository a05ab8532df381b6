import type { Answer } from '../registry/deployment';
import { keepShape } from '../runtime/kept-shapes';

const NO_OPTIONS: Record<string, never> = Object.freeze({}) as Record<string, never>;

/** Headers that describe the wire body, not the JSON a replayed body carries. */
const BODY_HEADERS = ['content-length', 'content-encoding', 'transfer-encoding'];

/**
 * The answer of the attempt that succeeded. The switchboard reads every JSON body for its
 * accounting, so `response` (what `asResponse()` and `withResponse()` give) is then a copy with
 * the upstream's status and headers and the parsed JSON as its body, built only when asked for.
 * A stream's response is the upstream's own: its body is read as the stream is.
 */
export class Answered implements Answer {
  readonly options = NO_OPTIONS;
  private replayed: Response | undefined;

  constructor(
    readonly data: unknown,
    private readonly raw: Response,
  ) {}

  get response(): Response {
    if (!this.raw.bodyUsed) return this.raw;
    if (this.replayed === undefined) {
      const headers = new Headers(this.raw.headers);
      for (const name of BODY_HEADERS) headers.delete(name);
      this.replayed = new Response(JSON.stringify(this.data), {
        status: this.raw.status,
        statusText: this.raw.statusText,
        headers,
      });
    }
    return this.replayed;
  }
}

// Made at load: every field of an answer takes its final kind of value from the constructor on.
keepShape(() => new Answered(null, new Response(null)));
