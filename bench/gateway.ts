/**
 * Section 7: the sample gateway beside the Portkey gateway (`@portkey-ai/gateway`, installed on
 * first use into `node_modules/.cache/`, never a dependency of the package) and a bare proxy
 * (`node:http`, keep-alive agent, round robin, no parsing) as the floor, over the same three
 * simulated deployments answering at once. Each gateway is its own process bound to 127.0.0.1;
 * the load is autocannon in another process (50 connections); the simulated deployments are a
 * third. Rounds alternate between the gateways; each reports requests per second, p50/p99
 * latency, and CPU per request of the gateway process (`/proc/<pid>/stat` utime + stime before
 * and after the round).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startUpstreams, type Upstreams } from './upstreams';
import { TS_REGISTER } from './util';

/** The peer, at the version the figures are quoted for. */
export const PORTKEY_VERSION = '1.15.2';
const MODEL = 'gpt-4o-mini';
const NAMES = ['aoai-0', 'aoai-1', 'aoai-2'];
const BODY = JSON.stringify({
  model: MODEL,
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
});
const ROOT = join(__dirname, '..');
const CLOCK_TICKS = 100;

/** Options of {@link gatewayBench}. */
export interface GatewayBenchOptions {
  /** Seconds of each measured round. */
  seconds: number;
  /** Rounds per gateway, alternating. */
  rounds: number;
  /** Connections of the load generator. */
  connections: number;
  /** Requests sent to each gateway before the first round, so that each runs optimized code. */
  warmup: number;
  /** Also the sample gateway on Nest's fastify platform (the platform comparison). */
  fastify: boolean;
}

/** One gateway's figures of one round. */
export interface GatewayRound {
  rps: number;
  p50: number;
  p99: number;
  /** CPU of the gateway process per request, ms. */
  cpuMsPerRequest: number;
  requests: number;
  /** Load-generator errors and non-2xx answers. */
  errors: number;
}

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  child: ChildProcess;
}

/**
 * Runs the section and prints the side-by-side table; returns every round's figures and the
 * ratios of the medians.
 *
 * @example
 * ```ts
 * const figures = await gatewayBench({ seconds: 5, rounds: 3, connections: 50 });
 * ```
 */
