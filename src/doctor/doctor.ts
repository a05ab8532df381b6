import { performance } from 'node:perf_hooks';
import type { SwitchboardOptions } from '../config/switchboard-options';
import { REDACTED, scrub } from '../errors/scrub';
import {
  readRateLimits,
  requestsPerMinute,
  type RateLimitReading,
} from '../quota/rate-limit-headers';
import type { Deployment } from '../registry/deployment';
import { createSwitchboard, type Switchboard } from '../switchboard';
import type { DeploymentConfig, ModelConfig, SwitchboardLogger } from '../types';
import type { DoctorCheck, DoctorLimits, DoctorRow } from './doctor-row';
import { inPlainWords } from './plain-words';

/**
 * How {@link checkDeployments} sends its requests.
 *
 * @example
 * ```ts
 * const options: DoctorOptions = { timeout: 10_000 };
 * ```
 */
interface DoctorOptions {
  /** ms each request may take; default the deployment's own `timeout`, at most 10 000. */
  timeout?: number;
}

/**
 * How much longer than its request's timeout one check may take in all (building its client,
 * closing it) before it is given up: whatever an upstream does, the doctor ends.
 */
const CHECK_GRACE_MS = 2_000;

/** The longest error text a row keeps: an upstream's error body can be megabytes. */
export const DOCTOR_ERROR_LIMIT = 300;

const SILENT: SwitchboardLogger = { log: () => {}, warn: () => {}, error: () => {} };

const DEFAULT_TIMEOUT = 10_000;

/** Names that call for an embeddings request rather than a chat completion. */
const EMBEDDING = /embed/i;

/**
 * Sends every model of every deployment the smallest real request it serves (a chat completion
 * or a Claude message of one output token, embeddings of one word), through a switchboard of
 * that one model: the same SDK clients, wire names, error classification and rate-limit header
 * parsing as every call. One request at a time, in configuration order, so that each latency is
 * that request's own.
 *
 * @example
 * ```ts
 * const checks = await checkDeployments(loadSwitchboardConfigFile('switchboard.yaml'));
 * const failed = checks.filter((c) => !c.row.ok);
 * ```
 */
export async function checkDeployments(
  options: SwitchboardOptions,
  doctor: DoctorOptions = {},
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const [index, d] of options.deployments.entries()) {
    for (const m of d.models) checks.push(await checkWithin(d, m, doctor, index));
  }
  return checks;
}

