import 'reflect-metadata';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { parseEnv } from 'node:util';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { type INestApplication, type LoggerService } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { loadSwitchboardConfig, SwitchboardConfigError } from 'nestjs-switchboard';
import { MAX_CONFIG_FILE_BYTES, readBoundedFile } from 'nestjs-switchboard/extend';
import { AppModule } from './app.module';
import { apiFastPath } from './gateway/api-fast-path';
import {
  API_BODY_LIMIT,
  bodyRouteOf,
  MARK_DOWN_BODY_LIMIT,
  pathOf,
  readBody,
  type BodyRoute,
} from './gateway/body-routes';
import { gatewayDoor } from './guard/door';
import { refuseExposureWithoutKeys } from './guard/exposure';
import type { GatewayConfig } from './gateway.config';
import type { SimulationOptions } from './simulation/simulation';
import { startPrometheus } from './telemetry/prometheus';
import { startTracing } from './telemetry/tracing';

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** Port to listen on; default `PORT`, else 3000 (0 = any free port). */
  port?: number;
  /** Interface to listen on; default `HOST`, else 127.0.0.1. */
  host?: string;
  /** Always route to simulated deployments, with these settings (tests). */
  simulation?: SimulationOptions;
  /** Nest's logger, or false for none. Default Nest's console logger. */
  logger?: LoggerService | false;
  /**
   * Nest's HTTP platform; default `GATEWAY_PLATFORM`, else express. Under fastify only the API
   * routes (`/v1`) and `/health` are served as under express (the bench compares the two).
   */
  platform?: 'express' | 'fastify';
}

/** A running gateway. */
export interface Gateway {
  app: INestApplication;
  /** `http://host:port`, without trailing slash. */
  url: string;
  /** Stops the gateway, the simulated deployments and the metrics provider. */
  close(): Promise<void>;
}

/** Builds the gateway and starts listening. */
export async function createGateway(options: GatewayOptions = {}): Promise<Gateway> {
  // Before the application is built: the switchboard takes its meter when it is created.
  const prometheus = startPrometheus();
  const tracing = startTracing();
  const platform =
    options.platform ?? (process.env.GATEWAY_PLATFORM === 'fastify' ? 'fastify' : 'express');
  const module = AppModule.forRoot({
    exporter: prometheus.exporter,
    simulation: options.simulation,
  });
  const nestOptions = {
    logger: options.logger ?? undefined,
    bodyParser: false,
    abortOnError: false,
  };
  let app: INestApplication;
  try {
    if (platform === 'fastify') {
      const fastify = await NestFactory.create<NestFastifyApplication>(
        module,
        new FastifyAdapter({ bodyLimit: API_BODY_LIMIT }),
        nestOptions,
      );
      routeBodies(fastify.getHttpAdapter().getInstance());
      app = fastify;
    } else {
      const express = await NestFactory.create<NestExpressApplication>(module, nestOptions);
      // `/V1/...` is no route (fastify's routes are case-exact too): the door's paths are
      // case-exact, and a route it did not recognise must not run. Express's router is built
      // already (its setting would come too late); the routes are added to it at init.
      (
        express.getHttpAdapter().getInstance() as { router: { caseSensitive: boolean } }
      ).router.caseSensitive = true;
      // The API routes get the client's bytes, which go upstream as they came; the mark-down
      // its JSON; every other route no body at all.
      express.useBodyParser('raw', { limit: API_BODY_LIMIT, type: takes('raw') });
      express.useBodyParser('json', {
        limit: MARK_DOWN_BODY_LIMIT,
        type: (req) => takes('json')(req) && isJson(req),
      });
      app = express;
    }
    // Every request passes the door (headers only) before the platform reads any of its body;
    // under express the API routes' requests then go straight to the relay, before its router.
    const fast = platform === 'express' ? apiFastPath(app, API_BODY_LIMIT) : undefined;
    const door = gatewayDoor(app);
    const server = app.getHttpServer() as Server;
    const handlers = server.listeners('request') as RequestListener[];
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) =>
      door(req, res, () => {
        const handle = () => {
          for (const handler of handlers) handler.call(server, req, res);
        };
        if (fast) fast(req, res, handle);
        else handle();
      }),
    );
  } catch (error) {
    await prometheus.shutdown();
    await tracing?.shutdown();
    throw error;
  }
  const config = app.get(ConfigService).getOrThrow<GatewayConfig>('gateway');
  const port = options.port ?? config.port;
  const host = options.host ?? config.host;
  try {
    refuseExposureWithoutKeys(app, host);
    await app.listen(port, host);
  } catch (error) {
    await app.close();
    await prometheus.shutdown();
    await tracing?.shutdown();
    throw error;
  }
  const address = (app.getHttpServer() as Server).address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  const url = `http://${shown.includes(':') ? `[${shown}]` : shown}:${address.port}`;
  let closing: Promise<void> | undefined;
  return {
    app,
    url,
    close: () =>
      (closing ??= (async () => {
        await app.close();
        await prometheus.shutdown();
        await tracing?.shutdown();
      })()),
  };
}

