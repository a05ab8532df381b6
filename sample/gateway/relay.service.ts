import type { ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import Anthropic from '@anthropic-ai/sdk';
import type { Counter } from '@opentelemetry/api';
import { clip, Switchboard, SwitchboardError } from 'nestjs-switchboard';
import { MetricService } from 'nestjs-otel';
import OpenAI from 'openai';
import { gatewayFailure } from './provider-error.filter';
import { openaiWire, responsesWire, WIRES, type Problem, type Wire } from './wire';

/** One entry of `GET /v1/models`, as OpenAI lists models. */
export interface ModelObject {
  id: string;
  object: 'model';
  /** Seconds since the epoch: when the gateway started. */
  created: number;
  owned_by: string;
}

/**
 * Sends one gateway request through the {@link Switchboard} and writes the answer: JSON, or SSE
 * for `stream: true`; errors in the provider's own shape and status.
 */
@Injectable()
export class RelayService {
  private readonly answered: Counter;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    private readonly sb: Switchboard,
    metrics: MetricService,
  ) {
    this.answered = metrics.getCounter('gateway_requests', {
      description: 'Requests the gateway answered, by API and HTTP status',
    });
  }

  async relay(
    wire: Wire,
    body: unknown,
    sessionId: string | undefined,
    res: ServerResponse,
  ): Promise<void> {
    res.once('finish', () =>
      this.answered.add(1, { api: wire.provider, status: String(res.statusCode) }),
    );
    const invalid = wire.validate(body) ?? this.checkModel(wire, (body as { model: string }).model);
    if (invalid) return sendJson(res, invalid.status, wire.errorBody(invalid));

    const params = { ...(body as Record<string, unknown>) };
    if (sessionId !== undefined && sessionId !== '') params.session_id = sessionId;
    // The client went away: stop the upstream call too.
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const options = { signal: abort.signal };

    let result: unknown;
    try {
      result = await this.call(wire, params, options);
    } catch (error) {
      if (abort.signal.aborted) return;
      const failure = gatewayFailure(wire, error);
      return sendJson(res, failure.problem.status, failure.body, failure.headers);
    }
    if (params.stream === true) {
      return this.pipe(wire, result as AsyncIterable<unknown>, res);
    }
    sendJson(res, 200, result as object);
  }

  /** A stored response (`GET /v1/responses/:id`), from the deployment that created it. */
  async retrieveResponse(id: string, res: ServerResponse): Promise<void> {
    res.once('finish', () =>
      this.answered.add(1, { api: responsesWire.provider, status: String(res.statusCode) }),
    );
    try {
      sendJson(res, 200, await this.sb.responses.retrieve(id));
    } catch (error) {
      // The switchboard refuses an id no deployment is known to hold rather than ask one that
      // would answer 404: to the client that is the same missing response.
      if (error instanceof SwitchboardError && error.code !== 'unavailable') {
        const problem: Problem = { status: 404, message: error.message, param: 'response_id' };
        return sendJson(res, 404, responsesWire.errorBody(problem));
      }
      const failure = gatewayFailure(responsesWire, error);
      sendJson(res, failure.problem.status, failure.body, failure.headers);
    }
  }

  /**
   * The models the switchboard serves, in the OpenAI list shape (`GET /v1/models`, what
   * OpenAI-compatible tools query first); `owned_by` names the API family.
   */
  models(): { object: 'list'; data: ModelObject[] } {
    return {
      object: 'list',
      data: [...this.sb.registry.models].map(([id, provider]) => this.modelObject(id, provider)),
    };
  }

  /** One model (`GET /v1/models/:id`), or a 404 in the OpenAI shape. */
  model(id: string, res: ServerResponse): void {
    const provider = this.sb.registry.models.get(id);
    if (provider === undefined) {
      const problem = this.unknownModel(id);
      return sendJson(res, problem.status, openaiWire.errorBody(problem));
    }
    sendJson(res, 200, this.modelObject(id, provider));
  }

  private modelObject(id: string, provider: string): ModelObject {
    return { id, object: 'model', created: this.created, owned_by: provider };
  }

  private call(
    wire: Wire,
    params: Record<string, unknown>,
    options: { signal: AbortSignal },
  ): Promise<unknown> {
    switch (wire.api) {
      case 'chat':
        return this.sb.chat.completions.create(
          params as unknown as OpenAI.ChatCompletionCreateParams,
          options,
        );
      case 'responses':
        return this.sb.responses.create(
          params as unknown as OpenAI.Responses.ResponseCreateParams,
          options,
        );
      case 'embeddings':
        return this.sb.embeddings.create(
          params as unknown as OpenAI.EmbeddingCreateParams,
          options,
        );
      case 'messages':
        return this.sb.messages.create(params as unknown as Anthropic.MessageCreateParams, options);
      case 'countTokens':
        return this.sb.messages.countTokens(
          params as unknown as Anthropic.MessageCountTokensParams,
          options,
        );
    }
  }

  /** Unknown models and models of the other API are the client's mistake: say so at once. */
  private checkModel(wire: Wire, model: string): Problem | undefined {
    const provider = this.sb.registry.models.get(model);
    if (provider === undefined) return this.unknownModel(model);
    if (provider !== wire.provider) {
      const path = WIRES.filter((w) => w.provider === provider)
        .map((w) => w.path)
        .join(', ');
      return {
        status: 400,
        message: `The model '${model}' is served through ${path} on this gateway.`,
        param: 'model',
        code: 'model_not_supported',
      };
    }
    return undefined;
  }

  private unknownModel(model: string): Problem {
    const known = [...this.sb.registry.models.keys()].join(', ');
    return {
      status: 404,
      message: `The model '${clip(model)}' does not exist on this gateway (models: ${known}).`,
      param: 'model',
      code: 'model_not_found',
    };
  }

  /** Writes stream events as SSE; an error after the first event becomes an error event. */
  private async pipe(
    wire: Wire,
    stream: AsyncIterable<unknown>,
    res: ServerResponse,
  ): Promise<void> {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    try {
      const frame = wire.frame ?? ((event: unknown) => `data: ${JSON.stringify(event)}\n\n`);
      for await (const event of stream) {
        if (!(await write(res, frame(event)))) return;
      }
      if (wire.end !== undefined) await write(res, wire.end);
    } catch (error) {
      if (res.destroyed) return;
      const failure = gatewayFailure(wire, error);
      await write(res, wire.errorFrame(failure.problem));
    }
    res.end();
  }
}

/** Writes a complete JSON answer. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: object,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}

/** Writes one chunk, waiting for the socket to drain; false once the client is gone. */
function write(res: ServerResponse, chunk: string): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}
