import { REDACTED, scrub, UPSTREAM_TEXT_LIMIT } from '../../src/errors/scrub';

describe('scrub: upstream text as it may reach a client, a log line or a span', () => {
  it.each([
    ['Incorrect API key provided: sk-proj-****WXYZ.', 'Incorrect API key provided: [redacted].'],
    ['bad key sk-ant-api03-abcDEF123_xyz', 'bad key [redacted]'],
    ['got Authorization: Bearer eyJhbGciOi.abc.def', 'got Authorization: Bearer [redacted]'],
    ['echo {"api-key": "0123456789abcdef0123456789abcdef"}', 'echo {"api-key": "[redacted]"}'],
    ['headers: x-api-key=secret-value; other=1', 'headers: x-api-key=[redacted]; other=1'],
    ['GET /blob?sv=2024&sig=AbC%2Fdef&se=1', 'GET /blob?sv=2024&sig=[redacted]&se=1'],
    ['key 0123456789ABCDEF0123456789abcdef0123 refused', `key ${REDACTED} refused`],
    ['token Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MEFCQ0RFRkdI here', `token ${REDACTED} here`],
    [
      'client_secret=hunter2 and password: "p@ss w"',
      'client_secret=[redacted] and password: "[redacted] w"',
    ],
  ])('%s', (text, scrubbed) => {
    expect(scrub(text)).toBe(scrubbed);
  });

  it('keeps what is no secret: token counts, field names, ids, paths', () => {
    for (const text of [
      'max_tokens: Field required',
      "This model's maximum context length is 128000 tokens (max_tokens=4096, input_tokens: 130000).",
      'No response with id resp_68af0c1f6d2c81969a2fbb3c0e4e1ca50b5d4d7f2cb3e9a0 was found.',
      'The deployment /openai/deployments/gpt-4o-mini-2024-07-18/chat/completions was not found',
      'api-version 2024-10-21 is not supported',
    ]) {
      expect(scrub(text)).toBe(text);
    }
  });

  it('clips what it lets out, and says how long the text was', () => {
    const huge = `${'x'.repeat(10_000_000)} sk-proj-${'a'.repeat(40)}`;
    const out = scrub(huge);
    expect(out.length).toBeLessThan(UPSTREAM_TEXT_LIMIT + 40);
    expect(out).toContain('(10000049 characters)');
    expect(scrub('xy'.repeat(100), 10)).toBe('xyxyxyxyxy… (200 characters)');
    // A key astride the clip is scrubbed before it is cut.
    const astride = `${'y'.repeat(500)} 0123456789abcdef0123456789abcdef`;
    expect(scrub(astride)).not.toMatch(/0123456789/);
  });
});