/** {@link checkOne}, given up {@link CHECK_GRACE_MS} after its request's timeout. */
async function checkWithin(
  config: DeploymentConfig,
  model: ModelConfig,
  doctor: DoctorOptions,
  index: number,
): Promise<DoctorCheck> {
  const timeout = doctor.timeout ?? Math.min(config.timeout ?? DEFAULT_TIMEOUT, DEFAULT_TIMEOUT);
  let timer: NodeJS.Timeout | undefined;
  const givenUp = new Promise<DoctorCheck>((done) => {
    timer = setTimeout(() => {
      done({
        row: {
          deployment: config.name,
          model: model.name,
          ok: false,
          error: `no answer within ${timeout} ms (the check was given up)`,
        },
        upstreamName: model.deployment ?? model.name,
        configured: limitsOf(model),
      });
    }, timeout + CHECK_GRACE_MS);
    // A check given up must not keep the process alive; one that ends clears it below.
    timer.unref();
  });
  try {
    return await Promise.race([checkOne(config, model, doctor, index), givenUp]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkOne(
  config: DeploymentConfig,
  model: ModelConfig,
  doctor: DoctorOptions,
  index: number,
): Promise<DoctorCheck> {
  const upstreamName = model.deployment ?? model.name;
  const configured = limitsOf(model);
  const row: DoctorRow = { deployment: config.name, model: model.name, ok: false };
  const check: DoctorCheck = { row, upstreamName, configured };
  let sb: Switchboard;
  try {
    sb = createSwitchboard({
      deployments: [{ ...config, models: [model] } as DeploymentConfig],
      failover: { attempts: 1 },
      logger: SILENT,
    });
  } catch (error) {
    // Built alone, the deployment is the switchboard's deployments[0]: name the file's index.
    const message = (error instanceof Error ? error.message : String(error)).replace(
      /deployments\[0\]/g,
      `deployments[${index}]`,
    );
    row.error = shown(message, config);
    return check;
  }
  const deployment = sb.deployments.get(config.name)!;
  // A check waits less than a call would: one token answers in a second or two.
  const timeout = doctor.timeout ?? Math.min(deployment.timeout, DEFAULT_TIMEOUT);
  const started = performance.now();
  try {
    const { response } = await send(sb, config, model, timeout);
    row.ok = true;
    row.status = response.status;
    row.latencyMs = Math.round(performance.now() - started);
    setLimits(row, response.headers, config);
  } catch (error) {
    row.latencyMs = Math.round(performance.now() - started);
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number') row.status = status;
    const headers = (error as { headers?: unknown }).headers;
    if (typeof (headers as Headers | undefined)?.get === 'function') {
      setLimits(row, headers as Headers, config);
    }
    row.error = shown(
      inPlainWords(error, (deployment as Deployment).errors, upstreamName, timeout),
      config,
    );
  } finally {
    await sb.close();
  }
  return check;
}

/** An error as a row shows it: the deployment's own key never, the rest scrubbed and clipped. */
function shown(text: string, config: DeploymentConfig): string {
  const key = config.apiKey;
  const plain = typeof key === 'string' && key.length >= 4 ? text.split(key).join(REDACTED) : text;
  return scrub(plain, DOCTOR_ERROR_LIMIT);
}

/** The request itself, by what the model serves. */
async function send(
  sb: Switchboard,
  config: DeploymentConfig,
  model: ModelConfig,
  timeout: number,
): Promise<{ response: Response }> {
  const options = { timeout };
  const messages = [{ role: 'user' as const, content: 'ping' }];
  if (config.provider === 'anthropic') {
    return sb.messages
      .create({ model: model.name, max_tokens: 1, messages }, options)
      .withResponse();
  }
  if (EMBEDDING.test(model.name) || EMBEDDING.test(model.deployment ?? '')) {
    return sb.embeddings.create({ model: model.name, input: 'ping' }, options).withResponse();
  }
  try {
    return await sb.chat.completions
      .create({ model: model.name, max_tokens: 1, messages }, options)
      .withResponse();
  } catch (error) {
    // Reasoning models refuse `max_tokens` and take `max_completion_tokens` instead.
    const { status, param, message } = error as {
      status?: unknown;
      param?: unknown;
      message?: unknown;
    };
    const refusesMaxTokens =
      status === 400 &&
      (param === 'max_tokens' ||
        (typeof message === 'string' && message.includes('max_completion_tokens')));
    if (!refusesMaxTokens) throw error;
    return sb.chat.completions
      .create({ model: model.name, max_completion_tokens: 1, messages }, options)
      .withResponse();
  }
}

/**
 * The limits a model (or a level of a quota pool path) sets, above 0.
 *
 * @example
 * ```ts
 * limitsOf({ tpm: 30_000, rpm: 0 }); // { tpm: 30000 }
 * ```
 */
export function limitsOf(model: DoctorLimits): DoctorLimits {
  const out: DoctorLimits = {};
  for (const name of ['tpm', 'rpm', 'itpm', 'otpm'] as const) {
    const value = model[name];
    if (value !== undefined && value > 0) out[name] = value;
  }
  return out;
}

/** The limits the answer's rate-limit headers report, read as the switchboard reads them. */
function setLimits(row: DoctorRow, headers: Headers, config: DeploymentConfig): void {
  const reading: RateLimitReading | undefined = readRateLimits(headers, true, config.provider);
  if (reading === undefined) return;
  const limits: DoctorLimits = {};
  if (reading.tokens?.limit !== undefined) limits.tpm = reading.tokens.limit;
  if (reading.requests?.limit !== undefined) {
    limits.rpm = requestsPerMinute(reading.requests.limit, config.provider);
  }
  if (reading.input?.limit !== undefined) limits.itpm = reading.input.limit;
  if (reading.output?.limit !== undefined) limits.otpm = reading.output.limit;
  if (Object.keys(limits).length > 0) row.limits = limits;
}