/**
 * Fastify's body parsing as express's above: each route's body as it takes it, within its limit;
 * a body of a route that takes none is not read.
 */
function routeBodies(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (req, payload, done) => {
    const route = bodyRouteOf(req.raw.method, pathOf(req.raw.url));
    if (route === undefined) return done(null, undefined);
    readBody(payload, route.limit).then((body) => {
      if (route.as === 'raw') return done(null, body);
      try {
        done(null, JSON.parse(body.toString('utf8')));
      } catch (error) {
        done(Object.assign(error as Error, { statusCode: 400 }), undefined);
      }
    }, done);
  });
}

/** A body parser's `type` test: the request's route takes its body `as`. */
function takes(as: BodyRoute['as']): (req: IncomingMessage) => boolean {
  return (req) => bodyRouteOf(req.method, pathOf(req.url))?.as === as;
}

function isJson(req: IncomingMessage): boolean {
  const type = req.headers['content-type'];
  return type !== undefined && /^application\/(?:[\w.+-]*\+)?json\b/i.test(type);
}

/** `npm start`: the gateway on :3000 (or `PORT`), printing where everything is. */
export async function main(): Promise<void> {
  // A bad configuration is reported once, as its list of problems, before Nest starts: from inside
  // Nest's injector it would come with Nest's own stack trace first. The environment is read as
  // ConfigModule reads it, `.env` below the real environment.
  let dotenv: NodeJS.Dict<string> = {};
  try {
    // Bounded, and never a FIFO or a device: one of those would hold start-up forever.
    if (existsSync('.env')) dotenv = parseEnv(readBoundedFile('.env', MAX_CONFIG_FILE_BYTES));
  } catch (error) {
    console.error(`.env could not be read: ${(error as Error).message}`);
    process.exitCode = 1;
    return;
  }
  try {
    loadSwitchboardConfig({ ...dotenv, ...process.env });
  } catch (error) {
    if (!(error instanceof SwitchboardConfigError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
    return;
  }
  const gateway = await createGateway();
  // Ctrl-C and SIGTERM close the application: the switchboard, then the simulated deployments.
  gateway.app.enableShutdownHooks();
  const { url } = gateway;
  process.stdout.write(
    [
      '',
      `Switchboard gateway listening on ${url}`,
      `  status page      ${url}/`,
      `  OpenAI API       ${url}/v1/chat/completions   (new OpenAI({ baseURL: '${url}/v1' }))`,
      `                   ${url}/v1/responses, /v1/embeddings, /v1/models`,
      `  Anthropic API    ${url}/v1/messages           (new Anthropic({ baseURL: '${url}' }))`,
      `  state (JSON)     ${url}/switchboard`,
      `  health           ${url}/health`,
      `  metrics          ${url}/metrics`,
      '',
    ].join('\n') + '\n',
  );
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
