import crypto from "node:crypto";
import path from "node:path";
import pg from "pg";
import type { PGlite } from "@electric-sql/pglite";
import { lockDataDir, type DataDirLock } from "./data-dir";
import { migrate, migrationsDigest } from "./migrate";
import { derivedClusterCache, openPglite, type ClusterCache } from "./pglite-cluster";
import { InvalidInputError } from "../errors";
import { DatabaseUnavailableError, storeError } from "./errors";

/**
 * How a statement is planned on PostgreSQL. By default a parameterised statement is prepared once per
 * connection, and after five executions PostgreSQL may keep one generic plan for it, costed on the
 * table sizes of that moment. `planEach: true` sends it unprepared, so it is planned for each execution
 * on the sizes of then: for a statement whose best plan changes as a table grows from empty (a day
 * partition of check-ins: a sequential scan while it holds one page, its index once it holds more; a
 * generic plan made on the empty partition kept scanning it all day). PGlite ignores it.
 */
export type QueryOptions = { planEach?: boolean };

/** Anything that runs one parameterised SQL statement. */
export type Queryable = {
  query<Row = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<{ rows: Row[]; rowCount: number }>;
};

/** A database: PostgreSQL through `pg`, or the embedded PGlite; the same SQL serves both. */
export type Db = Queryable & {
  readonly kind: "pg" | "pglite";
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * PostgreSQL only (PGlite belongs to one process, so nothing else can change it): listens on
   * `channel` on a connection of its own, reconnecting after a loss.
   */
  listen?(channel: string, handlers: ListenHandlers): { close(): Promise<void> };
  close(): Promise<void>;
};

export type ListenHandlers = {
  /** A notification; `fromThisDb` when one of this Db's own connections sent it. */
  notify(payload: string, fromThisDb: boolean): void;
  /** True once listening; false when the connection is lost (notifications sent meanwhile are missed). */
  listening(on: boolean): void;
};

/** How long a lost listening connection waits before it connects again. */
const RELISTEN_DELAY_MS = 1000;

// int8 (OID 20) and numeric (OID 1700) as JS numbers: every bigint column here holds Unix seconds or counts
// well inside Number.MAX_SAFE_INTEGER. PGlite already returns numbers.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/** Distinct statement texts given a name (so prepared statements per connection stay bounded). */
const MAX_NAMED_STATEMENTS = 1000;
const statementNames = new Map<string, string | null>();

/**
 * The name a parameterised statement is prepared under on each connection (`pg` then parses and
 * plans it once per connection instead of on every execution): derived from the SQL text, so every
 * instance and connection agree. Statements with `*` in their select list are left unnamed: a
 * prepared `SELECT *` fails with "cached plan must not change result type" once a migration adds a
 * column to its table while the server runs.
 */
