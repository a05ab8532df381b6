/**
 * Every TypeScript block of README.md and of docs/*.md, read from the files themselves: each must
 * compile on its own (its imports complete) as an ES module and, where it has no top-level await,
 * as CommonJS; and each is run, against simulated deployments, the sample gateway or nothing at
 * all.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { format } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { Test } from '@nestjs/testing';
import * as ts from 'typescript';
import request from 'supertest';
import { createSwitchboard, Switchboard } from 'nestjs-switchboard';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { createGateway } from '../../sample/main';

const root = resolve(__dirname, '../..');

interface Block {
  /** README.md or docs/<name>.md */
  file: string;
  line: number;
  lang: string;
  code: string;
}

/** The Markdown files whose blocks are checked: the README and every page of docs/. */
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

function fenced(file: string): Block[] {
  const text = readFileSync(join(root, file), 'utf8');
  const out: Block[] = [];
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = fence.exec(text); m !== null; m = fence.exec(text)) {
    out.push({ file, line: text.slice(0, m.index).split('\n').length, lang: m[1]!, code: m[2]! });
  }
  return out;
}

const all = documents.flatMap(fenced);
/** Blocks fenced `ts` are compiled and run; `typescript` ones (they reach real endpoints, such as
 * Azure's with a real credential) are compiled only. */
const blocks = all.filter((b) => b.lang === 'ts');
const compiled = all.filter((b) => b.lang === 'ts' || b.lang === 'typescript');

