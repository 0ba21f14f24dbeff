import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  RemediationBudget,
  RemediationRecord,
  RemediationReservationRequest,
  StateStore,
} from '../../lambdas/domain/ports';

/** What a conformance run needs: a fresh, empty state store, and how to dispose of it. */
export type MakeStateStore = () => Promise<{ store: StateStore; close?: () => Promise<void> }>;

const replace = (instance_id: string, at: string, asg_name = 'p5-train'): RemediationRecord => ({
  instance_id,
  asg_name,
  action: 'replace',
  at,
  rule: 'xid_fatal',
});

const BUDGET: RemediationBudget = { groupLimit: 2, fleetLimit: 3, windowS: 3600 };

const reserve = (record: RemediationRecord, budget: RemediationBudget | undefined = BUDGET) =>
  ({
    record,
    ...(budget === undefined ? {} : { budget }),
    leaseS: 900,
  }) satisfies RemediationReservationRequest;

/**
 * The `StateStore` contract (ports.ts), read back through the store itself: one remediation per
 * instance, group history since a time, earliest broken mark kept, alert claims with cooldown.
 *
 * @param name - adapter name shown in the test report
 * @param makeStore - makes a fresh, empty store per test
 */
export function describeStateStoreContract(name: string, makeStore: MakeStateStore): void {
  describe(`StateStore contract: ${name}`, () => {
    let store: StateStore;
    let close: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      const made = await makeStore();
      store = made.store;
      close = made.close;
    });

    afterEach(async () => {
      await close?.();
    });

    it('returns undefined for an instance never remediated', async () => {
      // Act
      const record = await store.getRemediation('i-0000000000000000a');

      // Assess
      expect(record).toBeUndefined();
    });

    it('records the first remediation of an instance and refuses the second', async () => {
      // Prepare
      const first = replace('i-0000000000000000a', '2026-03-10T12:00:00Z');
      const second: RemediationRecord = { ...first, at: '2026-03-10T12:05:00Z', rule: 'ecc_dbe' };

      // Act
      const won = await store.putRemediationIfAbsent(first);
      const lost = await store.putRemediationIfAbsent(second);

      // Assess
      expect([won, lost]).toEqual([true, false]);
      expect(await store.getRemediation('i-0000000000000000a')).toEqual(first);
    });

    it('records a quarantine without a group', async () => {
      // Prepare
      const record: RemediationRecord = {
        instance_id: 'i-0000000000000000b',
        action: 'quarantine',
        at: '2026-03-10T12:00:00.000Z',
        rule: 'gpu_lost',
      };

      // Act
      const won = await store.putRemediationIfAbsent(record);

      // Assess
      expect(won).toBe(true);
      expect(await store.getRemediation('i-0000000000000000b')).toEqual(record);
    });

    it('lists the replacements of a group since a time', async () => {
      // Prepare
      await store.putRemediationIfAbsent(replace('i-0000000000000000a', '2026-03-10T10:00:00.000Z'));
      await store.putRemediationIfAbsent(replace('i-0000000000000000b', '2026-03-10T11:30:00.000Z'));
      await store.putRemediationIfAbsent(replace('i-0000000000000000c', '2026-03-10T11:45:00.000Z'));
      await store.putRemediationIfAbsent(
        replace('i-0000000000000000d', '2026-03-10T11:50:00.000Z', 'other-group'),
      );

      // Act
      const recent = await store.listRemediations('p5-train', new Date('2026-03-10T11:00:00Z'));

      // Assess
      expect(recent.map((r) => r.instance_id).sort()).toEqual(['i-0000000000000000b', 'i-0000000000000000c']);
      expect(recent.find((r) => r.instance_id === 'i-0000000000000000b')).toEqual(
        replace('i-0000000000000000b', '2026-03-10T11:30:00.000Z'),
      );
    });

    it('keeps the earliest broken mark of a GPU', async () => {
      // Prepare
      await store.markBroken('i-0000000000000000a', '3', '2026-03-10T12:00:00.000Z');
      await store.markBroken('i-0000000000000000a', '3', '2026-03-10T12:10:00.000Z');
      await store.markBroken('i-0000000000000000a', '3', '2026-03-10T11:50:00.000Z');
      await store.markBroken('i-0000000000000000a', '*', '2026-03-10T12:20:00.000Z');
      await store.markBroken('i-0000000000000000b', '0', '2026-03-10T12:00:00.000Z');

      // Act
      const broken = await store.getBrokenSince('i-0000000000000000a');

      // Assess
      expect(new Map(broken)).toEqual(
        new Map([
          ['3', '2026-03-10T11:50:00.000Z'],
          ['*', '2026-03-10T12:20:00.000Z'],
        ]),
      );
    });

    it('returns an empty map for an instance with no broken GPU', async () => {
      // Act
      const broken = await store.getBrokenSince('i-0000000000000000f');

      // Assess
      expect(broken.size).toBe(0);
    });

    it.each([
      { case: 'never sent', previous: undefined, at: '2026-03-10T12:00:00.000Z', expected: true },
      {
        case: 'inside the cooldown',
        previous: '2026-03-10T11:50:00.000Z',
        at: '2026-03-10T12:00:00.000Z',
        expected: false,
      },
      {
        case: 'exactly at the cooldown',
        previous: '2026-03-10T11:30:00.000Z',
        at: '2026-03-10T12:00:00.000Z',
        expected: true,
      },
      {
        case: 'after the cooldown',
        previous: '2026-03-10T11:00:00.000Z',
        at: '2026-03-10T12:00:00.000Z',
        expected: true,
      },
    ])('claims an alert $case: $expected', async ({ previous, at, expected }) => {
      // Prepare
      if (previous !== undefined)
        expect(await store.claimAlert('xid_fatal:i-0000000000000000a:3', previous, 1800)).toBe(true);

      // Act
      const claimed = await store.claimAlert('xid_fatal:i-0000000000000000a:3', at, 1800);

      // Assess
      expect(claimed).toBe(expected);
    });

    it('lets only one of two simultaneous claims win', async () => {
      // Act
      const results = await Promise.all([
        store.claimAlert('ecc_dbe:i-0000000000000000a:0', '2026-03-10T12:00:00.000Z', 1800),
        store.claimAlert('ecc_dbe:i-0000000000000000a:0', '2026-03-10T12:00:00.000Z', 1800),
      ]);

      // Assess
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('keeps a granted reservation pending (invisible) until it is confirmed', async () => {
      // Prepare
      const record = replace('i-0000000000000000a', '2026-03-10T12:00:00.000Z');

      // Act
      const granted = await store.reserveRemediation(reserve(record));
      const pending = await store.getRemediation(record.instance_id);
      if (!granted.granted) throw new Error('expected a granted reservation');
      await store.confirmRemediation(record, granted.leaseId);

      // Assess
      expect(pending).toBeUndefined();
      expect(await store.getRemediation(record.instance_id)).toEqual(record);
      expect(await store.listRemediations('p5-train', new Date('2026-03-10T11:00:00Z'))).toEqual([record]);
    });

    it.each([
      { case: 'a confirmed one', confirm: true, at: '2026-03-10T13:00:00.000Z', reason: 'remediated' },
      { case: 'a live lease', confirm: false, at: '2026-03-10T12:10:00.000Z', reason: 'in_progress' },
    ])('refuses a second reservation of an instance with $case', async ({ confirm, at, reason }) => {
      // Prepare
      const first = replace('i-0000000000000000a', '2026-03-10T12:00:00.000Z');
      const granted = await store.reserveRemediation(reserve(first));
      if (confirm && granted.granted) await store.confirmRemediation(first, granted.leaseId);

      // Act
      const second = await store.reserveRemediation(reserve({ ...first, at }));

      // Assess
      expect(second).toEqual({ granted: false, reason });
    });

    it('lets another invocation take over an expired lease', async () => {
      // Prepare
      const first = replace('i-0000000000000000a', '2026-03-10T12:00:00.000Z');
      await store.reserveRemediation(reserve(first));

      // Act: 900 s later the holder is gone (a Lambda runs at most 900 s)
      const later = await store.reserveRemediation(reserve({ ...first, at: '2026-03-10T12:15:00.001Z' }));

      // Assess
      expect(later.granted).toBe(true);
    });

    it('frees the record and the budget slots of a released reservation', async () => {
      // Prepare
      const a = replace('i-0000000000000000a', '2026-03-10T12:00:00.000Z');
      const b = replace('i-0000000000000000b', '2026-03-10T12:00:01.000Z');
      const c = replace('i-0000000000000000c', '2026-03-10T12:00:02.000Z');
      const one = { ...BUDGET, groupLimit: 1 };
      const granted = await store.reserveRemediation(reserve(a, one));
      const refused = await store.reserveRemediation(reserve(b, one));
      if (!granted.granted) throw new Error('expected a granted reservation');

      // Act
      await store.releaseRemediation(a, granted.leaseId);
      const after = await store.reserveRemediation(reserve(c, one));

      // Assess
      expect(refused).toEqual({ granted: false, reason: 'group_budget', used: 1, limit: 1 });
      expect(after.granted).toBe(true);
      expect(await store.getRemediation(a.instance_id)).toBeUndefined();
      expect((await store.reserveRemediation(reserve(a, undefined))).granted).toBe(true);
    });

    it('refuses a replacement over the group budget until the window has passed', async () => {
      // Prepare
      for (const [id, at] of [
        ['i-0000000000000000a', '2026-03-10T12:00:00.000Z'],
        ['i-0000000000000000b', '2026-03-10T12:30:00.000Z'],
      ] as const) {
        expect((await store.reserveRemediation(reserve(replace(id, at)))).granted).toBe(true);
      }

      // Act
      const inside = await store.reserveRemediation(
        reserve(replace('i-0000000000000000c', '2026-03-10T12:59:59.000Z')),
      );
      const after = await store.reserveRemediation(
        reserve(replace('i-0000000000000000c', '2026-03-10T13:00:00.000Z')),
      );

      // Assess
      expect(inside).toEqual({ granted: false, reason: 'group_budget', used: 2, limit: 2 });
      expect(after.granted).toBe(true);
    });

    it('refuses a replacement over the fleet budget, across groups', async () => {
      // Prepare: 3 replacements in 3 groups spend the fleet budget of 3
      for (const g of ['g1', 'g2', 'g3']) {
        const r = replace(`i-00000000000000${g}0`.slice(0, 19), '2026-03-10T12:00:00.000Z', g);
        expect((await store.reserveRemediation(reserve(r))).granted).toBe(true);
      }

      // Act
      const fourth = await store.reserveRemediation(
        reserve(replace('i-0000000000000000d', '2026-03-10T12:01:00.000Z', 'g4')),
      );

      // Assess
      expect(fourth).toEqual({ granted: false, reason: 'fleet_budget', used: 3, limit: 3 });
    });

    it('keeps a reboot apart from the replacement: its own record, its own budgets, repeatable after its window', async () => {
      // Prepare
      const reboot = (id: string, at: string, asg_name?: string): RemediationRecord => ({
        instance_id: id,
        ...(asg_name === undefined ? {} : { asg_name }),
        action: 'reboot',
        at,
        rule: 'xid_reset',
      });
      const request = (r: RemediationRecord) => ({ ...reserve(r, BUDGET), repeatAfterS: 3600 });
      const a = reboot('i-0000000000000000a', '2026-03-10T12:00:00.000Z', 'p5-train');
      const granted = await store.reserveRemediation(request(a));
      const pending = await store.getLastReboot(a.instance_id);
      if (!granted.granted) throw new Error('expected a granted reboot');
      await store.confirmRemediation(a, granted.leaseId);
      const confirmed = await store.getLastReboot(a.instance_id);
      const noReplacement = await store.getRemediation(a.instance_id);

      // Act
      const again = await store.reserveRemediation(request({ ...a, at: '2026-03-10T12:20:00.000Z' }));
      const b = await store.reserveRemediation(
        request(reboot('i-0000000000000000b', '2026-03-10T12:01:00.000Z', 'p5-train')),
      );
      const overGroup = await store.reserveRemediation(
        request(reboot('i-0000000000000000c', '2026-03-10T12:02:00.000Z', 'p5-train')),
      );
      const outside = await store.reserveRemediation(
        request(reboot('i-0000000000000000d', '2026-03-10T12:03:00.000Z')),
      );
      const overFleet = await store.reserveRemediation(
        request(reboot('i-0000000000000000e', '2026-03-10T12:04:00.000Z')),
      );
      const replacement = await store.reserveRemediation(
        reserve(replace(a.instance_id, '2026-03-10T12:30:00.000Z')),
      );
      const later = await store.reserveRemediation(request({ ...a, at: '2026-03-10T13:00:00.000Z' }));

      // Assess
      expect(pending).toBeUndefined();
      expect(confirmed).toEqual(a);
      expect(noReplacement).toBeUndefined();
      expect(again).toEqual({ granted: false, reason: 'remediated' });
      expect(b.granted).toBe(true);
      expect(overGroup).toEqual({ granted: false, reason: 'group_budget', used: 2, limit: 2 });
      expect(outside.granted).toBe(true);
      expect(overFleet).toEqual({ granted: false, reason: 'fleet_budget', used: 3, limit: 3 });
      expect(replacement.granted).toBe(true);
      expect(later.granted).toBe(true);
      expect(await store.listRemediations('p5-train', new Date('2026-03-10T11:00:00Z'))).toEqual([]);
    });

    it('keeps the latest fault of each instance per scope and reads back the ones inside the window, oldest first', async () => {
      // Act
      await store.recordFault('asg#p5-train', 'i-0000000000000000b', '2026-03-10T12:00:10.000Z', 600);
      await store.recordFault('asg#p5-train', 'i-0000000000000000a', '2026-03-10T12:00:10.000Z', 600);
      await store.recordFault('asg#other', 'i-0000000000000000c', '2026-03-10T12:00:20.000Z', 600);
      await store.recordFault('asg#p5-train', 'i-0000000000000000d', '2026-03-10T11:50:00.000Z', 600);
      await store.recordFault('asg#p5-train', 'i-0000000000000000a', '2026-03-10T12:05:00.000Z', 600);
      const late = await store.recordFault(
        'asg#p5-train',
        'i-0000000000000000a',
        '2026-03-10T12:01:00.000Z',
        600,
      );
      const now = await store.recordFault(
        'asg#p5-train',
        'i-0000000000000000e',
        '2026-03-10T12:05:00.000Z',
        600,
      );

      // Assess
      expect(late).toEqual([{ instance_id: 'i-0000000000000000b', at: '2026-03-10T12:00:10.000Z' }]);
      expect(now).toEqual([
        { instance_id: 'i-0000000000000000b', at: '2026-03-10T12:00:10.000Z' },
        { instance_id: 'i-0000000000000000a', at: '2026-03-10T12:05:00.000Z' },
        { instance_id: 'i-0000000000000000e', at: '2026-03-10T12:05:00.000Z' },
      ]);
    });

    it('reserves a quarantine without spending any budget', async () => {
      // Prepare
      const record: RemediationRecord = {
        instance_id: 'i-0000000000000000e',
        action: 'quarantine',
        at: '2026-03-10T12:00:00.000Z',
        rule: 'gpu_lost',
      };

      // Act
      const granted = await store.reserveRemediation(
        reserve(record, { ...BUDGET, groupLimit: 0, fleetLimit: 0 }),
      );

      // Assess
      expect(granted.granted).toBe(true);
    });

    it('grants no more replacements than the budget to 20 concurrent reservations in one group', async () => {
      // Prepare
      const records = Array.from({ length: 20 }, (_, i) =>
        replace(`i-${String(i).padStart(17, '0')}`, `2026-03-10T12:00:${String(i).padStart(2, '0')}.000Z`),
      );

      // Act
      const answers = await Promise.all(records.map((r) => store.reserveRemediation(reserve(r))));

      // Assess
      expect(answers.filter((a) => a.granted)).toHaveLength(BUDGET.groupLimit);
      expect(answers.filter((a) => !a.granted).map((a) => !a.granted && a.reason)).toEqual(
        Array(20 - BUDGET.groupLimit).fill('group_budget'),
      );
    });

    it('gives back a released claim so the next send is claimed, but keeps a later claim', async () => {
      // Prepare
      const id = 'escalation:i-0000000000000000a';
      await store.claimAlert(id, '2026-03-10T12:00:00.000Z', 3600);

      // Act
      await store.releaseAlert(id, '2026-03-10T12:00:00.000Z');
      const again = await store.claimAlert(id, '2026-03-10T12:00:10.000Z', 3600);
      await store.releaseAlert(id, '2026-03-10T12:00:00.000Z');
      const third = await store.claimAlert(id, '2026-03-10T12:00:20.000Z', 3600);

      // Assess
      expect([again, third]).toEqual([true, false]);
    });

    it('counts the cooldown from the last successful claim, not from refused ones', async () => {
      // Prepare
      await store.claimAlert('fake_load:i-0000000000000000a:1', '2026-03-10T12:00:00.000Z', 600);
      await store.claimAlert('fake_load:i-0000000000000000a:1', '2026-03-10T12:05:00.000Z', 600);

      // Act
      const claimed = await store.claimAlert(
        'fake_load:i-0000000000000000a:1',
        '2026-03-10T12:10:00.000Z',
        600,
      );

      // Assess
      expect(claimed).toBe(true);
    });

    const ALERT = 'xid_fatal:i-0000000000000000a:0#xid79';
    const T0 = '2026-03-10T12:00:00.000Z';
    const at = (s: number): string => new Date(Date.parse(T0) + s * 1000).toISOString();

    it.each([
      { case: 'never sent', steps: [], leaseAt: 0, expected: true },
      {
        case: 'confirmed within the cooldown',
        steps: ['lease@0', 'confirm@0'],
        leaseAt: 60,
        expected: false,
      },
      {
        case: 'confirmed before the cooldown',
        steps: ['lease@0', 'confirm@0'],
        leaseAt: 1800,
        expected: true,
      },
      {
        case: 'released after a failed publish',
        steps: ['lease@0', 'release@0'],
        leaseAt: 5,
        expected: true,
      },
      { case: 'held by another invocation', steps: ['lease@0'], leaseAt: 5, expected: false },
      { case: 'abandoned by a crashed invocation', steps: ['lease@0'], leaseAt: 121, expected: true },
    ])('leases an alert $case: $expected', async ({ steps, leaseAt, expected }) => {
      // Prepare
      for (const step of steps) {
        const [op, s] = step.split('@') as [string, string];
        const time = at(Number(s));
        if (op === 'lease') expect(await store.leaseAlert(ALERT, time, 1800, 120)).toBe(true);
        if (op === 'confirm') await store.confirmAlert(ALERT, time, 1800);
        if (op === 'release') await store.releaseAlertLease(ALERT, time);
      }

      // Act
      const leased = await store.leaseAlert(ALERT, at(leaseAt), 1800, 120);

      // Assess
      expect(leased).toBe(expected);
    });

    it('lets only one of two simultaneous leases win', async () => {
      // Act
      const results = await Promise.all([
        store.leaseAlert(ALERT, T0, 1800, 120),
        store.leaseAlert(ALERT, T0, 1800, 120),
      ]);

      // Assess
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('leaves a lease taken over by another invocation alone when the first releases late', async () => {
      // Prepare: the first lease is abandoned, the second takes over
      await store.leaseAlert(ALERT, at(0), 1800, 120);
      await store.leaseAlert(ALERT, at(200), 1800, 120);

      // Act
      await store.releaseAlertLease(ALERT, at(0));

      // Assess: the second still holds it
      expect(await store.leaseAlert(ALERT, at(201), 1800, 120)).toBe(false);
    });

    const firing = (alert_id: string, since: string) => ({
      instance_id: 'i-0000000000000000a',
      alert_id,
      rule: 'tensor_idle' as const,
      severity: 'info' as const,
      instance_type: 'p5.48xlarge',
      since,
      summary: 'job x: GPUs 0,1 leave the tensor cores idle',
    });

    it('lists the firing alerts of an instance, keeping the first since', async () => {
      // Prepare
      await store.putFiringAlert(firing('tensor_idle:i-0000000000000000a', T0));
      await store.putFiringAlert(firing('tensor_idle:i-0000000000000000a', at(60)));
      await store.putFiringAlert(firing('fake_load:i-0000000000000000a', at(30)));
      await store.putFiringAlert({
        ...firing('fake_load:i-0000000000000000b', T0),
        instance_id: 'i-0000000000000000b',
      });

      // Act
      const list = await store.listFiringAlerts('i-0000000000000000a');

      // Assess
      expect(list).toEqual([
        firing('fake_load:i-0000000000000000a', at(30)),
        firing('tensor_idle:i-0000000000000000a', T0),
      ]);
    });

    it('takes a firing alert once', async () => {
      // Prepare
      await store.putFiringAlert(firing('tensor_idle:i-0000000000000000a', T0));

      // Act
      const results = await Promise.all([
        store.takeFiringAlert('i-0000000000000000a', 'tensor_idle:i-0000000000000000a'),
        store.takeFiringAlert('i-0000000000000000a', 'tensor_idle:i-0000000000000000a'),
      ]);

      // Assess
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await store.listFiringAlerts('i-0000000000000000a')).toEqual([]);
    });

    it('keeps the earliest idle mark and clears it', async () => {
      // Prepare
      await store.markIdle('i-0000000000000000a', '0', at(60));
      await store.markIdle('i-0000000000000000a', '0', T0);
      await store.markIdle('i-0000000000000000a', '0', at(120));
      await store.markIdle('i-0000000000000000a', '1', at(30));

      // Act
      const before = await store.getIdleSince('i-0000000000000000a');
      await store.clearIdle('i-0000000000000000a', '1');
      await store.clearIdle('i-0000000000000000a', '7');
      const after = await store.getIdleSince('i-0000000000000000a');

      // Assess
      expect([...before]).toEqual([
        ['0', T0],
        ['1', at(30)],
      ]);
      expect([...after]).toEqual([['0', T0]]);
    });

    it('reads broken marks, idle marks and firing alerts of one instance in one call, as the three reads do', async () => {
      // Prepare: state of two instances, and a remediation record in the same partition
      await store.markBroken('i-0000000000000000a', '3', at(30));
      await store.markBroken('i-0000000000000000a', '*', T0);
      await store.markIdle('i-0000000000000000a', '0', at(60));
      await store.putFiringAlert(firing('tensor_idle:i-0000000000000000a', T0));
      await store.putFiringAlert(firing('fake_load:i-0000000000000000a', at(30)));
      await store.putRemediationIfAbsent(replace('i-0000000000000000a', T0));
      await store.markBroken('i-0000000000000000b', '1', T0);
      await store.markIdle('i-0000000000000000b', '2', T0);

      // Act
      const state = await store.getInstanceState('i-0000000000000000a');
      const empty = await store.getInstanceState('i-00000000000000000');

      // Assess
      expect(new Map(state.broken)).toEqual(new Map(await store.getBrokenSince('i-0000000000000000a')));
      expect(new Map(state.broken)).toEqual(
        new Map([
          ['3', at(30)],
          ['*', T0],
        ]),
      );
      expect([...state.idle]).toEqual([['0', at(60)]]);
      expect(state.firing).toEqual(await store.listFiringAlerts('i-0000000000000000a'));
      expect(state.firing).toHaveLength(2);
      expect({ broken: [...empty.broken], idle: [...empty.idle], firing: empty.firing }).toEqual({
        broken: [],
        idle: [],
        firing: [],
      });
    });
  });
}