function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined) {
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return undefined;
    name =
      /(?:\bSELECT\s+(?:DISTINCT\s+)?|\w\.)\*/i.test(sql) || /\bRETURNING\s+\*/i.test(sql)
        ? null
        : `vrai_${crypto.createHash("sha256").update(sql).digest("hex").slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return name ?? undefined;
}

/** One server named by a connection string. */
type PgHost = { host: string; port: number };

const DEFAULT_PG_PORT = 5432;

const hostText = (h: PgHost) => `${h.host.includes(":") ? `[${h.host}]` : h.host}:${h.port}`;

function parseHost(text: string): PgHost {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text);
  if (!match)
    throw new InvalidInputError(
      "invalid_configuration",
      `invalid configuration: DATABASE_URL: cannot read host "${text}" of a multi-host URL`,
    );
  return { host: match[1] ?? match[2], port: match[3] === undefined ? DEFAULT_PG_PORT : Number(match[3]) };
}

/** What `target_session_attrs` of a multi-host URL may ask for: the service writes, so only the primary will do. */
const WRITABLE_SESSION_ATTRS = new Set(["read-write", "primary"]);

/**
 * A libpq multi-host URL (`postgres://[user@]h1:p1,h2:p2/db?...`, as `pg_autoctl show uri` prints it): its hosts
 * in order, and the URL of the first with everything else kept (node-postgres reads one host, and has no
 * `target_session_attrs`: the connections of a Db find the primary themselves). Null for a URL of one host.
 * @example parseMultiHostUrl("postgres://127.0.0.1:6001,127.0.0.1:6002/postgres?target_session_attrs=read-write")
 * // { hosts: [{ host: "127.0.0.1", port: 6001 }, { host: "127.0.0.1", port: 6002 }], url: "postgres://127.0.0.1:6001/postgres" }
 */
export function parseMultiHostUrl(connectionString: string): { hosts: PgHost[]; url: string } | null {
  const match = /^(postgres(?:ql)?:\/\/)(?:([^/?#]*)@)?([^/?#@]*)([^?#]*)(?:\?([^#]*))?$/.exec(connectionString);
  if (!match?.[3].includes(",")) return null;
  const [, scheme, userinfo, hostList, dbPath, query] = match;
  const hosts = hostList.split(",").map(parseHost);
  const params = new URLSearchParams(query ?? "");
  const attrs = params.get("target_session_attrs");
  if (attrs !== null && !WRITABLE_SESSION_ATTRS.has(attrs)) {
    throw new InvalidInputError(
      "invalid_configuration",
      `invalid configuration: DATABASE_URL: target_session_attrs=${attrs}: the service writes, so it needs read-write (or primary)`,
    );
  }
  params.delete("target_session_attrs");
  const rest = params.toString();
  return { hosts, url: `${scheme}${userinfo === undefined ? "" : `${userinfo}@`}${hostText(hosts[0])}${dbPath}${rest ? `?${rest}` : ""}` };
}

/** A standby answers true (it replays the primary's WAL); the primary false. */
const RECOVERY_SQL = "SELECT pg_is_in_recovery() AS standby";
/** How long the search for the primary waits for one host to answer before it asks the next. */
const PROBE_TIMEOUT_MS = 3000;

/** Which of several hosts is the primary: remembered until a connection to it fails, then searched for again. */
type PrimaryLocator = { find(): Promise<PgHost>; lost(host: PgHost): void };

function createPrimaryLocator(url: string, hosts: readonly PgHost[]): PrimaryLocator {
  let known: PgHost | null = null;
  let searching: Promise<PgHost> | null = null;
  /** "primary", "standby", or why the host could not be asked. */
  const probe = async (target: PgHost): Promise<string> => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
    client.host = target.host;
    client.port = target.port;
    client.on("error", () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ standby: boolean }>(RECOVERY_SQL);
      return rows[0].standby ? "standby" : "primary";
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  // In the URL's order, as libpq tries them; one search at a time, shared by every connection waiting for it.
  const search = async () => {
    const answers: string[] = [];
    for (const target of hosts) {
      const answer = await probe(target);
      if (answer === "primary") {
        known = target;
        return target;
      }
      answers.push(`${hostText(target)}: ${answer}`);
    }
    throw new DatabaseUnavailableError(`no primary among the database's hosts (${answers.join("; ")})`);
  };
  return {
    find: () => {
      if (known) return Promise.resolve(known);
      searching ??= search().finally(() => {
        searching = null;
      });
      return searching;
    },
    lost(target) {
      if (known === target) known = null;
    },
  };
}

/**
 * The pg.Client of a multi-host URL: it connects to the primary the locator finds and checks that it is
 * one (a standby that answers is refused); a failed connection sends the next one searching again.
 */
function primaryClientClass(locator: PrimaryLocator): typeof pg.Client {
  return class PrimaryClient extends pg.Client {
    connect(): Promise<pg.Client>;
    connect(callback: (err: Error | null) => void): void;
    connect(callback?: (err: Error | null) => void): Promise<pg.Client> | undefined {
      const connected = (async () => {
        const target = await locator.find();
        this.host = target.host;
        this.port = target.port;
        this.on("error", () => locator.lost(target));
        try {
          await super.connect();
          const { rows } = await this.query<{ standby: boolean }>(RECOVERY_SQL);
          if (rows[0].standby) throw new DatabaseUnavailableError(`${hostText(target)} is a standby`);
          return this;
        } catch (error) {
          locator.lost(target);
          await this.end().catch(() => undefined);
          throw error;
        }
      })();
      if (!callback) return connected;
      connected.then(
        () => callback(null),
        (error: Error) => callback(error),
      );
    }
  };
}

/** How a Db reaches PostgreSQL: the URL node-postgres reads, and the client class that connects there. */
type PgTarget = { url: string; Client: typeof pg.Client };

function pgTarget(connectionString: string): PgTarget {
  const multi = parseMultiHostUrl(connectionString);
  if (!multi) return { url: connectionString, Client: pg.Client };
  return { url: multi.url, Client: primaryClientClass(createPrimaryLocator(multi.url, multi.hosts)) };
}

/**
 * A client on `connectionString` (not yet connected); with several hosts, one that connects to the primary.
 * @example const client = createPgClient(databaseUrl, { application_name: "vrai-indexer" }); await client.connect();
 */
export function createPgClient(connectionString: string, config: Omit<pg.ClientConfig, "connectionString"> = {}): pg.Client {
  const target = pgTarget(connectionString);
  return new target.Client({ ...config, connectionString: target.url });
}

/** Throws what `error` means to the store's callers (an unreachable server: DatabaseUnavailableError, HTTP 503). */
const fail = (error: unknown): never => {
  throw storeError(error);
};

/**
 * Opens a PostgreSQL pool on `connectionString`. A multi-host URL (`postgres://h1:p1,h2:p2/db`) connects to
 * whichever host is the primary, and after a failover to the new one; while none is reachable, queries fail
 * with DatabaseUnavailableError.
 */
export function createPgDb(connectionString: string, options: { max?: number } = {}): Db {
  // Pipeline mode: a query is written as soon as it is issued, not after the previous one's answer,
  // so a transaction's BEGIN travels with its first statement (one round trip fewer per transaction).
  const target = pgTarget(connectionString);
  const pool = new pg.Pool({
    connectionString: target.url,
    Client: target.Client,
    max: options.max ?? 20,
    types: pgTypes as pg.CustomTypesConfig,
    pipeline: true,
  });
  pool.on("error", () => {
    // An idle client lost its connection; the pool replaces it. Queries in flight get their own error.
  });
  // Backend process ids of the pool's connections: a notification names the backend that sent it.
  const ownBackends = new Set<number>();
  const backendOf = (client: pg.PoolClient) => (client as unknown as { processID: number | null }).processID;
  pool.on("remove", (client) => void ownBackends.delete(backendOf(client) as number));
  pool.on("connect", (client) => {
    const backend = backendOf(client);
    if (backend !== null) ownBackends.add(backend);
    // Large values (score inputs and results, 3-5 kB each) are compressed with LZ4 instead of pglz:
    // several times cheaper to write and read; the values are the same. Servers without LZ4 (or
    // before PostgreSQL 14) refuse the setting and keep pglz. Queued ahead of the client's first query.
    client.query("SET default_toast_compression = 'lz4'").catch(() => undefined);
  });
  const run = async (q: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[], options?: QueryOptions) => {
    const name = params && params.length > 0 && !options?.planEach ? statementName(sql) : undefined;
    const result = await (name ? q.query({ name, text: sql, values: params as unknown[] }) : q.query(sql, params as unknown[]));
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: "pg",
    query: (sql, params, options) => run(pool, sql, params, options).catch(fail) as never,
    async transaction(fn) {
      const client = await pool.connect().catch(fail);
      try {
        // Not awaited: the transaction's first statement is written right behind it, in the same
        // round trip. BEGIN fails only when the connection does (and then so does every statement
        // after it); its error, if any, fails the transaction before COMMIT.
        const begin = client.query("BEGIN");
        begin.catch(() => undefined);
        const result = await fn({ query: (sql, params, options) => run(client, sql, params, options).catch(fail) as never });
        await begin;
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        return fail(error);
      } finally {
        client.release();
      }
    },
    listen(channel, handlers) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
      let current: pg.Client | null = null;
      let closed = false;
      let retry: NodeJS.Timeout | undefined;
      const lost = (client: pg.Client) => {
        if (current !== client) return;
        current = null;
        handlers.listening(false);
        client.end().catch(() => undefined);
        if (!closed) retry = setTimeout(connect, RELISTEN_DELAY_MS).unref();
      };
      const connect = async () => {
        const client = new target.Client({ connectionString: target.url });
        current = client;
        client.on("notification", (n) => handlers.notify(n.payload ?? "", ownBackends.has(n.processId)));
        client.on("error", () => lost(client));
        client.on("end", () => lost(client));
        try {
          await client.connect();
          await client.query(`LISTEN ${channel}`);
          if (current === client) handlers.listening(true);
        } catch {
          lost(client);
        }
      };
      void connect();
      return {
        async close() {
          closed = true;
          clearTimeout(retry);
          const client = current;
          current = null;
          if (client) await client.end().catch(() => undefined);
        },
      };
    },
    close: () => pool.end(),
  };
}

/** Who opens a store, for what another process is told when it finds the data directory held, and where notices go. */
export type OpenOptions = {
  /** What holds a PGlite data directory, as another process's refusal names it (e.g. "vrai dev"). */
  holder?: string;
  /** Told one line when something about the data directory was fixed (it was open to other users). */
  notice?: (line: string) => void;
  /** The data directory's lock, when the caller took it before (`vrai dev`, before its chain starts) and releases it after the store closes. */
  lock?: DataDirLock;
};

let newStore: ClusterCache | undefined;
/**
 * The cluster a new PGlite store starts from, kept (`src/store/pglite-cluster.ts`): the empty one with every migration
 * applied, named by their digest, so that a new store's first `migrate` finds nothing to apply. Applying them cost a new
 * process about 2 s of CPU (its WebAssembly cold), at every first start on a new data directory or in memory. The rows
 * of `schema_migrations` say when the kept cluster was migrated.
 */
const newStoreCluster = (): ClusterCache =>
  (newStore ??= derivedClusterCache(`new-store-${migrationsDigest().slice(0, 16)}`, async (lite) => void (await migrate(pgliteDb(lite)))));

/**
 * Opens the embedded PGlite store; `dataDir` of `memory://` keeps everything in memory. A directory
 * is this process's alone while it is open, and private to its user (`src/store/data-dir.ts`). A new
 * cluster, in a new directory or in memory, is unpacked from a kept new store, migrated (`newStoreCluster`).
 * @throws DataDirInUseError when another live process has it open
 */
export async function createPgliteDb(dataDir: string, options: OpenOptions = {}): Promise<Db> {
  if (dataDir.startsWith("memory://")) return pgliteDb((await openPglite(undefined, newStoreCluster())).lite);
  const dir = path.resolve(dataDir);
  // Named as given (`./data`) in what another process is told. A lock the caller took stays the caller's to release.
  const lock = options.lock ?? lockDataDir(dataDir, options.holder ?? "");
  const done = () => {
    if (options.lock === undefined) lock.release();
  };
  if (lock.madePrivate !== null) {
    options.notice?.(
      `data directory ${dataDir} was open to other users (mode ${lock.madePrivate.toString(8).padStart(4, "0")}): made private (directories 0700, files 0600)`,
    );
  }
  let lite: PGlite;
  try {
    lite = (await openPglite(dir, newStoreCluster())).lite;
    lock.secure();
  } catch (error) {
    done();
    throw error;
  }
  const db = pgliteDb(lite);
  return {
    ...db,
    async close() {
      try {
        await db.close();
      } finally {
        done();
      }
    },
  };
}

/** The store's `Db` over an open PGlite; `close()` closes it. */
export function pgliteDb(lite: PGlite): Db {
  const wrap = (q: Pick<PGlite, "query">): Queryable => ({
    async query(sql, params) {
      const result = await q.query(sql, params as unknown[]);
      return { rows: result.rows as never[], rowCount: result.affectedRows ?? result.rows.length };
    },
  });
  return {
    kind: "pglite",
    ...wrap(lite),
    // PGlite has one connection and runs one transaction at a time, which serialises agents trivially.
    transaction: (fn) => lite.transaction((tx) => fn(wrap(tx))),
    close: () => lite.close(),
  };
}

/** Opens PostgreSQL when `databaseUrl` is set, else PGlite in `dataDir` (this process's alone while open). */
export async function openDb(options: { databaseUrl?: string; dataDir: string } & OpenOptions): Promise<Db> {
  return options.databaseUrl ? createPgDb(options.databaseUrl) : createPgliteDb(options.dataDir, options);
}
