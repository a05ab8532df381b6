/**
 * A configured key never reaches a gateway client nor a `doctor` line: a key holding a line
 * break stops the gateway at start-up without being printed; a token function that returns one
 * fails that deployment without quoting it; an upstream that quotes the key back in a plain
 * sentence (no pattern of `scrub` would know it for a key) has it replaced. The sample gateway as
 * a real Nest app, the OpenAI client, `doctor` as its command line, an upstream on node:http.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createSwitchboard } from 'nestjs-switchboard';
import { runDoctorCli } from '../../src/doctor/run';
import { gatewayWith } from '../support/gateway';

// A plain word, as some deployments' keys are: nothing about it says "key".
const KEY = 'plainwordkey';
const GATEWAY_KEY = 'client-key';

/** An upstream that answers every request 400, quoting the key it was sent, as is. */
async function echoingUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    const sent = String(req.headers['api-key'] ?? req.headers.authorization ?? '');
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        error: {
          message: `Deployment rejects ${sent} for this request`,
          type: 'invalid_request_error',
        },
      }),
    );
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/openai/v1/` };
}

function config(baseURL: string, apiKey: string): object {
  return {
    deployments: [
      { provider: 'openai', name: 'east', baseURL, apiKey, models: [{ name: 'gpt-4o-mini' }] },
    ],
  };
}

describe('a configured key', () => {
  let dir: string;
  let upstream: { server: Server; url: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-key-echo-'));
    upstream = await echoingUpstream();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await new Promise((done) => upstream.server.close(done));
  });

  it('holding CR/LF stops the gateway at start-up, and the error does not print it', async () => {
    const file = join(dir, 'crlf.json');
    writeFileSync(file, JSON.stringify(config(upstream.url, `${KEY}\r\nx-evil: 1`)));
    const started = gatewayWith({ GATEWAY_API_KEYS: GATEWAY_KEY, SWITCHBOARD_CONFIG: file });
    await expect(started).rejects.toThrow(/deployments\[0\]\.apiKey holds a control character/);
    const message = await started.catch((error: Error) => `${error.message} ${error.stack}`);
    expect(message).not.toContain(KEY);
  });

  it('quoted back by the upstream does not reach a gateway client', async () => {
    const file = join(dir, 'echo.json');
    writeFileSync(file, JSON.stringify(config(upstream.url, KEY)));
    const gateway = await gatewayWith({ GATEWAY_API_KEYS: GATEWAY_KEY, SWITCHBOARD_CONFIG: file });
    try {
      const client = new OpenAI({
        apiKey: GATEWAY_KEY,
        baseURL: `${gateway.url}/v1`,
        maxRetries: 0,
      });
      const error = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .then(
          () => undefined,
          (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
        );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(JSON.stringify(error!.error)).toContain('Deployment rejects');
      expect(JSON.stringify(error!.error)).not.toContain(KEY);
      expect(error!.message).not.toContain(KEY);
    } finally {
      await gateway.close();
    }
  });

  it('returned by a token function with a line break fails the call without quoting it', async () => {
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'east',
          baseURL: upstream.url,
          apiKey: () => Promise.resolve(`${KEY}\n`),
          models: [{ name: 'gpt-4o-mini' }],
        },
      ],
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    try {
      const res = await sb.fetch('http://sb/v1/chat/completions', {
        method: 'POST',
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      });
      const text = await res.text();
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(text).not.toContain(KEY);
    } finally {
      await sb.close();
    }
  });

  it('quoted back by the upstream is not in any doctor line', async () => {
    const file = join(dir, 'doctor.json');
    writeFileSync(file, JSON.stringify(config(upstream.url, KEY)));
    const lines: string[] = [];
    const status = await runDoctorCli(['doctor', file, '--json'], {
      out: (t) => void lines.push(t),
      err: (t) => void lines.push(t),
    });
    expect(status).toBe(1);
    expect(lines.join('\n')).toContain('Deployment rejects');
    expect(lines.join('\n')).not.toContain(KEY);
  });

  it('doctor --timeout above 2^31 - 1 ms is refused in one line', async () => {
    const lines: string[] = [];
    const status = await runDoctorCli(['doctor', 'x.yaml', '--timeout', '1e10'], {
      out: (t) => void lines.push(t),
      err: (t) => void lines.push(t),
    });
    expect(status).toBe(2);
    expect(lines[0]).toMatch(
      /^--timeout must be a positive number of milliseconds, at most 2147483647/,
    );
  });
});
