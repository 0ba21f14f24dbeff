export * from './constants';
export * from './errors';
export * from './parse-batch';
export * from './schema';
export * from './timestamps';
