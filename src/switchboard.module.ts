import { Module, type Provider } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { peerRequire } from './runtime/peer-require';
import { validateOptions } from './config/validate-options';
import { loadHealthResults, SWITCHBOARD_HEALTH_RESULTS } from './health/health-results';
import { SwitchboardHealthIndicator } from './health/switchboard-health.indicator';
import { DeploymentRegistry } from './registry/deployment-registry';
import { Selector } from './selection/selector';
import { TwoRandomChoices } from './selection/two-random-choices';
import { Switchboard } from './switchboard';
import {
  ConfigurableSwitchboardModule,
  SWITCHBOARD_MODULE_OPTIONS,
  type SwitchboardModuleOptions,
} from './switchboard.module-definition';

// The Switchboard takes its selector from the `Selector` provider, so that overriding the token
// (`overrideProvider(Selector)`, or a provider of an importing module) changes what it uses.
const selectorProvider: Provider = {
  provide: Selector,
  useFactory: (options: SwitchboardModuleOptions, moduleRef: ModuleRef) => {
    validateOptions(options);
    const selector = options.selector;
    if (selector === undefined) return new TwoRandomChoices({ random: options.random });
    // A class goes through DI, so that it can inject the application's providers.
    if (typeof selector === 'function') return moduleRef.create(selector);
    return selector;
  },
  // @nestjs/core is loaded when Nest reads the provider, not at import: standalone applications
  // import this package without having it installed.
  get inject() {
    const core = peerRequire('@nestjs/core') as { ModuleRef: typeof ModuleRef };
    return [SWITCHBOARD_MODULE_OPTIONS, core.ModuleRef];
  },
};

const switchboardProvider: Provider = {
  provide: Switchboard,
  useFactory: (options: SwitchboardModuleOptions, selector: Selector) =>
    new Switchboard({ ...options, selector }),
  inject: [SWITCHBOARD_MODULE_OPTIONS, Selector],
};

const registryProvider: Provider = {
  provide: DeploymentRegistry,
  useFactory: (switchboard: Switchboard) => switchboard.registry,
  inject: [Switchboard],
};

const healthResultsProvider: Provider = {
  provide: SWITCHBOARD_HEALTH_RESULTS,
  useFactory: loadHealthResults,
};

/**
 * The switchboard as a Nest module. It provides and exports {@link Switchboard},
 * {@link DeploymentRegistry}, {@link Selector} (a token to override) and
 * {@link SwitchboardHealthIndicator}; the usage-reset timer starts when the module initializes
 * and stops when the application closes.
 *
 * - `forRoot(options)`: static options.
 * - `forRootAsync({ imports, inject, useFactory | useClass | useExisting })`: options from other
 *   providers, e.g. `ConfigService` or the {@link switchboardConfig} namespace.
 * - `isGlobal: true` on either makes the providers visible to every module.
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     ConfigModule.forRoot({ load: [switchboardConfig] }),
 *     SwitchboardModule.forRootAsync({
 *       imports: [ConfigModule],
 *       inject: [ConfigService],
 *       useFactory: (config: ConfigService) => config.getOrThrow('switchboard'),
 *       isGlobal: true,
 *     }),
 *   ],
 * })
 * export class AppModule {}
 *
 * @Injectable()
 * export class ChatService {
 *   constructor(private readonly sb: Switchboard) {}
 * }
 * ```
 */
@Module({
  providers: [
    selectorProvider,
    switchboardProvider,
    registryProvider,
    healthResultsProvider,
    SwitchboardHealthIndicator,
  ],
  exports: [Switchboard, DeploymentRegistry, Selector, SwitchboardHealthIndicator],
})
export class SwitchboardModule extends ConfigurableSwitchboardModule {}