/** True when the block awaits at its top level (then it is an ES module only). */
function hasTopLevelAwait(code: string): boolean {
  const file = ts.createSourceFile('x.ts', code, ts.ScriptTarget.ES2022, true);
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found || ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) {
      found = true;
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The file a block says it is (`// src/chat.controller.ts` on its first line), if any. */
function namedFile(b: Block): string | undefined {
  return /^\/\/ (?:src\/)?([\w.-]+)\.ts\b/.exec(b.code)?.[1];
}

/**
 * Where a block is compiled: a file of its own next to the sources, or, for a block that names
 * its file, that file in a folder of the document's own, so that the blocks of one document
 * import each other as an app's files do (`import { ChatController } from './chat.controller'`).
 */
function blockPath(b: Block): string {
  const name = b.file.replace(/\W+/g, '-');
  const own = namedFile(b);
  if (own !== undefined) return join(root, 'test', 'readme', `${name}-files`, `${own}.ts`);
  return join(root, 'test', 'readme', `${name}-line-${b.line}.ts`);
}

// Declaration files and sources parsed once for both module systems: parsing the SDKs' and
// Nest's types is most of a compile.
const parsed = new Map<string, ts.SourceFile>();

/**
 * Type-checks the blocks, all in one program, as files of their own next to the sources; returns
 * the diagnostics of the blocks only (the sources they import are checked elsewhere).
 */
function compile(mode: 'esm' | 'cjs', selected: Block[]): string[] {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config as object;
  const options: ts.CompilerOptions = {
    ...ts.parseJsonConfigFileContent(config, ts.sys, root).options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    types: ['node'],
    ...(mode === 'esm'
      ? { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }
      : { module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 }),
  };
  const files = new Map(selected.map((b) => [blockPath(b), b]));
  const host = ts.createCompilerHost(options);
  // As tsc does: JSDoc is parsed where it types JavaScript, not in the SDKs' declaration files.
  host.jsDocParsingMode = ts.JSDocParsingMode.ParseForTypeErrors;
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => {
    const block = files.get(resolve(name));
    if (block !== undefined) return ts.createSourceFile(name, block.code, version);
    const key = `${String(version)}:${name}`;
    let file = parsed.get(key);
    if (file === undefined) {
      file = getSourceFile(name, version, ...rest);
      if (file !== undefined) parsed.set(key, file);
    }
    return file;
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(resolve(name)) || fileExists(name);
  // The folders of the named blocks exist only here.
  const folders = new Set([...files.keys()].map((f) => dirname(f)));
  const directoryExists = host.directoryExists?.bind(host);
  host.directoryExists = (name) => folders.has(resolve(name)) || (directoryExists?.(name) ?? true);
  const program = ts.createProgram([...files.keys()], options, host);
  const out: string[] = [];
  for (const [path, block] of files) {
    const source = program.getSourceFile(path)!;
    for (const d of [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ]) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
      out.push(
        `${block.file}:${block.line + line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      );
    }
  }
  return out;
}

// Jest's require, bound to this file: what the blocks' imports go through.
const jestRequire = require;

/** Runs a block as CommonJS (top-level await allowed) and returns what it exports. */
async function run(block: Block, replace: Record<string, string> = {}) {
  let code = block.code;
  for (const [from, to] of Object.entries(replace)) {
    expect(code).toContain(from);
    code = code.split(from).join(to);
  }
  const js = ts.transpileModule(code, {
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
    },
  }).outputText;
  const exports: Record<string, unknown> = {};
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
    ...args: string[]
  ) => (...values: unknown[]) => Promise<void>;
  // A relative import names another block of the same document; `siblings` holds what each
  // exported, as the app's own files would.
  const siblings = new Map<string, Record<string, unknown>>();
  for (const other of blocks) {
    const own = namedFile(other);
    if (
      own !== undefined &&
      other !== block &&
      other.file === block.file &&
      code.includes(`'./${own}'`)
    ) {
      siblings.set(`./${own}`, await run(other));
    }
  }
  const load = (id: string): unknown => siblings.get(id) ?? jestRequire(id);
  // The block's imports go through Jest's require: nestjs-switchboard maps to src/.
  await new AsyncFunction('require', 'exports', 'module', js)(load, exports, { exports });
  return exports;
}

function find(marker: string): Block {
  const block = blocks.find((b) => b.code.includes(marker));
  if (block === undefined) {
    throw new Error(`no TypeScript block in ${documents.join(', ')} contains ${marker}`);
  }
  return block;
}

/** console.log and process.stdout.write, captured while `fn` runs. */
async function capture(fn: () => Promise<unknown>): Promise<string> {
  let printed = '';
  const log = jest
    .spyOn(console, 'log')
    .mockImplementation((...parts: unknown[]) => void (printed += `${format(...parts)}\n`));
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    printed += String(chunk);
    return true;
  });
  try {
    await fn();
  } finally {
    log.mockRestore();
    write.mockRestore();
  }
  return printed;
}

describe('TypeScript blocks of README.md and docs/*.md', () => {
  let upstream: SimulatedUpstream;
  const env = { ...process.env };

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', latency: 0 },
        { name: 'west', latency: 0 },
        { name: 'sweden', latency: 0 },
        { name: 'foundry1', latency: 0 },
      ],
    });
  });
  afterAll(() => upstream.close());
  afterEach(() => {
    process.env = { ...env };
  });

  it('are all found', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(7);
  });

  it('compile as ES modules, each on its own', () => {
    expect(compiled.some((b) => b.lang === 'typescript')).toBe(true);
    expect(compile('esm', compiled)).toEqual([]);
  });

  it('compile as CommonJS where they have no top-level await', () => {
    const cjs = compiled.filter((b) => !hasTopLevelAwait(b.code));
    expect(cjs.length).toBeGreaterThan(0);
    expect(compile('cjs', cjs)).toEqual([]);
  });

  it('standalone quick start runs', async () => {
    process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
    process.env.WEST_URL = upstream.deployment('west').openaiBaseURL;
    process.env.FOUNDRY_URL = upstream.deployment('foundry1').anthropicBaseURL;
    process.env.AZURE_OPENAI_API_KEY = 'azure-key';
    process.env.FOUNDRY_API_KEY = 'foundry-key';
    const printed = await capture(() => run(find('baseURL: process.env.WEST_URL')));
    expect(printed).toContain('Hello!');
    expect(printed).toContain('Hello, Claude!');
    expect(printed).toContain("'gpt-4o-mini'");
  });

  it('Nest quick start runs offline with the YAML file and the .env above it', async () => {
    const yaml = all.find((b) => b.file === 'README.md' && b.lang === 'yaml')!;
    const dotenv = all.find(
      (b) => b.file === 'README.md' && b.code.includes('SWITCHBOARD_SIMULATE'),
    )!;
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-readme-'));
    try {
      writeFileSync(join(dir, 'switchboard.yaml'), yaml.code);
      // The .env lines, as ConfigModule.forRoot() puts them in process.env; the file is in `dir`.
      for (const line of dotenv.code.trim().split('\n')) {
        const [key, value] = line.split('=') as [string, string];
        process.env[key] = key === 'SWITCHBOARD_CONFIG' ? join(dir, value) : value;
      }
      // Nothing else: no endpoint and no key is set.
      for (const key of Object.keys(process.env)) {
        if (/^(AZURE_OPENAI|FOUNDRY)_/.test(key)) delete process.env[key];
      }
      const { AppModule } = (await run(find('switchboardConfig.asProvider()'))) as {
        AppModule: new () => unknown;
      };
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      try {
        const answer = await request(app.getHttpServer()).get('/chat').query({ q: 'Hello' });
        expect(answer.status).toBe(200);
        expect(answer.text).toContain('Hello');
        const sb = app.get(Switchboard);
        expect(sb.stats()['aoai-eastus']!['gpt-4o-mini']!.rpm).toMatch(/^1\//);
      } finally {
        await app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('health controller answers readiness and liveness through Terminus', async () => {
    process.env.OPENAI_API_KEY = 'unused';
    const { HealthModule } = (await run(find('class HealthController'))) as {
      HealthModule: new () => unknown;
    };
    const moduleRef = await Test.createTestingModule({ imports: [HealthModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const ready = await request(app.getHttpServer()).get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.info.switchboard.status).toBe('up');
      expect(ready.body.info.switchboard.models['gpt-4o-mini']).toEqual({ healthy: 1, total: 1 });
      const live = await request(app.getHttpServer()).get('/health/live');
      expect(live.status).toBe(200);
      expect(live.body.info.switchboard).toEqual({ status: 'up' });
    } finally {
      await app.close();
    }
  });

  it('metrics setup runs', async () => {
    const exported = (await run(find('PrometheusExporter'))) as {
      prometheus: { shutdown(): Promise<void> };
      MetricsController: unknown;
    };
    expect(typeof exported.MetricsController).toBe('function');
    await exported.prometheus.shutdown();
    metrics.disable();
  });

  it('Redis setup runs, carrying on while Redis is unreachable', async () => {
    process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
    process.env.OPENAI_API_KEY = 'unused';
    // Port 9 (discard) on loopback: nothing answers; the switchboard carries on with local state.
    process.env.REDIS_URL = 'redis://127.0.0.1:9';
    await run(find('redisState({'));
  });

  it('"Testing your app" runs', async () => {
    await run(find('east answers 429 once'));
  });

  it('the stream that never starts, of docs/failures.md, runs', async () => {
    await run(find('firstTokenTimeout: 200'));
  });

  /** The block run against a sample gateway on loopback, its URL put where the block has its own. */
  async function runAgainstGateway(marker: string, url: string): Promise<string> {
    const gateway = await createGateway({
      port: 0,
      host: '127.0.0.1',
      simulation: { latencyFactor: 0, chunkDelay: 0 },
      logger: false,
    });
    try {
      return await capture(() => run(find(marker), { [url]: JSON.stringify(gateway.url) }));
    } finally {
      await gateway.close();
    }
  }

  it('the official clients, pointed at the sample gateway, run', async () => {
    const printed = await runAgainstGateway(
      'new Anthropic({ baseURL: gateway',
      "'http://localhost:3000'",
    );
    expect(printed).toMatch(/^Hello!\nStream this, please\.\nHi!\nBye!\n\d+ output tokens\n$/);
  });

  it('the official clients, with a gateway key, run', async () => {
    // The gateway reads its keys from the environment; afterEach restores it.
    process.env.GATEWAY_API_KEYS = 'key-a';
    process.env.GATEWAY_KEY = 'key-a';
    const printed = await runAgainstGateway(
      'process.env.GATEWAY_KEY',
      "'https://llm-gateway.internal.example'",
    );
    expect(printed).toMatch(/gpt-4o-mini.*claude-sonnet-5 end_turn\n$/);
  });

  describe('sb.fetch with the client libraries', () => {
    const deployments = () => [
      {
        provider: 'openai' as const,
        name: 'east',
        baseURL: upstream.deployment('east').openaiBaseURL,
        apiKey: 'azure-key',
        models: [{ name: 'gpt-4o-mini', tpm: 30_000, rpm: 300 }],
      },
    ];

    it('the README block (the AI SDK) runs', async () => {
      const sb = createSwitchboard({ deployments: deployments() });
      (globalThis as { readmeSwitchboard?: Switchboard }).readmeSwitchboard = sb;
      try {
        const printed = await capture(() =>
          run(find('generateText({ model: openai.chat'), {
            'declare const sb: Switchboard;':
              'const sb = (globalThis as unknown as { readmeSwitchboard: Switchboard }).readmeSwitchboard;',
          }),
        );
        expect(printed).toContain('Hello!');
        expect(sb.stats().east!['gpt-4o-mini']!.rpm).toMatch(/^1\//);
      } finally {
        delete (globalThis as { readmeSwitchboard?: Switchboard }).readmeSwitchboard;
        await sb.close();
      }
    });

    it('the AI SDK block of docs/client-libraries.md runs', async () => {
      process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
      process.env.FOUNDRY_URL = upstream.deployment('foundry1').anthropicBaseURL;
      process.env.AZURE_OPENAI_API_KEY = 'azure-key';
      process.env.FOUNDRY_API_KEY = 'foundry-key';
      const printed = await capture(() => run(find('createAnthropic({ apiKey')));
      expect(printed).toContain('Hello!');
      expect(printed).toContain('Hello, Claude!');
      expect(printed).toMatch(/outputTokens/);
    });

    it('the LangChain block of docs/client-libraries.md runs', async () => {
      const { SummaryService } = (await run(find('class SummaryService'))) as {
        SummaryService: new (sb: Switchboard) => {
          summarize(text: string): Promise<string>;
          stream(text: string): AsyncGenerator<string>;
        };
      };
      const sb = createSwitchboard({ deployments: deployments() });
      try {
        const service = new SummaryService(sb);
        expect(await service.summarize('the switchboard')).toContain('the switchboard');
        let streamed = '';
        for await (const part of service.stream('streamed through sb.fetch')) streamed += part;
        expect(streamed).toContain('streamed through sb.fetch');
        expect(sb.stats().east!['gpt-4o-mini']!.rpm).toMatch(/^2\//);
      } finally {
        await sb.close();
      }
    });
  });

  it('the chat UI and the nightly batch job run', async () => {
    process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
    process.env.AZURE_OPENAI_API_KEY = 'azure-key';
    const before = upstream.deployment('east').requests.length;
    const printed = await capture(() => run(find("lane: 'batch'")));
    expect(printed).toBe('Hello! 2\n');
    const sent = upstream.deployment('east').requests.slice(before);
    expect(sent).toHaveLength(3);
    for (const r of sent) expect(r.body).not.toHaveProperty('lane');
  });

  it('are each run by one of the tests above', () => {
    const run = [
      'baseURL: process.env.WEST_URL',
      'switchboardConfig.asProvider()',
      'class ChatController', // imported by the module's block, and run with it
      'class HealthController',
      'PrometheusExporter',
      'redisState({',
      'east answers 429 once',
      'firstTokenTimeout: 200',
      'new Anthropic({ baseURL: gateway',
      'process.env.GATEWAY_KEY',
      'generateText({ model: openai.chat',
      'createAnthropic({ apiKey',
      'class SummaryService',
      "lane: 'batch'",
    ].map(find);
    expect(blocks.filter((b) => !run.includes(b)).map((b) => `${b.file}:${b.line}`)).toEqual([]);
  });
});

describe('README.md starts where a Nest team starts', () => {
  const text = readFileSync(join(root, 'README.md'), 'utf8');
  const lines = text.split('\n');
  const lineOf = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l)) + 1;

  it('reads in five minutes: at most 1 200 words', () => {
    expect(text.split(/\s+/).filter((w) => w !== '').length).toBeLessThanOrEqual(1_200);
  });

  it('goes install, offline quick start, first call, within its first 80 lines', () => {
    const install = lineOf(/^npm install nestjs-switchboard/);
    const simulate = lineOf(/^SWITCHBOARD_SIMULATE=1$/);
    const firstCall = lineOf(/curl .*localhost:3000/);
    expect(install).toBeGreaterThan(0);
    expect(simulate).toBeGreaterThan(install);
    expect(firstCall).toBeGreaterThan(simulate);
    expect(firstCall).toBeLessThanOrEqual(80);
  });

  it('registers the module isGlobal, and injects Switchboard in a file of its own', () => {
    const quickStart = blocks.filter((b) => b.file === 'README.md' && namedFile(b) !== undefined);
    const module = quickStart.find((b) => b.code.includes('SwitchboardModule.forRootAsync'))!;
    expect(module.code).toContain('isGlobal: true');
    const injecting = quickStart.filter((b) => /private readonly sb: Switchboard/.test(b.code));
    expect(injecting.length).toBeGreaterThan(0);
    for (const b of injecting) expect(b).not.toBe(module);
    // The internals live in docs/, linked from the README.
    expect(lines.findIndex((l) => /^#+ How it decides/.test(l))).toBe(-1);
    expect(text).toContain('(docs/how-it-decides.md)');
  });
});
