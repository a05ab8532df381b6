import {
  OutputEstimate,
  RECENT_OUTPUTS,
  START_OUTPUT_ESTIMATE,
} from '../../src/quota/output-estimate';

describe('OutputEstimate', () => {
  it('expects the start estimate before any answer, never above the cap', () => {
    const estimate = new OutputEstimate();
    expect(estimate.of(100_000)).toBe(START_OUTPUT_ESTIMATE);
    expect(estimate.of(64)).toBe(64);
  });

  it('expects the 90th percentile of the recent answers, whatever order they came in', () => {
    const estimate = new OutputEstimate();
    const outputs = Array.from({ length: 10 }, (_, i) => (i + 1) * 10);
    for (const output of [...outputs].reverse()) estimate.answered(output);
    // floor(10 * 0.9) = the 10th smallest of 10
    expect(estimate.of(10_000)).toBe(100);
    estimate.answered(5);
    // 11 answers: the 10th smallest, 90
    expect(estimate.of(10_000)).toBe(90);
  });

  it('forgets answers older than the last RECENT_OUTPUTS, and ignores what is not a count', () => {
    const estimate = new OutputEstimate();
    for (let i = 0; i < RECENT_OUTPUTS; i++) estimate.answered(1_000);
    for (let i = 0; i < RECENT_OUTPUTS; i++) estimate.answered(7);
    expect(estimate.of(10_000)).toBe(7);
    estimate.answered(Number.NaN);
    estimate.answered(-1);
    expect(estimate.of(10_000)).toBe(7);
    estimate.reset();
    expect(estimate.of(10_000)).toBe(START_OUTPUT_ESTIMATE);
  });
});
