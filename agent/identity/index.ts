export * from './imds';
export * from './pci-bus-id';
export * from './resolve-identity';
