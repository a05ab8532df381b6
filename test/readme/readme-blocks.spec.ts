/**
 * Every TypeScript block of README.md, read from the README itself: each must compile on its own
 * (its imports complete) as an ES module and, where it has no top-level await, as CommonJS; and
 * each is run, against simulated deployments, the sample gateway or nothing at all.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { format } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { Test } from '@nestjs/testing';
import * as ts from 'typescript';
import request from 'supertest';
import { SimulatedUpstream } from '../../src/testing';
import { createGateway } from '../../sample/main';

const root = resolve(__dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

interface Block {
  line: number;
  lang: string;
  code: string;
}

function fenced(): Block[] {
  const out: Block[] = [];
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = fence.exec(readme); m !== null; m = fence.exec(readme)) {
    out.push({ line: readme.slice(0, m.index).split('\n').length, lang: m[1]!, code: m[2]! });
  }
  return out;
}

const blocks = fenced().filter((b) => b.lang === 'ts');

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

/** Type-checks the blocks as files of their own next to the sources; returns the diagnostics. */
function compile(mode: 'esm' | 'cjs', selected: Block[]): string[] {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config as object;
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    types: ['node'],
    ...(mode === 'esm'
      ? { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }
      : { module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 }),
  };
  const files = new Map(
    selected.map((b) => [join(root, 'test', 'readme', `readme-line-${b.line}.ts`), b.code]),
  );
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => {
    const text = files.get(resolve(name));
    return text !== undefined
      ? ts.createSourceFile(name, text, version)
      : getSourceFile(name, version, ...rest);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(resolve(name)) || fileExists(name);
  const program = ts.createProgram([...files.keys()], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file !== undefined && files.has(resolve(d.file.fileName)))
    .map((d) => {
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      const block = Number(/readme-line-(\d+)/.exec(d.file!.fileName)![1]);
      return `README.md:${block + line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

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
  // The block's imports go through Jest's require: nestjs-switchboard maps to src/.
  await new AsyncFunction('require', 'exports', 'module', js)(require, exports, { exports });
  return exports;
}

function find(marker: string): Block {
  const block = blocks.find((b) => b.code.includes(marker));
  if (block === undefined) throw new Error(`no TypeScript block in README.md contains ${marker}`);
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

describe('README.md TypeScript blocks', () => {
  let upstream: SimulatedUpstream;
  const env = { ...process.env };

  beforeAll(async () => {
    upstream = await SimulatedUpstream.start({
      deployments: [
        { name: 'east', latency: 0 },
        { name: 'west', latency: 0 },
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
    expect(compile('esm', blocks)).toEqual([]);
  });

  it('compile as CommonJS where they have no top-level await', () => {
    const cjs = blocks.filter((b) => !hasTopLevelAwait(b.code));
    expect(cjs.length).toBeGreaterThan(0);
    expect(compile('cjs', cjs)).toEqual([]);
  });

  it('standalone quick start runs', async () => {
    process.env.EAST_URL = upstream.deployment('east').openaiBaseURL;
    process.env.WEST_URL = upstream.deployment('west').openaiBaseURL;
    process.env.FOUNDRY_URL = upstream.deployment('foundry1').anthropicBaseURL;
    process.env.AZURE_OPENAI_API_KEY = 'azure-key';
    process.env.FOUNDRY_API_KEY = 'foundry-key';
    const printed = await capture(() => run(find("name: 'foundry1'")));
    expect(printed).toContain('Hello!');
    expect(printed).toContain('Hello, Claude!');
    expect(printed).toContain("'gpt-4o-mini'");
  });

  it('Nest quick start runs with the YAML file above it', async () => {
    const yaml = fenced().find((b) => b.lang === 'yaml' && b.code.includes('deployments:'))!;
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-readme-'));
    try {
      writeFileSync(join(dir, 'switchboard.yaml'), yaml.code);
      process.env.SWITCHBOARD_CONFIG = join(dir, 'switchboard.yaml');
      // `${endpoint}/openai/v1/` in the file: the endpoint is the deployment's own path.
      const origin = (name: string) => dirname(upstream.deployment(name).anthropicBaseURL);
      process.env.AZURE_OPENAI_EAST_ENDPOINT = origin('east');
      process.env.AZURE_OPENAI_WEST_ENDPOINT = origin('west');
      process.env.FOUNDRY_ENDPOINT = origin('foundry1');
      process.env.AZURE_OPENAI_EAST_API_KEY = 'east-key';
      process.env.AZURE_OPENAI_WEST_API_KEY = 'west-key';
      process.env.FOUNDRY_API_KEY = 'foundry-key';
      const { AppModule, ChatService } = (await run(find('class ChatService'))) as {
        AppModule: new () => unknown;
        ChatService: new (...args: never[]) => {
          ask(q: string, s?: string): Promise<string>;
          askClaude(q: string): Promise<string>;
        };
      };
      const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
      await app.init();
      try {
        const chat = app.get(ChatService);
        expect(await chat.ask('Hello from the README', 'user-1')).toContain(
          'Hello from the README',
        );
        expect(await chat.askClaude('Hi Claude')).toContain('Hi Claude');
      } finally {
        await app.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('health controller answers through Terminus', async () => {
    process.env.OPENAI_API_KEY = 'unused';
    const { HealthModule } = (await run(find('class HealthController'))) as {
      HealthModule: new () => unknown;
    };
    const moduleRef = await Test.createTestingModule({ imports: [HealthModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const res = await request(app.getHttpServer()).get('/health');
      expect(res.status).toBe(200);
      expect(res.body.info.switchboard.status).toBe('up');
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
    await run(find("from 'nestjs-switchboard/testing'"));
  });

  it('the official clients, pointed at the sample gateway, run', async () => {
    const gateway = await createGateway({
      port: 0,
      host: '127.0.0.1',
      simulation: { latencyFactor: 0, chunkDelay: 0 },
      logger: false,
    });
    try {
      const printed = await capture(() =>
        run(find('new Anthropic({ baseURL: gateway'), {
          "'http://localhost:3000'": JSON.stringify(gateway.url),
        }),
      );
      expect(printed).toMatch(/^Hello!\nStream this, please\.\nHi!\nBye!\n\d+ output tokens\n$/);
    } finally {
      await gateway.close();
    }
  });

  it('are each run by one of the tests above', () => {
    const run = [
      "name: 'foundry1'",
      'class ChatService',
      'class HealthController',
      'PrometheusExporter',
      'redisState({',
      "from 'nestjs-switchboard/testing'",
      'new Anthropic({ baseURL: gateway',
    ].map((m) => find(m).line);
    expect(blocks.map((b) => b.line).filter((l) => !run.includes(l))).toEqual([]);
  });
});
