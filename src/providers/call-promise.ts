import type { Answer } from '../registry/deployment';
import { keepShape } from '../runtime/kept-shapes';

/** A promise that never settles: the answer of the promise kept for its shape. */
const NEVER: Promise<Answer> = new Promise<Answer>(() => {});

/**
 * Builds what a switchboard call returns for one SDK: a promise that is an instance of that SDK's
 * `APIPromise` and offers what it offers (`await` gives the data, `asResponse()`, `withResponse()`
 * with the SDK's request-id fields, `parse()`, `_thenUnwrap()`), over the answer of the attempt
 * that succeeded.
 *
 * Why not `new APIPromise(...)`: its constructor keeps its private client in a module-wide
 * `WeakMap`, one entry per live promise, and a call already makes one for the SDK's own request.
 * Making a second one on every call measured 1-2 µs of the call's synchronous part, and up to 7 µs
 * in a loop of 1 000 calls, as that table grew. This class is a `Promise` whose prototype chain
 * goes through the SDK's `APIPromise.prototype` (so `instanceof APIPromise` holds); every method
 * the SDK documents is its own, and the fields the SDK's other methods read (`responsePromise`,
 * `parseResponse`) hold the answer, as a real `APIPromise` made over it would.
 *
 * @example
 * ```ts
 * const promiseOf = callPromises(APIPromise, { request_id: 'x-request-id' });
 * const completion = await promiseOf(answer); // the answer's data
 * ```
 */
export function callPromises(
  apiPromise: { readonly prototype: object },
  idHeaders: Readonly<Record<string, string>>,
): CallPromises {
  const ids = Object.entries(idHeaders);

  class CallPromise extends Promise<unknown> {
    // What `then` (the plain one) derives from a call's promise is a plain promise.
    static override get [Symbol.species](): PromiseConstructor {
      return Promise;
    }

    // A call's promise is made for every call: three fields, the SDK's `parseResponse` on the
    // prototype (see below), and the two kinds told apart by what their data holds.
    /**
     * Opened: the call that settles it with the answer's data, and keeps the answer. Over
     * another promise: that promise, of the answer.
     */
    private readonly source: SettledCall | Promise<Answer>;
    declare readonly parseResponse: (client: unknown, answer: Answer) => unknown;
    private parsedPromise: Promise<unknown> | undefined;
    /**
     * Over another promise: the answer's data, once read ({@link UNREAD} until then). Opened:
     * {@link OPENED}, which tells the two kinds apart (the call keeps the answer).
     */
    private data: unknown;

    constructor(answer: Promise<Answer> | undefined) {
      // Over another promise, as the SDK's: settled at once with nothing, for `then` and the
      // rest read the answer. Opened: settled with the answer's data by the call `opening`
      // names, so that an `await` of it is a plain `then` (no closure over the caller's).
      super(answer === undefined ? openCall : settleWithNull);
      this.source = answer ?? opening!;
      this.parsedPromise = undefined;
      this.data = answer === undefined ? OPENED : UNREAD;
    }

    /** Opened (settled by its call), rather than made over another promise. */
    private get call(): SettledCall | undefined {
      return this.data === OPENED ? (this.source as SettledCall) : undefined;
    }

    /** The promise of the answer (as the SDK's field of that name). */
    get responsePromise(): Promise<Answer> {
      return this.data === OPENED ? this.onAnswer(sameAnswer) : (this.source as Promise<Answer>);
    }

    /** `then` on the answer itself, not on its data. */
    private onAnswer<A, B>(
      onfulfilled: (answer: Answer) => A | PromiseLike<A>,
      onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
    ): Promise<A | B> {
      const call = this.call;
      if (call === undefined) {
        return answerThen(this.source as Promise<Answer>, onfulfilled, onrejected);
      }
      // Settled with the data: the answer is the call's, kept once it settled.
      return plainThen.call(this, () => onfulfilled(call.answer!), onrejected) as Promise<A | B>;
    }

    /** The data of the answer. */
    parse(): Promise<unknown> {
      return (this.parsedPromise ??=
        this.call === undefined
          ? this.onAnswer((answer) => this.dataOf(answer))
          : (plainThen.call(this, sameValue) as Promise<unknown>));
    }

    /** `answer.data`, read once however many ways the caller asks for it. */
    private dataOf(answer: Answer): unknown {
      if (this.data === UNREAD) this.data = answer.data;
      return this.data;
    }

    override then<A = unknown, B = never>(
      onfulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
      onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
    ): Promise<A | B> {
      // Opened, it holds the data itself: `then` is the plain one.
      if (this.call !== undefined) {
        return plainThen.call(this, onfulfilled, onrejected) as Promise<A | B>;
      }
      // Straight off the answer: an `await` of the call then makes one promise, not two.
      return this.onAnswer(
        typeof onfulfilled === 'function'
          ? (answer) => onfulfilled(this.dataOf(answer))
          : (answer) => this.dataOf(answer) as A,
        onrejected,
      );
    }

    override catch<B = never>(
      onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
    ): Promise<unknown> {
      return this.parse().catch(onrejected);
    }

    override finally(onfinally?: (() => void) | null): Promise<unknown> {
      return this.parse().finally(onfinally);
    }

    /** The raw `Response` (for JSON answers a copy with the parsed body, see `Answer`). */
    asResponse(): Promise<Response> {
      return this.onAnswer(responseOf);
    }

    /** `{ data, response, request_id, ... }`, as the SDK's `withResponse()` gives them. */
    async withResponse(): Promise<Record<string, unknown>> {
      const [data, response] = await Promise.all([this.parse(), this.asResponse()]);
      const out: Record<string, unknown> = { data, response };
      for (const [field, header] of ids) out[field] = response.headers.get(header);
      return out;
    }

    /** A promise of `transform(data, answer)`, as the SDK's helpers make with it. */
    _thenUnwrap(transform: (data: unknown, answer: Answer) => unknown): CallPromise {
      return new CallPromise(
        this.onAnswer((answer) => ({
          data: transform(answer.data, answer),
          get response() {
            return answer.response;
          },
          options: answer.options,
        })),
      );
    }
  }
  Object.setPrototypeOf(CallPromise.prototype, apiPromise.prototype);
  // What the SDK's own methods call to read an answer's data: the same for every call's promise.
  Object.defineProperty(CallPromise.prototype, 'parseResponse', { value: dataOf, writable: true });
  // Made at load: a call's promise takes no other kind of value in its fields later.
  keepShape(() => new CallPromise(NEVER));
  return {
    over: (answer) => (answer instanceof CallPromise ? answer : new CallPromise(answer)),
    open(call) {
      opening = call;
      try {
        // Its resolution is the answer; its `then` gives the data (see `CallPromises.open`).
        return new CallPromise(undefined) as Promise<unknown> as Promise<Answer>;
      } finally {
        opening = undefined;
      }
    },
  };
}

