export * from './aggregate';
export * from './errors';
export * from './gpu-sample';
export * from './horizon';
export { THERMAL_THROTTLE_REASONS_MASK } from './window-from-columns';
