import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';

/**
 * The AWS SDK's schema modules (`@aws-sdk/client-*\/dist-es/schemas/schemas_<n>.js`, one per client,
 * every shape of every operation): their shapes are `export var X$ = [...]` arrays whose member
 * traits are objects with computed keys (`{ [_eQN]: "Min" }`, `_eQN` a module `const` string).
 * esbuild cannot prove a computed key free of side effects, so it keeps every shape of the module:
 * 553 kB of EC2's 3,400 shapes for the 5 operations the ingest calls, ≈ 28 MB of RSS when the first
 * batch of a new instance loads them (BENCHMARKS.md, 2026-11-28).
 */
const SCHEMA_MODULE = /@aws-sdk[\\/][^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/;

/**
 * Rewrites each computed key `[_name]:` of a schema module whose `_name` is a module-level
 * `const _name = "…";` into the literal key `"…":` — the same object, so esbuild keeps only the
 * shapes the bundle reaches. Any other computed key is left as it is.
 *
 * @param text - the module's source
 * @returns the source with those keys literal
 */
export function literalSchemaKeys(text: string): string {
  const strings = new Map<string, string>();
  for (const m of text.matchAll(/^const (_\w+) = ("(?:[^"\\\n]|\\.)*");$/gm))
    strings.set(m[1] as string, m[2] as string);
  return text.replace(/\[(_\w+)\]:/g, (key, name: string) => {
    const literal = strings.get(name);
    return literal === undefined ? key : `${literal}:`;
  });
}

/**
 * An esbuild plugin applying {@link literalSchemaKeys} to the AWS SDK's schema modules as they load.
 *
 * @returns the plugin
 */
export function literalSchemaKeysPlugin(): Plugin {
  return {
    name: 'literal-schema-keys',
    setup(build) {
      build.onLoad({ filter: SCHEMA_MODULE }, async (args) => ({
        contents: literalSchemaKeys(await readFile(args.path, 'utf8')),
        loader: 'js',
      }));
    },
  };
}
