import { describe, expect, it } from 'vitest';
import { literalSchemaKeys } from '../../lib/literal-schema-keys';

describe('literalSchemaKeys', () => {
  it('writes a computed key of a module const string as that literal key, the same object', () => {
    // Prepare: the shape of an SDK schema module (`@aws-sdk/client-ec2` dist-es/schemas/schemas_0.js)
    const source = [
      'const _M = "Min";',
      'const _eQN = "ec2QueryName";',
      'const _xN = "xmlName";',
      'const _q = "say \\"hi\\"";',
      'export var AcceleratorCount$ = [3, n0, _AC, 0, [_M], [[1, { [_eQN]: `Min`,',
      '                [_xN]: _m, [_q]: 1, [other]: 2 }]]];',
    ].join('\n');

    // Act
    const out = literalSchemaKeys(source);

    // Assess
    expect(out).toContain('{ "ec2QueryName": `Min`,');
    expect(out).toContain('"xmlName": _m, "say \\"hi\\"": 1, [other]: 2 }');
    // Evaluated with the same free variables, both versions give equal objects.
    const evaluate = (text: string): unknown =>
      new Function('n0', '_AC', '_m', 'other', text.replace('export var AcceleratorCount$ = ', 'return '))(
        'ns',
        'AC',
        'm',
        'o',
      );
    expect(evaluate(out)).toEqual(evaluate(source));
  });

  it('leaves a module without computed keys as it is', () => {
    // Prepare / Act / Assess
    const source = 'const _A = "Address";\nexport var A$ = [3, n0, _A, 0, [], []];';
    expect(literalSchemaKeys(source)).toBe(source);
  });
});
