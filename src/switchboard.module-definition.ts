import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { SwitchboardOptions } from './config/switchboard-options';

/**
 * What `SwitchboardModule.forRoot()` and the `forRootAsync()` factories return: the
 * {@link SwitchboardOptions}, where `selector` may be a class resolved through Nest's DI.
 *
 * @example
 * ```ts
 * const options: SwitchboardModuleOptions = { deployments, selector: LeastUtilized };
 * ```
 */
export type SwitchboardModuleOptions = SwitchboardOptions;

/**
 * Options of the module itself, next to the switchboard's.
 *
 * @example
 * ```ts
 * SwitchboardModule.forRoot({ deployments, isGlobal: true });
 * ```
 */
export interface SwitchboardModuleExtras {
  /** Register the module globally, so feature modules inject `Switchboard` without importing it. */
  isGlobal?: boolean;
}

const definition = new ConfigurableModuleBuilder<SwitchboardModuleOptions>({
  moduleName: 'Switchboard',
})
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createSwitchboardOptions')
  .setExtras<SwitchboardModuleExtras>({ isGlobal: false }, (module, extras) => ({
    ...module,
    global: extras.isGlobal,
  }))
  .build();

/**
 * Injection token of the resolved {@link SwitchboardModuleOptions} (`'SWITCHBOARD_MODULE_OPTIONS'`).
 *
 * @example
 * ```ts
 * constructor(@Inject(SWITCHBOARD_MODULE_OPTIONS) options: SwitchboardModuleOptions) {}
 * ```
 */
export const SWITCHBOARD_MODULE_OPTIONS: string = definition.MODULE_OPTIONS_TOKEN as string;

/**
 * The generated base class with `forRoot` / `forRootAsync` (public: `SwitchboardModule` extends it).
 *
 * @example
 * ```ts
 * export class SwitchboardModule extends ConfigurableSwitchboardModule {}
 * ```
 */
export const ConfigurableSwitchboardModule = definition.ConfigurableModuleClass;

/**
 * Argument of `SwitchboardModule.forRootAsync()`: `imports`, `inject` and one of `useFactory`,
 * `useClass` or `useExisting` (a {@link SwitchboardOptionsFactory}), plus `isGlobal`.
 *
 * @example
 * ```ts
 * const async: SwitchboardModuleAsyncOptions = {
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => config.getOrThrow('switchboard'),
 * };
 * ```
 */
export type SwitchboardModuleAsyncOptions = typeof definition.ASYNC_OPTIONS_TYPE;

/**
 * A class that `forRootAsync({ useClass })` or `forRootAsync({ useExisting })` asks for the
 * options.
 *
 * @example
 * ```ts
 * @Injectable()
 * class SwitchboardConfigService implements SwitchboardOptionsFactory {
 *   constructor(private readonly config: ConfigService) {}
 *   createSwitchboardOptions(): SwitchboardModuleOptions {
 *     return this.config.getOrThrow('switchboard');
 *   }
 * }
 * ```
 */
export interface SwitchboardOptionsFactory {
  createSwitchboardOptions(): SwitchboardModuleOptions | Promise<SwitchboardModuleOptions>;
}
