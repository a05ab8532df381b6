// Classic `moduleResolution: node` (node10) knows no `exports`: typesVersions must still lead it
// to the types of nestjs-switchboard/testing.
import { createSwitchboard, type SwitchboardOptions } from 'nestjs-switchboard';
import { SimulatedUpstream, type SimulatedFault } from 'nestjs-switchboard/testing';

export const fault: SimulatedFault = { kind: 'status', status: 429 };
export const start: typeof SimulatedUpstream.start = SimulatedUpstream.start;
export const create: (options: SwitchboardOptions) => unknown = createSwitchboard;
