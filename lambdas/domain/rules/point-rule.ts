import type { Batch } from '../../contract';
import type { Finding } from '../types';
import type { Rule } from './rule';

/**
 * A point rule (docs/design.md §6): reads one batch's events and flush windows only (horizon windows
 * are for the window rules). It always judges; its alerts never resolve (a hardware fault stays
 * until the instance is gone), they are re-sent after the cooldown while the batches still show it.
 * Findings in a stable order (by GPU, then code).
 *
 * @typeParam Id - the rule id
 */
export interface PointRule<Id extends string = string> extends Rule<Id, 'batch', Batch, Finding> {}