/**
 * The two ways of making a call's promise for one SDK.
 *
 * @example
 * ```ts
 * const promises = callPromises(APIPromise, { request_id: 'x-request-id' });
 * const p = promises.open(dispatch); // settled by the dispatch, handed to the caller as is
 * ```
 */
export interface CallPromises {
  /** The SDK's `APIPromise` over `answer` (`answer` itself when it already is one of these). */
  over(answer: Promise<Answer>): Promise<unknown>;
  /**
   * A promise of the SDK's `APIPromise` kind that `call` settles with its answer: one promise for
   * the call instead of two (its own and one over it). Typed as the answer's promise, which it
   * is, but its `then` gives the answer's data: only the caller may hold it.
   */
  open(call: SettledCall): Promise<Answer>;
}

/**
 * What settles an opened call's promise: told its resolving functions once, at once, it resolves
 * it with the answer's `data` (read once) and keeps the `answer`, for `asResponse()` and the rest.
 *
 * @example
 * ```ts
 * const call: SettledCall = {
 *   answer: undefined,
 *   settlesWith(resolve, reject) { dispatch.bind((a) => resolve((this.answer = a).data), reject); },
 * };
 * ```
 */
export interface SettledCall {
  /** The answer, once the promise was resolved with its data. */
  readonly answer: Answer | undefined;
  settlesWith(resolveData: (data: unknown) => void, reject: (error: unknown) => void): void;
}

/** The call whose promise is being opened: an executor runs at once, so one serves every call. */
let opening: SettledCall | undefined;

function openCall(resolveData: (data: unknown) => void, reject: (error: unknown) => void): void {
  opening!.settlesWith(resolveData, reject);
}

const plainThen = Promise.prototype.then;

/** What a promise made over another holds as its data until the answer's was read. */
const UNREAD: unknown = Symbol('unread');
/** What an opened promise (settled by its call) holds as its data: it reads the call's answer. */
const OPENED: unknown = Symbol('opened');

/** `Promise.prototype.then` on `answer`, whatever its class says `then` is. */
function answerThen<A, B>(
  answer: Promise<Answer>,
  onfulfilled: (answer: Answer) => A | PromiseLike<A>,
  onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
): Promise<A | B> {
  return plainThen.call(answer, onfulfilled, onrejected) as Promise<A | B>;
}

function sameAnswer(answer: Answer): Answer {
  return answer;
}

function sameValue(value: unknown): unknown {
  return value;
}

function settleWithNull(resolve: (value: null) => void): void {
  resolve(null);
}
const dataOf = (_client: unknown, answer: Answer): unknown => answer.data;
const responseOf = (answer: Answer): Response => answer.response;
