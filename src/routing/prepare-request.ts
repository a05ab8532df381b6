import type { ApiAdapter, ApiOperation } from '../providers/adapter';
import type { PreparedRequest, ResponseTracker } from '../providers/attempt-types';
import type { Admission } from '../quota/admission';

/** What calls that use no quota (retrievals, token counts) are charged. */
const UNMETERED: Admission = Object.freeze({ input: 0, output: 0 });

/**
 * A call's body made ready for its surface, with what it is charged at admission (`defaultOutput`
 * reserved when the body caps no output) and, for APIs whose answers create stored objects, who
 * remembers where they live. With `prep.usage` (a tenant with limits), a stream is asked for
 * its usage even when the caller said not to (the usage event is hidden from it). `account` is the
 * call's tenant and cost account, when it has one: made part of the request from the start, so
 * every call's request has one shape.
 *
 * @example
 * ```ts
 * const request = prepareRequest(chatCompletions, op, body, { defaultOutput: 0, tracker: undefined });
 * request.admission; // { input: 12, output: 0 }
 * ```
 */
export function prepareRequest(
  adapter: ApiAdapter,
  op: ApiOperation,
  body: Record<string, unknown>,
  prep: {
    /** Output reserved when the body caps none (`defaultReservation`). */
    defaultOutput: number;
    /** Who remembers where a stored object the answer creates lives. */
    tracker: ResponseTracker | undefined;
    /** Ask a stream for its usage whatever the caller said (a tenant with limits). */
    usage?: boolean;
  },
  account?: PreparedRequest['account'],
): PreparedRequest {
  const { defaultOutput, tracker } = prep;
  const stream = op.streams ? op.streams(body) : body.stream === true;
  const metered = op.metered !== false;
  const admission = metered ? adapter.admission(body, defaultOutput) : UNMETERED;
  const track = adapter.chain ? tracker : undefined;
  if (stream && adapter.prepareStream) {
    const prepared = adapter.prepareStream(body, prep.usage);
    return {
      body: prepared.body,
      stream,
      admission,
      metered,
      hideUsageEvents: prepared.hideUsageEvents,
      track,
      account,
    };
  }
  return { body, stream, admission, metered, hideUsageEvents: false, track, account };
}
