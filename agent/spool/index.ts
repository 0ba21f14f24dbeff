export * from './crc32';
export * from './errors';
export * from './segment-format';
export * from './spool';
export * from './spool-cursor';
export * from './spooling-sender';
