/**
 * Values that would fail every call later are refused when the switchboard is built, each with
 * its field named: a `baseURL` on a port `fetch` blocks, a key holding a control character (its
 * value never shown), a duration Node's timers cannot hold. The blocked list is checked against
 * Node's own `fetch`.
 */
import {
  createSwitchboard,
  parseSwitchboardConfig,
  SwitchboardError,
  type SwitchboardOptions,
} from 'nestjs-switchboard';
import { FETCH_BLOCKED_PORTS, MAX_TIMER_MS } from '../../src/config/value-checks';

const SECRET = 'sk-proj-secretvalue0123';

function deployment(fields: Record<string, unknown> = {}, model: Record<string, unknown> = {}) {
  return {
    provider: 'openai',
    name: 'east',
    baseURL: 'http://127.0.0.1:8080/v1/',
    apiKey: 'k',
    models: [{ name: 'gpt-4o-mini', ...model }],
    ...fields,
  };
}

function refusal(options: unknown): string {
  try {
    const sb = createSwitchboard(options as SwitchboardOptions);
    void sb.close();
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchboardError);
    return (error as Error).message;
  }
  throw new Error('built');
}

describe('a baseURL on a port fetch blocks', () => {
  it.each([9, 6000, 10080])('port %i is refused at construction, with the reason', (port) => {
    const message = refusal({
      deployments: [deployment({ baseURL: `http://127.0.0.1:${port}/v1/` })],
    });
    expect(message).toContain(`deployments[0].baseURL names port ${port}, which fetch refuses`);
  });

  it('is refused for an anthropic deployment and in a configuration file too', () => {
    const yaml = [
      'deployments:',
      '  - provider: anthropic',
      '    name: foundry',
      '    baseURL: https://foundry.example:6667/anthropic/',
      '    apiKey: k',
      '    models: [{ name: claude-sonnet-5 }]',
    ].join('\n');
    expect(() => parseSwitchboardConfig(yaml, { source: 'sb.yaml' })).toThrow(
      /deployments\[0\]\.baseURL names port 6667/,
    );
  });

  it("the list is fetch's own: each of its ports fails at once with 'bad port', port 2 does not", async () => {
    for (const port of FETCH_BLOCKED_PORTS) {
      const error = await fetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e);
      expect(String((error as { cause?: unknown }).cause)).toContain('bad port');
    }
    const open = await fetch('http://127.0.0.1:2/').catch((e: unknown) => e);
    expect(String((open as { cause?: unknown }).cause)).not.toContain('bad port');
  });
});

describe('a key holding a control character', () => {
  it.each(['\r\n', '\n', '\u0000', '\t'])(
    '%j in a key is refused at construction; the message holds no part of the key',
    (control) => {
      const message = refusal({
        deployments: [deployment({ apiKey: `${SECRET}${control}x-injected: 1` })],
      });
      expect(message).toContain('deployments[0].apiKey holds a control character');
      expect(message).not.toContain('secretvalue');
      expect(message).not.toContain('injected');
    },
  );

  it('is refused from a configuration file, the key never quoted', () => {
    const json = JSON.stringify({ deployments: [deployment({ apiKey: '${EAST_KEY}' })] });
    let message = '';
    try {
      parseSwitchboardConfig(json, {
        source: 'sb.json',
        format: 'json',
        env: { EAST_KEY: `${SECRET}\r\n` },
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('deployments[0].apiKey holds a control character');
    expect(message).not.toContain('secretvalue');
  });
});

describe('durations', () => {
  it.each([
    [{ timeout: MAX_TIMER_MS + 1 }, {}, 'deployments[0].timeout'],
    [{}, { cooldown: 1e10 }, 'deployments[0].models[0].cooldown'],
    [{}, { firstTokenTimeout: 2 ** 31 }, 'deployments[0].models[0].firstTokenTimeout'],
  ])('above 2^31 - 1 ms are refused with the field named (%j %j)', (fields, model, path) => {
    const message = refusal({ deployments: [deployment(fields, model)] });
    expect(message).toContain(`${path} must be at most ${MAX_TIMER_MS} ms`);
  });

  it('of the options too: queue, failover delay, window, maxCooldown', () => {
    const message = refusal({
      deployments: [deployment()],
      queue: { maxWait: 2 ** 32 },
      failover: { delay: 2 ** 31 },
      ratelimitWindow: 1e12,
      maxCooldown: 1e12,
      streamIdleTimeout: 1e12,
    });
    for (const path of [
      'queue.maxWait',
      'failover.delay',
      'ratelimitWindow',
      'maxCooldown',
      'streamIdleTimeout',
    ]) {
      expect(message).toContain(`${path} must be at most ${MAX_TIMER_MS} ms`);
    }
  });

  it('2^31 - 1 ms itself is accepted', async () => {
    const sb = createSwitchboard({
      deployments: [deployment({ timeout: MAX_TIMER_MS })] as SwitchboardOptions['deployments'],
    });
    await sb.close();
  });
});
