export { seededRandom as seeded } from '../../src/testing';

/** A clock the test moves by hand. */
export class FakeClock {
  constructor(public ms = 1_700_000_000_000) {}
  readonly now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}
