export * from './binding';
export * from './cuda-version';
export * from './errors';
export * from './library-path';
export * from './nvml-return';
export * from './nvml-source';
export * from './structs';
