// The same for nestjs-switchboard/extend: typesVersions leads node10 resolution to its types.
import { peerFold, type Deployment, type StateStore } from 'nestjs-switchboard/extend';

export const fold: typeof peerFold = peerFold;
export const names = (deployments: readonly Deployment[]): string[] =>
  deployments.map((d) => d.name);
export type Store = StateStore;
