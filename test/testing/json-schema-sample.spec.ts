import { sampleJsonSchema, sampleRegex } from '../../src/testing/wire/json-schema-sample';

describe('sampleJsonSchema', () => {
  it('covers refs, unions, nullable types and constraints', () => {
    const schema = {
      type: 'object',
      $defs: {
        Item: { type: 'object', properties: { n: { type: 'integer', exclusiveMinimum: 3 } } },
      },
      properties: {
        item: { $ref: '#/$defs/Item' },
        list: { type: 'array', items: { $ref: '#/$defs/Item' }, minItems: 2 },
        either: { anyOf: [{ type: 'string', enum: ['x', 'y'] }, { type: 'null' }] },
        nullable: { type: ['null', 'number'], minimum: 5, multipleOf: 4 },
        all: {
          allOf: [{ properties: { a: { const: 1 } } }, { properties: { b: { type: 'boolean' } } }],
        },
        short: { type: 'string', maxLength: 3 },
        long: { type: 'string', minLength: 9 },
        date: { type: 'string', format: 'date' },
        tuple: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] },
        described: { type: 'number', description: 'Age\n\n{minimum: 18, maximum: 30}' },
      },
      required: ['item'],
    };
    expect(sampleJsonSchema(schema)).toEqual({
      item: { n: 4 },
      list: [{ n: 4 }, { n: 4 }],
      either: 'x',
      nullable: 8,
      all: { a: 1, b: true },
      short: 'str',
      long: 'stringxxx',
      date: '2024-01-01',
      tuple: ['string', 0],
      described: 18,
    });
  });

  it('terminates recursive schemas', () => {
    const schema = {
      type: 'object',
      properties: { value: { type: 'number' }, next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
      required: ['value', 'next'],
    };
    let node = sampleJsonSchema(schema, { maxDepth: 4 }) as { next: unknown } | null;
    let depth = 0;
    while (node) {
      node = node.next as { next: unknown } | null;
      depth++;
    }
    expect(depth).toBeGreaterThan(1);
    expect(depth).toBeLessThan(10);
  });

  it('samples simple regular expressions', () => {
    for (const pattern of ['^[A-Z]{3}-\\d+$', '^(?:ab|cd)+[^a-z]?x{2,4}$', '^\\w+@\\w+\\.com$']) {
      expect(sampleRegex(pattern)).toMatch(new RegExp(pattern));
    }
  });
});
