import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type INestApplication,
} from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import * as extend from 'nestjs-switchboard/extend';
import type { Deployment } from 'nestjs-switchboard/extend';
import {
  DeploymentRegistry,
  Selector,
  Switchboard,
  SwitchboardError,
  SwitchboardHealthIndicator,
  SwitchboardModule,
  SWITCHBOARD_MODULE_OPTIONS,
  TwoRandomChoices,
  type SwitchboardModuleOptions,
  type SwitchboardOptionsFactory,
} from 'nestjs-switchboard';
import { openaiDeployments } from '../support/configs';
import '../support/quiet-logs';

const MODEL = 'gpt-4o-mini';
const options = (): SwitchboardModuleOptions => ({ deployments: openaiDeployments(3, MODEL) });

/** Always the last candidate: easy to tell from the default selector. */
class LastSelector extends Selector {
  select(_model: string, candidates: readonly Deployment[]): Deployment {
    return candidates[candidates.length - 1]!;
  }
}

/** A provider of the application that a selector or an options factory depends on. */
@Injectable()
class Preferences {
  readonly preferred = 'd1';
  readonly deployments = openaiDeployments(3, MODEL);
}

@Module({ providers: [Preferences], exports: [Preferences] })
class PreferencesModule {}

@Global()
@Module({ providers: [Preferences], exports: [Preferences] })
class GlobalPreferencesModule {}

/** A selector with a dependency: it only works if Nest built it. */
@Injectable()
class PreferredSelector extends Selector {
  constructor(readonly preferences: Preferences) {
    super();
  }

  select(_model: string, candidates: readonly Deployment[]): Deployment {
    return candidates.find((d) => d.name === this.preferences.preferred) ?? candidates[0]!;
  }
}

@Injectable()
class SwitchboardConfigService implements SwitchboardOptionsFactory {
  constructor(private readonly preferences: Preferences) {}

  createSwitchboardOptions(): SwitchboardModuleOptions {
    return { deployments: this.preferences.deployments, maxSessions: 7 };
  }
}

@Module({
  imports: [PreferencesModule],
  providers: [SwitchboardConfigService],
  exports: [SwitchboardConfigService],
})
class SwitchboardConfigModule {}

/** Something of the application that injects everything the module exports. */
@Injectable()
class Consumer {
  constructor(
    readonly sb: Switchboard,
    readonly registry: DeploymentRegistry,
    readonly selector: Selector,
    readonly health: SwitchboardHealthIndicator,
  ) {}
}

@Module({ providers: [Consumer], exports: [Consumer] })
class FeatureModule {}

const open: TestingModule[] = [];
async function compile(...imports: Array<DynamicModule | (new () => unknown)>) {
  const ref = await Test.createTestingModule({ imports, providers: [Consumer] }).compile();
  open.push(ref);
  return ref;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((ref) => ref.close()));
});

/** Checks every exported provider and how they relate; returns the switchboard. */
function expectProviders(ref: TestingModule): Switchboard {
  const sb = ref.get(Switchboard);
  expect(sb).toBeInstanceOf(Switchboard);
  expect(ref.get(DeploymentRegistry)).toBe(sb.registry);
  expect(ref.get(Selector)).toBe(sb.selector);
  expect(ref.get(SwitchboardHealthIndicator)).toBeInstanceOf(SwitchboardHealthIndicator);
  const consumer = ref.get(Consumer);
  expect(consumer.sb).toBe(sb);
  expect(consumer.registry).toBe(sb.registry);
  expect(consumer.selector).toBe(sb.selector);
  expect(consumer.health).toBe(ref.get(SwitchboardHealthIndicator));
  expect(consumer.health.isHealthy().switchboard.status).toBe('up');
  return sb;
}

