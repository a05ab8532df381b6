import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createSwitchboard, type Switchboard } from 'nestjs-switchboard';
import type { FailureReason } from 'nestjs-switchboard/extend';
import { SimulatedUpstream } from 'nestjs-switchboard/testing';
import { idleClosingServer, type IdleClosingServer } from '../support/idle-closing-server';
import { ask, GPT } from '../support/upstream';
import '../support/quiet-logs';

const IDLE_MS = 1_000;
const CALLS = 20;

/** Every mark-down of every model, as `deployment/model (reason)`. */
function recordMarkDowns(sb: Switchboard): string[] {
  const downs: string[] = [];
  sb.registry.onModelEvent((state, event) => {
    if (event.type === 'down') downs.push(`${state.deployment}/${state.name} (${event.reason})`);
  });
  return downs;
}

/**
 * One turn of I/O: the client puts a socket back in its pool only after the answer's body was
 * handed over, so a call made at once would open a second connection instead of reusing it.
 */
function socketBackInPool(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.each(['end', 'reset'] as const)(
  'a server that closes idle sockets without a hint (%s)',
  (close) => {
    let now = 0;
    let servers: IdleClosingServer[];
    let sb: Switchboard;
    let retries: Array<[number, FailureReason]>;

    beforeEach(async () => {
      now = 0;
      servers = await Promise.all(
        ['a', 'b'].map(() => idleClosingServer({ idleMs: IDLE_MS, clock: () => now, close })),
      );
      retries = [];
      sb = createSwitchboard({
        deployments: servers.map((s, i) => ({
          provider: 'openai' as const,
          name: i === 0 ? 'a' : 'b',
          baseURL: s.baseURL,
          apiKey: 'k',
          models: [{ name: GPT }],
        })),
        failover: { onRetry: (attempt, _delay, reason) => retries.push([attempt, reason]) },
      });
    });
    afterEach(async () => {
      await sb.close();
      await Promise.all(servers.map((s) => s.close()));
    });

    it('costs no mark-down, no failover and no failed call', async () => {
      const downs = recordMarkDowns(sb);
      const outcomes: string[] = [];
      for (let i = 0; i < CALLS; i++) {
        // Every socket the client pools is now idle past the server's limit.
        now += IDLE_MS + 1;
        const c = await sb.chat.completions.create(ask(`call ${i}`)).then(
          (completion) => completion.choices[0]!.message.content,
          (error: Error) => `failed: ${error.message}`,
        );
        outcomes.push(c ?? 'null');
        await socketBackInPool();
      }
      const closedUnder = servers.reduce((n, s) => n + s.stats.closedUnder, 0);
      const answered = servers.reduce((n, s) => n + s.stats.answered, 0);
      const used = servers.filter((s) => s.stats.answered > 0).length;
      expect(downs).toEqual([]);
      expect(outcomes).toEqual(Array.from({ length: CALLS }, () => 'ok'));
      expect(retries).toEqual([]);
      // The race happened on every call but each server's first, which opened the socket.
      expect(closedUnder).toBe(CALLS - used);
      expect(answered).toBe(CALLS);
      for (const d of sb.deployments.values()) expect(d.models.get(GPT)!.isCooling()).toBe(false);
    });

    it('a resend that fails too is the deployment’s: marked down, failed over', async () => {
      const downs = recordMarkDowns(sb);
      const pinned = sb.selectDeployment({ model: GPT, sessionId: 's' }).name;
      const server = servers[pinned === 'a' ? 0 : 1]!;
      await sb.chat.completions.create(ask('warm', { session_id: 's' }));
      await socketBackInPool();
      now += IDLE_MS + 1;
      server.closeNext(1);
      const c = await sb.chat.completions.create(ask('again', { session_id: 's' }));
      expect(c.choices[0]!.message.content).toBe('ok');
      expect(server.stats.closedUnder).toBe(1);
      expect(server.stats.requests).toBe(3);
      expect(downs).toEqual([`${pinned}/${GPT} (connection)`]);
      expect(retries).toEqual([[2, 'connection']]);
    });
  },
);

describe('errors that keep the usual rules', () => {
  it('a refused fresh connection still marks the deployment down and fails over', async () => {
    const upstream = await SimulatedUpstream.start({ deployments: [{ name: 'live' }] });
    const retries: Array<[number, FailureReason]> = [];
    const sb = createSwitchboard({
      deployments: [
        {
          provider: 'openai',
          name: 'dead',
          baseURL: `http://127.0.0.1:${await closedPort()}/v1`,
          apiKey: 'k',
          models: [{ name: GPT }],
        },
        {
          provider: 'openai',
          name: 'live',
          baseURL: upstream.deployment('live').openaiBaseURL,
          apiKey: 'k',
          models: [{ name: GPT }],
        },
      ],
      failover: { onRetry: (attempt, _delay, reason) => retries.push([attempt, reason]) },
    });
    try {
      const downs = recordMarkDowns(sb);
      sb.registry.sessions.set('s', 'dead');
      const c = await sb.chat.completions.create(ask('x', { session_id: 's' }));
      expect(c.choices[0]!.message.content).toContain('x');
      expect(downs).toEqual([`dead/${GPT} (unreachable (connection refused))`]);
      expect(retries).toEqual([[2, 'connection']]);
      expect(upstream.deployment('live').stats.requests).toBe(1);
    } finally {
      await sb.close();
      await upstream.close();
    }
  });

  it('a connection dropped after the answer began still marks down, with no resend', async () => {
    const upstream = await SimulatedUpstream.start({
      deployments: [{ name: 'cut' }, { name: 'fine' }],
    });
    const sb = createSwitchboard({
      deployments: upstream.deployments.map((d) => ({
        provider: 'openai' as const,
        name: d.name,
        baseURL: d.openaiBaseURL,
        apiKey: 'k',
        models: [{ name: GPT }],
      })),
    });
    try {
      const downs = recordMarkDowns(sb);
      sb.registry.sessions.set('s', 'cut');
      upstream.deployment('cut').fail({ kind: 'drop-mid-stream' });
      const c = await sb.chat.completions.create(ask('x', { session_id: 's' }));
      expect(c.choices[0]!.message.content).toContain('x');
      expect(downs).toEqual([`cut/${GPT} (connection)`]);
      expect(upstream.deployment('cut').stats.requests).toBe(1);
      expect(upstream.deployment('fine').stats.requests).toBe(1);
    } finally {
      await sb.close();
      await upstream.close();
    }
  });
});
