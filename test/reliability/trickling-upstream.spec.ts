/**
 * An upstream that sends its headers, then its body a byte at a time: the typed call rejects at
 * its timeout and its socket is closed, with or without a caller's signal, and after `close()`;
 * `doctor` ends, and clips a 10 MB error body.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import OpenAI from 'openai';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import { DOCTOR_ERROR_LIMIT } from '../../src/doctor/doctor';
import { runDoctorCli } from '../../src/doctor/run';
import { eventually } from '../support/eventually';
import {
  json,
  scriptedUpstream,
  type ScriptedRequest,
  type ScriptedUpstream,
} from '../support/scripted-upstream';

const GPT = 'gpt-4o-mini';
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const ask = { model: GPT, messages: [{ role: 'user' as const, content: 'hi' }] };

/** Answers still being trickled: their sockets are open. */
let trickling = 0;

/** Headers now, then one byte of a body that never ends every 20 ms, until the socket closes. */
function trickle(_req: ScriptedRequest, res: ServerResponse): void {
  trickling++;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{');
  const timer = setInterval(() => res.write(' '), 20);
  res.on('close', () => {
    trickling--;
    clearInterval(timer);
  });
}

describe('an upstream that trickles its body', () => {
  let up: ScriptedUpstream;
  let sb: Switchboard | undefined;
  let dir: string;

  beforeAll(async () => {
    up = await scriptedUpstream(trickle);
    dir = mkdtempSync(join(tmpdir(), 'sb-trickle-'));
  });
  afterAll(async () => {
    await up.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await sb?.close();
    sb = undefined;
    up.answer = trickle;
  });

  const build = () => {
    sb = createSwitchboard({
      logger: quiet,
      failover: { attempts: 1 },
      deployments: [
        {
          provider: 'openai',
          name: 'slow',
          baseURL: `${up.origin}/v1`,
          apiKey: 'k',
          timeout: 300,
          models: [{ name: GPT }],
        },
      ],
    });
    return sb;
  };

  it('without a signal: the call times out and the socket is closed', async () => {
    build();
    const error = await sb!.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    await eventually(() => trickling === 0);
  });

  it('with a signal: the same', async () => {
    build();
    const signal = new AbortController().signal;
    const error = await sb!.chat.completions.create(ask, { signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    await eventually(() => trickling === 0);
  });

  it('after close(), no socket stays open', async () => {
    build();
    await sb!.chat.completions.create(ask).catch(() => undefined);
    await sb!.close();
    sb = undefined;
    await eventually(() => trickling === 0);
  });

  const config = (timeout?: number) => {
    const file = join(dir, 'doctor.json');
    writeFileSync(
      file,
      JSON.stringify({
        deployments: [
          {
            provider: 'openai',
            name: 'slow',
            baseURL: `${up.origin}/v1`,
            apiKey: 'k',
            ...(timeout === undefined ? {} : { timeout }),
            models: [{ name: GPT }],
          },
        ],
      }),
    );
    return file;
  };

  const doctor = async (args: string[]) => {
    const out: string[] = [];
    const status = await runDoctorCli(['doctor', ...args, '--json'], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
    });
    return { status, rows: JSON.parse(out.join('\n')) as { ok: boolean; error: string }[] };
  };

  it('doctor reports the check as failed, ends, and leaves no socket open', async () => {
    const { status, rows } = await doctor([config(), '--timeout', '300']);
    expect(status).toBe(1);
    expect(rows[0]).toMatchObject({ ok: false, error: 'no answer within 300 ms' });
    await eventually(() => trickling === 0);
  });

  it('doctor clips a 10 MB upstream error', async () => {
    const message = 'e'.repeat(10 * 1024 * 1024);
    up.answer = (_req, res) => json(res, 500, { error: { message } });
    const { rows } = await doctor([config(), '--timeout', '5000']);
    expect(rows[0]!.ok).toBe(false);
    expect(rows[0]!.error.length).toBeLessThan(DOCTOR_ERROR_LIMIT + 40);
    // Scrubbed too: a run of 32 hex digits ('eee…') is shaped like a key.
    expect(rows[0]!.error).toMatch(/^server error \(500\): 500 \[redacted\]… \(\d+ characters\)$/);
  });
});
