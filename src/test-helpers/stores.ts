/** Every store the service runs on, for tests of the service's ports: PostgreSQL, PGlite and the memory store of `vrai replay`. */
import type { Store } from "../service/ports";
import { createMemoryStore } from "../store/memory-store";
import { createSqlStore } from "../store/sql-store";
import { createMigratedTestDb, TEST_STORES } from "./db";

export type StoreSetup = { name: string; open(): Promise<{ store: Store; close(): Promise<void> }> };

/** Each opens a fresh, migrated store; `close()` drops it. */
export const EVERY_STORE: readonly StoreSetup[] = [
  ...TEST_STORES.map(({ name, create }) => ({
    name,
    async open() {
      const testDb = await createMigratedTestDb(create);
      return { store: createSqlStore(testDb.db), close: () => testDb.drop() };
    },
  })),
  { name: "memory", open: async () => ({ store: createMemoryStore(), close: async () => undefined }) },
];
