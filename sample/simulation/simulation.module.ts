import { Module, type DynamicModule } from '@nestjs/common';
import { SIMULATION_OPTIONS, Simulation, type SimulationOptions } from './simulation';

/** Provides the {@link Simulation}; it starts deployments only when asked to. */
@Module({})
export class SimulationModule {
  static register(options: SimulationOptions = {}): DynamicModule {
    return {
      module: SimulationModule,
      providers: [{ provide: SIMULATION_OPTIONS, useValue: options }, Simulation],
      exports: [Simulation],
    };
  }
}
