export * from './agent-config-options';
export * from './agent-config-schema';
export * from './agent-config-source';
export * from './constants';
export * from './errors';
export * from './load-agent-config';
export * from './render-agent-config-docs';