export async function gatewayBench(options: GatewayBenchOptions): Promise<Record<string, unknown>> {
  const upstreams = await startUpstreams(
    NAMES.map((name) => ({ name, latency: 0, chunkDelay: 0 })),
    false,
  );
  const targets: Target[] = [];
  try {
    const portkey = await startPortkey(upstreams);
    targets.push(portkey);
    targets.push(await startGateway(upstreams, 'express'));
    if (options.fastify) targets.push(await startGateway(upstreams, 'fastify'));
    targets.push(await startFloor(upstreams));
    if (options.warmup > 0) {
      for (const t of targets) await load(t, { amount: options.warmup }, options.connections);
    }
    const rounds: Record<string, GatewayRound[]> = Object.fromEntries(
      targets.map((t) => [t.name, []]),
    );
    for (let r = 0; r < options.rounds; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const round = await measure(t, options.seconds, options.connections);
        rounds[t.name]!.push(round);
        console.log(
          `round ${r + 1}  ${t.name.padEnd(20)} ${fmt(round.rps, 0).padStart(6)} rps  p50 ${fmt(round.p50, 1)} ms  p99 ${fmt(round.p99, 1)} ms  ${fmt(round.cpuMsPerRequest, 3)} ms CPU/request  errors ${round.errors}`,
        );
      }
    }
    const median = (name: string, key: keyof GatewayRound) =>
      medianOf(rounds[name]!.map((x) => x[key]));
    console.log('\nmedians of the rounds:\n');
    console.log('gateway               rps      p50 ms  p99 ms  CPU ms/request  errors');
    for (const t of targets) {
      console.log(
        `${t.name.padEnd(20)} ${fmt(median(t.name, 'rps'), 0).padStart(6)}  ${fmt(median(t.name, 'p50'), 1).padStart(6)}  ${fmt(median(t.name, 'p99'), 1).padStart(6)}  ${fmt(median(t.name, 'cpuMsPerRequest'), 3).padStart(14)}  ${rounds[t.name]!.reduce((n, x) => n + x.errors, 0)}`,
      );
    }
    const rpsRatio = median('switchboard', 'rps') / median('portkey', 'rps');
    const cpuRatio =
      median('switchboard', 'cpuMsPerRequest') / median('portkey', 'cpuMsPerRequest');
    console.log(
      `\nswitchboard / portkey: ${fmt(rpsRatio, 2)}× the requests per second at ${fmt(cpuRatio, 2)}× the CPU per request` +
        ` (per round: ${rounds.switchboard!.map((x, i) => fmt(x.rps / rounds.portkey![i]!.rps, 2)).join(', ')}×)`,
    );
    const fastify = options.fastify
      ? median('switchboard-fastify', 'rps') / median('portkey', 'rps')
      : NaN;
    const fastifyCpu = options.fastify
      ? median('switchboard-fastify', 'cpuMsPerRequest') / median('portkey', 'cpuMsPerRequest')
      : NaN;
    if (options.fastify) {
      console.log(
        `switchboard on fastify / portkey: ${fmt(fastify, 2)}× the requests per second at ${fmt(fastifyCpu, 2)}× the CPU per request`,
      );
    }
    console.log(
      `floor / switchboard: ${fmt(median('floor', 'rps') / median('switchboard', 'rps'), 2)}× the requests per second`,
    );
    return {
      portkeyVersion: PORTKEY_VERSION,
      options,
      rounds,
      rpsRatio,
      cpuRatio,
      fastify: { rpsRatio: fastify, cpuRatio: fastifyCpu },
    };
  } finally {
    for (const t of targets) t.child.kill();
    await upstreams.close();
  }
}

