import { chatCompletions } from '../../src/providers/openai/chat';
import { readCall, type CallEntry } from '../../src/routing/call-record';

const entry: CallEntry = {
  adapter: chatCompletions,
  op: chatCompletions.operations.create!,
  surface: 'sb.chat.completions',
  opName: 'create',
};
const messages = [{ role: 'user', content: 'hi' }];

describe('readCall', () => {
  it('sends params without switchboard fields as they are, and reads none from them', () => {
    const params = { model: 'gpt-4o-mini', messages, max_tokens: 10 };
    const call = readCall(entry, params);
    expect(call.body).toBe(params);
    expect(call).toMatchObject({ tenant: undefined, sessionId: undefined, fallbacks: true });
    expect(call.tags).toEqual({ lane: 'interactive', tenant: '' });
  });

  it('reads and strips the enumerable switchboard fields, own or inherited', () => {
    const own = readCall(entry, { model: 'gpt-4o-mini', messages, tenant: 'acme', lane: 'batch' });
    expect(own.body).toEqual({ model: 'gpt-4o-mini', messages });
    expect(own).toMatchObject({ tenant: 'acme', tags: { lane: 'batch', tenant: 'acme' } });
    const inherited = Object.assign(Object.create({ session_id: 'user-1' }) as object, {
      model: 'gpt-4o-mini',
      messages,
    });
    expect(readCall(entry, inherited).sessionId).toBe('user-1');
  });

  it('checks a switchboard field it reads: a wrong type is a TypeError', () => {
    expect(() => readCall(entry, { model: 'gpt-4o-mini', messages, tenant: 42 })).toThrow(
      new TypeError('tenant must be a string, got number'),
    );
  });

  it('neither sends nor reads a field the caller made non-enumerable', () => {
    const params = { model: 'gpt-4o-mini', messages };
    Object.defineProperty(params, 'tenant', { value: 42, enumerable: false });
    const call = readCall(entry, params);
    expect(call.tenant).toBeUndefined();
    expect(JSON.parse(JSON.stringify(call.body))).toEqual({ model: 'gpt-4o-mini', messages });
  });
});
