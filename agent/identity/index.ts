export * from './imds';
export * from './resolve-identity';
