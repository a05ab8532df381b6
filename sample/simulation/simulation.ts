import { Inject, Injectable, Logger, Optional, type OnApplicationShutdown } from '@nestjs/common';
import type { DeploymentConfig, Price, SwitchboardOptions } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';

/** One simulated deployment: a name, the API it speaks, one model with its quota. */
export interface SimulatedDeploymentSpec {
  name: string;
  provider: 'openai' | 'anthropic';
  model: string;
  /** Tokens per minute, enforced by the simulated upstream and known to the switchboard. */
  tpm: number;
  /** Requests per minute (the upstream allows a sixth of it per 10 s, as Azure does). */
  rpm: number;
  /** ms before each answer. */
  latency: number;
  /** Routing tier of its model (0 = most preferred); default 0. */
  priority?: number;
}

/**
 * The gateway's built-in deployments: three Azure OpenAI and two Claude on Azure AI Foundry, with
 * quotas small enough that a burst from the status page shows on the bars.
 */
export const SIMULATED_DEPLOYMENTS: readonly SimulatedDeploymentSpec[] = [
  {
    name: 'aoai-eastus',
    provider: 'openai',
    model: 'gpt-4o-mini',
    tpm: 8_000,
    rpm: 60,
    latency: 120,
  },
  {
    name: 'aoai-westus',
    provider: 'openai',
    model: 'gpt-4o-mini',
    tpm: 8_000,
    rpm: 60,
    latency: 150,
  },
  {
    name: 'aoai-sweden',
    provider: 'openai',
    model: 'gpt-4o-mini',
    tpm: 8_000,
    rpm: 60,
    latency: 180,
  },
  {
    name: 'foundry-eastus',
    provider: 'anthropic',
    model: 'claude-sonnet-5',
    tpm: 6_000,
    rpm: 60,
    latency: 200,
  },
  {
    name: 'foundry-sweden',
    provider: 'anthropic',
    model: 'claude-sonnet-5',
    tpm: 6_000,
    rpm: 60,
    latency: 240,
  },
];

/**
 * List prices (USD per million tokens) of the simulated models, so that the status page and the
 * metrics have a cost per tenant to show. Illustrative: real prices are the configuration's.
 */
export const SIMULATED_PRICING: Readonly<Record<string, Price>> = {
  'gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 },
  'gpt-4o': { input: 2.5, output: 10, cachedInput: 1.25 },
  'claude-sonnet-5': { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
};

/** Knobs of the simulated deployments (tests shorten the cooldown). */
export interface SimulationOptions {
  /** Cooldown (ms) of every simulated model after a 429, a dropped connection or a mark-down. Default 10 000. */
  cooldown?: number;
  /** Scales every deployment's latency (0 = answer at once). Default 1. */
  latencyFactor?: number;
  /** ms between two SSE events of a streamed answer. Default 15. */
  chunkDelay?: number;
  /** The deployments to simulate. Default {@link SIMULATED_DEPLOYMENTS}. */
  deployments?: readonly SimulatedDeploymentSpec[];
  /** Fallback models per model, as `SwitchboardOptions.fallbacks`. Default none. */
  fallbacks?: Record<string, string[]>;
  /** Prices per model, as `SwitchboardOptions.pricing`. Default {@link SIMULATED_PRICING}. */
  pricing?: Record<string, Price>;
}

/** Injection token of the {@link SimulationOptions}. */
export const SIMULATION_OPTIONS = Symbol('SIMULATION_OPTIONS');

/**
 * Simulated Azure OpenAI and Foundry deployments on loopback, started only when the gateway has
 * no real deployments configured, and stopped with the application.
 */
@Injectable()
export class Simulation implements OnApplicationShutdown {
  private readonly logger = new Logger('Simulation');
  private running: SimulatedUpstream | undefined;

  constructor(
    @Optional()
    @Inject(SIMULATION_OPTIONS)
    private readonly options: SimulationOptions = {},
  ) {}

  /** True once {@link start} ran: the gateway routes to simulated deployments. */
  get enabled(): boolean {
    return this.running !== undefined;
  }

  /** The simulated upstream (fault injection, request logs); throws when not started. */
  get upstream(): SimulatedUpstream {
    if (!this.running) throw new Error('The simulated deployments are not running');
    return this.running;
  }

  /** Starts the simulated deployments and returns switchboard options that point at them. */
  async start(): Promise<SwitchboardOptions> {
    if (this.running) throw new Error('The simulated deployments are already running');
    const specs = this.options.deployments ?? SIMULATED_DEPLOYMENTS;
    const factor = this.options.latencyFactor ?? 1;
    this.running = await SimulatedUpstream.start({
      deployments: specs.map((d) => ({
        name: d.name,
        tpm: d.tpm,
        rpm: d.rpm,
        // Curl calls and the demo traffic seldom set max_tokens, and on quotas this small Azure's
        // large inferred output reservation would admit about one such call per minute.
        inferredMaxTokens: 256,
        latency: Math.round(d.latency * factor),
        chunkDelay: this.options.chunkDelay ?? 15,
      })),
    });
    const upstream = this.running;
    const deployments = specs.map((d): DeploymentConfig => {
      const sim = upstream.deployment(d.name);
      const cooldown = this.options.cooldown;
      const models = [
        {
          name: d.model,
          tpm: d.tpm,
          rpm: d.rpm,
          // What the simulated upstream enforces (a sixth of rpm per 10 s): stated, so that a
          // cold start is not ramped up as an upstream of unknown interval would be.
          requestWindow: '10s' as const,
          ...(cooldown !== undefined && { cooldown }),
          ...(d.priority !== undefined && { priority: d.priority }),
        },
      ];
      return d.provider === 'openai'
        ? {
            provider: 'openai',
            name: d.name,
            baseURL: sim.openaiBaseURL,
            apiKey: 'simulated',
            models,
          }
        : {
            provider: 'anthropic',
            name: d.name,
            baseURL: sim.anthropicBaseURL,
            apiKey: 'simulated',
            models,
          };
    });
    this.logger.log(
      `No SWITCHBOARD_CONFIG, AZURE_OPENAI_ENDPOINT/AZURE_OPENAI_API_KEY or OPENAI_API_KEY set: ` +
        `routing to ${specs.length} simulated deployments on ${upstream.url}; set SWITCHBOARD_CONFIG=<file.yaml> ` +
        `(see sample/switchboard.example.yaml), or AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY, or OPENAI_API_KEY to use real ones.`,
    );
    const fallbacks = this.options.fallbacks;
    const pricing = { ...(this.options.pricing ?? SIMULATED_PRICING) };
    return fallbacks === undefined ? { deployments, pricing } : { deployments, pricing, fallbacks };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.running?.close();
  }
}
