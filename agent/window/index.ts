export * from './aggregate';
export * from './errors';
export * from './gpu-sample';
export * from './horizon';
export {
  isPowerThrottle,
  isThermalThrottle,
  POWER_THROTTLE_REASONS_MASK,
  THERMAL_THROTTLE_REASONS_MASK,
} from './window-from-columns';
