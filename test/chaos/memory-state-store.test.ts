import { describeStateStoreContract } from '../lambdas/state-conformance';
import { MemoryStateStore } from './memory-state-store';

describeStateStoreContract('MemoryStateStore (the fuzz runs’ fake)', async () => ({
  store: new MemoryStateStore(),
}));
