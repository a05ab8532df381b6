import type { OpenAI } from 'openai';
import type { APIPromise } from 'openai/core/api-promise';
import type { CreateEmbeddingResponse, EmbeddingCreateParams } from 'openai/resources/embeddings';
import type { SessionParams } from '../../types';
import { defineAdapter, type Surface } from '../adapter';
import { admissionRecord } from '../admission-record';
import { inputLength } from '../text-length';
import type { OpenAIRequestOptions } from './openai-deployment';

/** `sb.embeddings`: the `openai` client's `embeddings`, balanced. */
export interface SwitchboardEmbeddings {
  /** The SDK's own call: vectors come back as numbers, base64 decoded as the SDK does. */
  create(
    body: EmbeddingCreateParams & SessionParams,
    options?: OpenAIRequestOptions,
  ): APIPromise<CreateEmbeddingResponse>;
}

/**
 * Embeddings (`POST /embeddings`) on OpenAI and Azure OpenAI deployments. A batch counts as the
 * tokens of all its inputs.
 *
 * @example
 * ```ts
 * const { data } = await sb.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
 * ```
 */
export const embeddings = defineAdapter<SwitchboardEmbeddings, OpenAI>()({
  name: 'embeddings',
  path: ['embeddings'],
  provider: 'openai',
  operations: {
    create: {
      streams: () => false,
      send: (client, body, options) => client.embeddings.create(body as never, options as never),
    },
  },
  admission: (body) => admissionRecord(Math.ceil(inputLength(body.input) / 4), 0),
  usage(data) {
    const usage = (data as { usage?: { prompt_tokens?: number } | null }).usage;
    return usage ? { input: usage.prompt_tokens ?? 0, output: 0 } : undefined;
  },
  facade: (surface) => new EmbeddingsFacade(surface) as unknown as SwitchboardEmbeddings,
});

/** `sb.embeddings`, its method shared by every switchboard (see `SurfaceFacade`). */
class EmbeddingsFacade {
  constructor(private readonly surface: Surface) {}

  create(body: unknown, options?: unknown): Promise<unknown> {
    return this.surface.call('create', body, options);
  }
}
