/**
 * A wait in words a person reads at a glance: `850 ms`, `42 s`, `7 min 5 s`, `19 h 6 min`,
 * `3 d 4 h` (the two largest units; rounded up, so a wait is never shown shorter than it is).
 *
 * @example
 * ```ts
 * durationInWords(68_755_766); // '19 h 6 min'
 * ```
 */
export function durationInWords(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return '0 ms';
  if (ms < 1_000) return `${Math.ceil(ms)} ms`;
  const units: [string, number][] = [
    ['d', 86_400],
    ['h', 3_600],
    ['min', 60],
    ['s', 1],
  ];
  const unitOf = (seconds: number) =>
    Math.max(
      0,
      units.findIndex(([, u]) => seconds >= u),
    );
  const [, smallSeconds] = units[Math.min(unitOf(ms / 1_000) + 1, units.length - 1)]!;
  // Rounded up in the smaller unit, never shorter than the wait; then said in the units it reaches.
  const total = Math.ceil(ms / 1_000 / smallSeconds) * smallSeconds;
  const first = unitOf(total);
  const [big, bigSeconds] = units[first]!;
  const [small, unit] = units[first + 1] ?? [big, bigSeconds];
  const whole = Math.floor(total / bigSeconds);
  const rest = Math.round((total - whole * bigSeconds) / unit);
  return rest === 0 || small === big ? `${whole} ${big}` : `${whole} ${big} ${rest} ${small}`;
}
