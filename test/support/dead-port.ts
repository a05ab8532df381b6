import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago and has nothing listening on it: a
 * connection to it is refused.
 *
 * @example
 * ```ts
 * const baseURL = `http://127.0.0.1:${await deadPort()}/openai/v1/`;
 * ```
 */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