describe('SwitchboardModule registration', () => {
  it('forRoot(options) provides and exports Switchboard, DeploymentRegistry, Selector and the health indicator', async () => {
    const ref = await compile(SwitchboardModule.forRoot(options()));
    const sb = expectProviders(ref);
    expect([...sb.deployments.keys()]).toEqual(['d0', 'd1', 'd2']);
    expect(sb.selector).toBeInstanceOf(TwoRandomChoices);
    expect(ref.get(SWITCHBOARD_MODULE_OPTIONS)).toEqual(options());
  });

  it('exports DeploymentRegistry from the package root, the same class as on /extend', () => {
    expect(DeploymentRegistry).toBe(extend.DeploymentRegistry);
  });

  it('forRoot does not pass isGlobal on as a switchboard option', async () => {
    const ref = await compile(SwitchboardModule.forRoot({ ...options(), isGlobal: false }));
    expect(ref.get(SWITCHBOARD_MODULE_OPTIONS)).not.toHaveProperty('isGlobal');
  });

  it('forRootAsync({ useFactory })', async () => {
    const ref = await compile(SwitchboardModule.forRootAsync({ useFactory: options }));
    expectProviders(ref);
  });

  it('forRootAsync({ useFactory }) waits for an async factory', async () => {
    const ref = await compile(
      SwitchboardModule.forRootAsync({ useFactory: () => Promise.resolve(options()) }),
    );
    expect(expectProviders(ref).deployments.size).toBe(3);
  });

  it('forRootAsync({ imports, inject, useFactory }) injects providers of the imported modules', async () => {
    const ref = await compile(
      SwitchboardModule.forRootAsync({
        imports: [PreferencesModule],
        inject: [Preferences],
        useFactory: (preferences: Preferences) => ({
          deployments: preferences.deployments.slice(0, 2),
        }),
      }),
    );
    expect([...expectProviders(ref).deployments.keys()]).toEqual(['d0', 'd1']);
  });

  it('forRootAsync({ imports, useClass }) asks the class for the options', async () => {
    const ref = await compile(
      SwitchboardModule.forRootAsync({
        imports: [PreferencesModule],
        useClass: SwitchboardConfigService,
      }),
    );
    expect(expectProviders(ref).registry.sessions.capacity).toBe(7);
  });

  it('forRootAsync({ imports, useExisting }) reuses a factory the imported module exports', async () => {
    const ref = await compile(
      SwitchboardModule.forRootAsync({
        imports: [SwitchboardConfigModule],
        useExisting: SwitchboardConfigService,
      }),
    );
    expect(expectProviders(ref).registry.sessions.capacity).toBe(7);
  });

  it('is not global by default: a module that does not import it cannot inject the Switchboard', async () => {
    await expect(
      Test.createTestingModule({
        imports: [SwitchboardModule.forRoot(options()), FeatureModule],
      }).compile(),
    ).rejects.toThrow(/can't resolve dependencies of the Consumer/);
  });

  it.each([
    ['forRoot', () => SwitchboardModule.forRoot({ ...options(), isGlobal: true })],
    ['forRootAsync', () => SwitchboardModule.forRootAsync({ useFactory: options, isGlobal: true })],
  ])('%s({ isGlobal: true }) makes the providers visible to every module', async (_, module) => {
    const ref = await Test.createTestingModule({ imports: [module(), FeatureModule] }).compile();
    open.push(ref);
    const consumer = ref.get(Consumer);
    expect(consumer.sb).toBeInstanceOf(Switchboard);
    expect(consumer.registry).toBe(consumer.sb.registry);
    expect(consumer.selector).toBe(consumer.sb.selector);
  });

  it('rejects invalid options with a SwitchboardError that names the field', async () => {
    const bad = {
      deployments: [{ ...openaiDeployments(1)[0]!, models: [{ name: 'm', tpm: -1 }] }],
    };
    const compiling = Test.createTestingModule({
      imports: [SwitchboardModule.forRootAsync({ useFactory: () => bad })],
    }).compile();
    await expect(compiling).rejects.toThrow(SwitchboardError);
    await expect(compiling).rejects.toThrow(/deployments\[0\]\.models\[0\]\.tpm must be/);
  });
});

describe('SwitchboardModule selector', () => {
  it('uses a Selector instance as it is', async () => {
    const selector = new LastSelector();
    const ref = await compile(SwitchboardModule.forRoot({ ...options(), selector }));
    const sb = expectProviders(ref);
    expect(sb.selector).toBe(selector);
    expect(sb.selectDeployment({ model: MODEL }).name).toBe('d2');
  });

  it('builds a Selector class through DI, with the providers of forRootAsync imports', async () => {
    const ref = await compile(
      SwitchboardModule.forRootAsync({
        imports: [PreferencesModule],
        useFactory: () => ({ ...options(), selector: PreferredSelector }),
      }),
    );
    const sb = expectProviders(ref);
    expect(sb.selector).toBeInstanceOf(PreferredSelector);
    expect((sb.selector as PreferredSelector).preferences).toBeInstanceOf(Preferences);
    expect(sb.selectDeployment({ model: MODEL }).name).toBe('d1');
  });

  it('builds a Selector class given to forRoot with global providers', async () => {
    const ref = await compile(
      GlobalPreferencesModule,
      SwitchboardModule.forRoot({ ...options(), selector: PreferredSelector }),
    );
    expect(ref.get(Selector)).toBeInstanceOf(PreferredSelector);
    expect(ref.get(Switchboard).selectDeployment({ model: MODEL }).name).toBe('d1');
  });

  it('names the missing dependency of a Selector class', async () => {
    await expect(
      Test.createTestingModule({
        imports: [SwitchboardModule.forRoot({ ...options(), selector: PreferredSelector })],
      }).compile(),
    ).rejects.toThrow(/PreferredSelector/);
  });

  it('overrideProvider(Selector).useValue() changes what the Switchboard selects with', async () => {
    const selector = new LastSelector();
    const ref = await Test.createTestingModule({
      imports: [SwitchboardModule.forRoot(options())],
    })
      .overrideProvider(Selector)
      .useValue(selector)
      .compile();
    open.push(ref);
    expect(ref.get(Switchboard).selector).toBe(selector);
    expect(ref.get(Switchboard).selectDeployment({ model: MODEL }).name).toBe('d2');
  });

  it('overrideProvider(Selector).useClass() changes it too, with DI', async () => {
    const ref = await Test.createTestingModule({
      imports: [GlobalPreferencesModule, SwitchboardModule.forRoot(options())],
    })
      .overrideProvider(Selector)
      .useClass(PreferredSelector)
      .compile();
    open.push(ref);
    expect(ref.get(Switchboard).selector).toBeInstanceOf(PreferredSelector);
    expect(ref.get(Switchboard).selectDeployment({ model: MODEL }).name).toBe('d1');
  });

  it('keeps the options token private to the module', async () => {
    @Injectable()
    class OptionsReader {
      constructor(@Inject(SWITCHBOARD_MODULE_OPTIONS) readonly options: SwitchboardModuleOptions) {}
    }
    @Module({
      imports: [SwitchboardModule.forRoot({ ...options(), maxSessions: 3 })],
      providers: [OptionsReader],
    })
    class Reader {}
    await expect(Test.createTestingModule({ imports: [Reader] }).compile()).rejects.toThrow(
      /SWITCHBOARD_MODULE_OPTIONS/,
    );
  });
});

describe('SwitchboardModule lifecycle', () => {
  let app: INestApplication | undefined;

  beforeEach(() => {
    // Only the timer functions: Nest and the HTTP stack keep their own scheduling.
    jest.useFakeTimers({
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'Date', 'hrtime', 'performance'],
    });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    jest.useRealTimers();
  });

  it('starts the fixed-window reset timer on init and clears it and the state store on app.close()', async () => {
    const store = {
      attach: jest.fn(),
      health: () => ({ status: 'up' as const }),
      close: jest.fn(() => Promise.resolve()),
    };
    const ref = await Test.createTestingModule({
      imports: [
        SwitchboardModule.forRoot({
          ...options(),
          ratelimitWindow: 60_000,
          usageWindow: 'fixed',
          state: store,
        }),
      ],
    }).compile();
    app = ref.createNestApplication();
    const sb = app.get(Switchboard);
    const usage = sb.deployments.get('d0')!.models.get(MODEL)!;
    expect(jest.getTimerCount()).toBe(0);
    expect(store.attach).not.toHaveBeenCalled();

    await app.init();
    expect(jest.getTimerCount()).toBe(1);
    expect(store.attach).toHaveBeenCalledTimes(1);
    usage.spend(500, 3);
    jest.advanceTimersByTime(60_000);
    expect(usage.rpmUsage).toBe(0);
    expect(usage.tpmUsage).toBe(0);

    await app.close();
    app = undefined;
    expect(jest.getTimerCount()).toBe(0);
    expect(store.close).toHaveBeenCalledTimes(1);
    usage.spend(500, 3);
    jest.advanceTimersByTime(120_000);
    expect(usage.rpmUsage).toBe(3);

    await sb.close();
    expect(store.close).toHaveBeenCalledTimes(1);
  });

  it('starts no timer when ratelimitWindow is 0', async () => {
    const ref = await Test.createTestingModule({
      imports: [SwitchboardModule.forRoot({ ...options(), ratelimitWindow: 0 })],
    }).compile();
    app = ref.createNestApplication();
    await app.init();
    expect(jest.getTimerCount()).toBe(0);
  });
});
