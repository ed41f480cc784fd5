/**
 * ERC-8004 registration files as Vrai keeps them (issue #27): for each erc8004 proof, what its identity's agentURI
 * said when last read (the fields, or why it was refused or not read, when, and the URI). It is read when the proof
 * is made, when the indexer sees the registry's `URIUpdated` for the token, and at each weekly re-check of the proof.
 * What an agent says of itself there is self-declared: pages and the API show it apart from what Vrai verified, and
 * no score ever reads it.
 */
import type { Logger } from "pino";
import type { Address } from "viem";
import type { Clock } from "./clock";
import type { ProofRow, ProofsTx } from "./ports";
import { erc8004Binding, parseErc8004Subject } from "./proofs/erc8004-identity";
import type { ReadRegistrationFile, RegistrationReading } from "./proofs/registration-reader";

export type { RegistrationReading };

/** What the API and the pages say with everything the agent declares of itself. */
export const SELF_DECLARED_NOTE = "declared by the agent in its ERC-8004 registration file: not verified by Vrai, and no part of any score";

/** The latest reading of the identity of one erc8004 proof. */
export type StoredRegistration = RegistrationReading & {
  proofId: string;
  agentId: string;
  /** The identity read, as the proof names it: `<chainId>:<registry>:<agentId>`. */
  subject: string;
  /** Unix seconds of the reading. */
  readAt: number;
};

/** Where the readings are kept (src/store/registration-files.ts, migration 018). */
export type RegistrationFileStore = {
  /** Keeps `reading` as the latest of its proof, replacing the one before. */
  saveReading(reading: StoredRegistration): Promise<void>;
  /** The latest reading of the agent's latest active erc8004 proof (the latest proven, should it hold two), if it was read. */
  latestOfAgent(agentId: string): Promise<StoredRegistration | null>;
};

export type RegistrationFiles = {
  /**
   * Reads the registration file of an active erc8004 proof's identity now and keeps the outcome; null, reading nothing,
   * for a proof of another kind. Never throws for what the file is (a refusal is an outcome).
   * @param options.submission the proof is being submitted: read within the time a submission has
   */
  refresh(proof: ProofRow, options?: { submission?: boolean }): Promise<StoredRegistration | null>;
  /** Reads again the registration file of the identity token an active proof holds (its agentURI changed); returns how many. */
  refreshIdentity(chainId: number, registry: Address, agentId: bigint): Promise<number>;
  /** What the agent says of itself: the latest reading of its latest active erc8004 proof, if any. */
  ofAgent(agentId: string): Promise<StoredRegistration | null>;
};

/**
 * The registration files of erc8004 proofs.
 * @param deps.read the reader (the proof verifier's `readRegistrationFile`: the proofs' sources and outbound guard)
 * @example
 * const registrations = createRegistrationFiles({ files, proofs: store.read, read: verifier.readRegistrationFile, clock });
 * await registrations.refresh(proof); // { status: "read", uri, file, ... }
 */
export function createRegistrationFiles(deps: {
  files: RegistrationFileStore;
  proofs: Pick<ProofsTx, "findActiveBinding">;
  read: ReadRegistrationFile;
  clock: Clock;
  logger?: Logger;
}): RegistrationFiles {
  async function refresh(proof: ProofRow, options: { submission?: boolean } = {}): Promise<StoredRegistration | null> {
    if (proof.kind !== "erc8004" || proof.agentId === null) return null;
    const reading = await deps.read(parseErc8004Subject(proof.subject), options);
    const stored: StoredRegistration = {
      ...reading,
      proofId: proof.id,
      agentId: proof.agentId,
      subject: proof.subject,
      readAt: deps.clock.now(),
    };
    await deps.files.saveReading(stored);
    deps.logger?.debug({ proof: proof.id, status: reading.status, reason: reading.reason }, "registration file read");
    return stored;
  }

  return {
    refresh,
    async refreshIdentity(chainId, registry, agentId) {
      const proof = await deps.proofs.findActiveBinding(erc8004Binding({ chainId, registry, agentId }));
      if (!proof) return 0;
      await refresh(proof);
      return 1;
    },
    ofAgent: (agentId) => deps.files.latestOfAgent(agentId),
  };
}
