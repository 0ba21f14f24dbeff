export * from './api-refusal';
export * from './aws-checks';
export * from './doctor-check';
export * from './host-checks';
export * from './run-doctor';
export * from './sts-caller-identity';
