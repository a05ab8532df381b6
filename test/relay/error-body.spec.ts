import OpenAI from 'openai';
import { heldBackError } from '../../src/quota/no-room';
import { retryHeaders } from '../../src/errors/retry-headers';
import {
  anthropicErrorBody,
  anthropicErrorType,
  errorBody,
  openaiErrorBody,
  openaiErrorType,
} from '../../src/relay/error-body';
import {
  anthropicErrorBody as simulatedAnthropicBody,
  openaiErrorBody as simulatedOpenaiBody,
} from 'nestjs-switchboard/testing';
import { callBody, hasSwitchboardFields, SWITCHBOARD_FIELDS } from '../../src/routing/call-params';

describe('error bodies', () => {
  it("name Anthropic's types as its errors page lists them", () => {
    const table: Record<number, string> = {
      400: 'invalid_request_error',
      401: 'authentication_error',
      402: 'billing_error',
      403: 'permission_error',
      404: 'not_found_error',
      409: 'conflict_error',
      413: 'request_too_large',
      418: 'invalid_request_error',
      429: 'rate_limit_error',
      500: 'api_error',
      502: 'api_error',
      503: 'api_error',
      504: 'timeout_error',
      529: 'overloaded_error',
    };
    for (const [status, type] of Object.entries(table)) {
      expect([status, anthropicErrorType(Number(status))]).toEqual([status, type]);
    }
  });

  it('name OpenAI types by status, 5xx as server errors', () => {
    expect(openaiErrorType(404)).toBe('invalid_request_error');
    expect(openaiErrorType(429)).toBe('rate_limit_error');
    expect(openaiErrorType(503)).toBe('server_error');
    expect(openaiErrorBody({ status: 429, message: 'wait' }).error.code).toBe(
      'rate_limit_exceeded',
    );
    expect(openaiErrorBody({ status: 429, message: 'wait', code: null }).error.code).toBeNull();
  });

  it('are the same for the relay and the simulated deployments', () => {
    for (const status of [400, 401, 403, 404, 413, 429, 500, 503, 529]) {
      expect(simulatedAnthropicBody(status, 'm')).toEqual(
        errorBody('anthropic', { status, message: 'm' }),
      );
      expect(simulatedOpenaiBody(status, 'm').error.type).toBe(openaiErrorType(status));
    }
    expect(simulatedAnthropicBody(529, 'Overloaded', 'req_1')).toEqual(
      anthropicErrorBody({ status: 529, message: 'Overloaded', requestId: 'req_1' }),
    );
    expect(simulatedOpenaiBody(429, 'tpm', { type: 'tokens' }).error).toEqual({
      message: 'tpm',
      type: 'tokens',
      param: null,
      code: 'rate_limit_exceeded',
    });
  });
});

describe('retry headers', () => {
  it("of the switchboard's own 429 are the gateway's, uncapped", () => {
    const error = heldBackError(
      OpenAI.RateLimitError,
      'switchboard_tenant_limit',
      'over',
      3_600_500,
    );
    const { headers } = error as unknown as { headers: Headers };
    const expected = retryHeaders(3_600_500, Infinity);
    expect(expected).toEqual({ 'retry-after': '3601', 'retry-after-ms': '3600500' });
    expect({
      'retry-after': headers.get('retry-after'),
      'retry-after-ms': headers.get('retry-after-ms'),
    }).toEqual(expected);
  });
});

describe("the switchboard's own body fields", () => {
  it('are each taken out of the body, and only they', () => {
    const values: Record<string, unknown> = {
      session_id: 's',
      fallbacks: false,
      lane: 'batch',
      tenant: 'acme',
      tags: ['eu'],
      cache: false,
    };
    expect(Object.keys(values).sort()).toEqual([...SWITCHBOARD_FIELDS].sort());
    for (const field of SWITCHBOARD_FIELDS) {
      const params = { model: 'm', messages: [], [field]: values[field] };
      expect(hasSwitchboardFields(params)).toBe(true);
      expect(callBody('sb', 'create', params)).toEqual({ model: 'm', messages: [] });
    }
    const plain = { model: 'm', messages: [] };
    expect(hasSwitchboardFields(plain)).toBe(false);
    expect(callBody('sb', 'create', plain)).toBe(plain);
  });
});