/** Installs the Portkey gateway into a cache folder on first use; its start script's path. */
function installPortkey(): string {
  const dir = join(ROOT, 'node_modules', '.cache', `bench-portkey-${PORTKEY_VERSION}`);
  const script = join(dir, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
  if (existsSync(script)) return script;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
  console.log(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into ${dir} (first use)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const done = spawnSync(
    npm,
    [
      'install',
      // Its exact version: npm's cached metadata serves (halves the install on a warm cache).
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      `@portkey-ai/gateway@${PORTKEY_VERSION}`,
    ],
    { cwd: dir, stdio: 'inherit' },
  );
  if (done.status !== 0 || !existsSync(script)) {
    throw new Error(`could not install @portkey-ai/gateway@${PORTKEY_VERSION} into ${dir}`);
  }
  return script;
}

/**
 * The Portkey gateway: its node build (`build/start-server.js --port=N --headless`, production
 * mode: no log UI). It listens on every interface by default; a preloaded script makes its
 * server listen on 127.0.0.1 only. Routed by its own load-balancing config (sent per request,
 * as its self-hosted guides do), trusting the loopback host of the simulated deployments.
 */
async function startPortkey(upstreams: Upstreams): Promise<Target> {
  const script = installPortkey();
  const preload = join(script, '..', '..', '..', '..', '..', 'bind-loopback.cjs');
  writeFileSync(
    preload,
    [
      "const net = require('node:net');",
      'const listen = net.Server.prototype.listen;',
      'net.Server.prototype.listen = function (...args) {',
      "  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');",
      '  return listen.apply(this, args);',
      '};',
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const child = spawn(process.execPath, ['-r', preload, script, `--port=${port}`, '--headless'], {
    env: { ...process.env, NODE_ENV: 'production', TRUSTED_CUSTOM_HOSTS: '127.0.0.1,localhost' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const config = {
    strategy: { mode: 'loadbalance' },
    targets: upstreams.endpoints.map((e) => ({
      provider: 'openai',
      api_key: 'bench',
      custom_host: e.openaiBaseURL.replace(/\/$/, ''),
      weight: 1,
    })),
  };
  const url = `http://127.0.0.1:${port}/v1/chat/completions`;
  const target = {
    name: 'portkey',
    url,
    headers: { 'x-portkey-config': JSON.stringify(config) },
    child,
  };
  await ready(target);
  return target;
}

/** The sample gateway over the three deployments, configured by a file, on one Nest platform. */
async function startGateway(
  upstreams: Upstreams,
  platform: 'express' | 'fastify',
): Promise<Target> {
  const file = join(tmpdir(), `switchboard-bench-gateway-${process.pid}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      deployments: upstreams.endpoints.map((e) => ({
        provider: 'openai',
        name: e.name,
        baseURL: e.openaiBaseURL,
        apiKey: 'bench',
        models: [{ name: MODEL, tpm: 1_000_000_000, rpm: 100_000_000 }],
      })),
      failover: { attempts: 3 },
    }),
  );
  return child(platform === 'express' ? 'switchboard' : 'switchboard-fastify', ['gateway'], {
    SWITCHBOARD_CONFIG: file,
    NODE_ENV: 'production',
    GATEWAY_PLATFORM: platform,
  });
}

/** The floor: a bare round-robin proxy. */
function startFloor(upstreams: Upstreams): Promise<Target> {
  return child('floor', ['floor', ...upstreams.endpoints.map((e) => e.openaiBaseURL)], {});
}

function child(name: string, args: string[], env: Record<string, string>): Promise<Target> {
  const proc = spawn(
    process.execPath,
    ['-r', TS_REGISTER, join(__dirname, 'gateway-child.ts'), ...args],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name}: not ready after 60 s`)), 60_000);
    proc.once('exit', (code) => reject(new Error(`${name} exited (${code})`)));
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /READY (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout!.resume();
      resolve({
        name,
        url: `http://127.0.0.1:${m[1]}/v1/chat/completions`,
        headers: {},
        child: proc,
      });
    });
  });
}

/** Waits until the target answers a chat completion. */
async function ready(target: Target): Promise<void> {
  const until = Date.now() + 30_000;
  let last: unknown;
  while (Date.now() < until) {
    if (target.child.exitCode !== null) throw new Error(`${target.name} exited`);
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer bench',
          ...target.headers,
        },
        body: BODY,
      });
      const text = await res.text();
      if (res.ok) return;
      last = `${res.status} ${text.slice(0, 300)}`;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${target.name} did not answer: ${String(last)}`);
}

async function measure(
  target: Target,
  seconds: number,
  connections: number,
): Promise<GatewayRound> {
  const before = cpuMs(target.child.pid!);
  const result = await load(target, { seconds }, connections);
  const after = cpuMs(target.child.pid!);
  const requests = result.requests.total;
  return {
    rps: requests / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMsPerRequest: requests > 0 ? (after - before) / requests : NaN,
    requests,
    errors: result.errors + result.non2xx,
  };
}

interface AutocannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  errors: number;
  non2xx: number;
}

/** One autocannon run, in its own process: for so many seconds, or so many requests. */
function load(
  target: Target,
  size: { seconds: number } | { amount: number },
  connections: number,
): Promise<AutocannonResult> {
  const args = [
    require.resolve('autocannon/autocannon.js'),
    '-c',
    String(connections),
    ...('seconds' in size ? ['-d', String(size.seconds)] : ['-a', String(size.amount)]),
    '-m',
    'POST',
    '-H',
    'content-type=application/json',
    '-H',
    'authorization=Bearer bench',
    ...Object.entries(target.headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
    '-b',
    BODY,
    '--json',
    target.url,
  ];
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.once('error', reject);
    proc.once('exit', (code) => {
      try {
        resolve(JSON.parse(out) as AutocannonResult);
      } catch {
        reject(new Error(`autocannon exited ${code}: ${out.slice(0, 300)}`));
      }
    });
  });
}

/** CPU time (user + system) of a process so far, ms, from `/proc/<pid>/stat`. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the file, 12 and 13 after the command name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function fmt(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'n/a';
}
