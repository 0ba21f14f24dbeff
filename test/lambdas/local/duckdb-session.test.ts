import { afterEach, describe, expect, it } from 'vitest';
import { DuckDbSession } from '../../../lambdas/local/duckdb-session';

let session: DuckDbSession | undefined;

afterEach(async () => {
  await session?.close();
  session = undefined;
});

const open = async (): Promise<DuckDbSession> => {
  session = await DuckDbSession.open(':memory:');
  await session.serial(
    () => session?.exec('CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR)') as Promise<void>,
  );
  return session;
};

describe('DuckDbSession prepared statements', () => {
  it('re-binds one statement at each run and answers with the values of that run', async () => {
    // Prepare
    const db = await open();
    const upsert = 'INSERT INTO kv VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v';

    // Act
    const read = await db.serial(async () => {
      for (let i = 0; i < 5; i++) await db.exec(upsert, [i % 2, `v${i}`]);
      return db.rows('SELECT k, v FROM kv WHERE k >= ? ORDER BY k', [0]);
    });

    // Assess
    expect(read).toEqual([
      { k: 0, v: 'v4' },
      { k: 1, v: 'v3' },
    ]);
  });

  it('keeps working past its bound of kept statements (the oldest are freed)', async () => {
    // Prepare
    const db = await open();

    // Act: 300 distinct statements, more than the 128 kept, then the first ones again
    const read = await db.serial(async () => {
      for (let i = 0; i < 300; i++) await db.exec(`INSERT INTO kv VALUES (?, ?) -- ${i}`, [i, `v${i}`]);
      await db.exec('INSERT INTO kv VALUES (?, ?) -- 0', [1000, 'again']);
      return db.rows('SELECT count(*) AS n, max(k) AS top FROM kv WHERE k >= ?', [0]);
    });

    // Assess
    expect(read).toEqual([{ n: 301, top: 1000 }]);
  });

  it('runs a statement again after a run of it failed, and throws the driver error for SQL that does not prepare', async () => {
    // Prepare
    const db = await open();
    const insert = 'INSERT INTO kv VALUES (?, ?)';

    // Act
    const duplicate = await db.serial(async () => {
      await db.exec(insert, [1, 'a']);
      return db.exec(insert, [1, 'b']).then(
        () => 'stored',
        (e: Error) => e.message,
      );
    });
    await db.serial(() => db.exec(insert, [2, 'c']));
    const bad = db.serial(() => db.exec('INSERT INTO no_such_table VALUES (?)', [1]));

    // Assess
    expect(duplicate).toMatch(/Constraint|duplicate key/i);
    await expect(bad).rejects.toThrow(/no_such_table/);
    expect(await db.serial(() => db.rows('SELECT k, v FROM kv WHERE k > ? ORDER BY k', [0]))).toEqual([
      { k: 1, v: 'a' },
      { k: 2, v: 'c' },
    ]);
  });
});
