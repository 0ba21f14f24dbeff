export * from './aggregate';
export * from './errors';
export * from './gpu-sample';
