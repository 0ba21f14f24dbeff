/** The measure types live with the stored columns in the domain (`lambdas/domain/measure-types.ts`); re-exported for the adapters. */
export * from '../domain/measure-types';
