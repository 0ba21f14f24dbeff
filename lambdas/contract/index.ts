export * from './constants';
export * from './diagnoses';
export * from './errors';
export * from './field-rules';
export * from './parse-batch';
export * from './pci-bus-id';
export * from './schema';
export * from './timestamps';
