/**
 * Child process of the benchmark: hosts the simulated deployments, so that the parent's CPU time
 * is the client's alone. Answers each IPC command with `{ id, ok, result | error }`; exits when
 * the parent disconnects.
 */
import { UpstreamHost, type Command } from './upstreams';

const host = new UpstreamHost();

process.on('message', (message: Command & { id: number }) => {
  const { id } = message;
  host.run(message).then(
    (result) => process.send?.({ id, ok: true, result }),
    (error: unknown) =>
      process.send?.({
        id,
        ok: false,
        error: error instanceof Error ? error.message : String(error),
      }),
  );
});

process.on('disconnect', () => {
  void host.run({ cmd: 'close' }).finally(() => process.exit(0));
});
