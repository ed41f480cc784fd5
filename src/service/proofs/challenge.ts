/**
 * Challenges of the identity proofs (V6): what the server issues, remembers (single use, until it
 * expires: enforced by the store) and what the user publishes or signs.
 *
 * - token: `vrai-proof:v1:<kind>:<subject>:<nonce>`, `nonce` = 32 lowercase hex digits (128 random
 *   bits). It is what a gist, a DNS TXT record or `/.well-known/vrai.json` must contain.
 * - message: the human-readable text signed with EIP-191 (wallet, erc8004). It names the purpose,
 *   the subject, the Vrai owner and agent, the nonce and the expiry, and ends with the token, so a
 *   signature cannot be replayed for another owner, agent, subject or purpose.
 * - typed data: the same fields as EIP-712 `VraiProof` under the domain `{ name: 'Vrai', version: '1' }`.
 */
import { randomBytes as nodeRandomBytes, randomUUID } from "node:crypto";
import { proofError } from "./errors";
import type { ProofKind } from "../../method";
import { currentProofRule, proofKindModule } from "./kinds";

/** Version prefix of every challenge token. */
export const CHALLENGE_TOKEN_PREFIX = "vrai-proof:v1";
/** Random bytes in a nonce: 128 bits. */
const NONCE_BYTES = 16;

/** A challenge as issued; the store keeps it until it is used once or expires. */
export type Challenge = {
  id: string;
  kind: ProofKind;
  /** Canonical subject (the kind's `normalizeSubject`). */
  subject: string;
  /** The Vrai owner (account) the proof is for. */
  ownerId: string;
  /** The Vrai agent; required for domain and erc8004, absent (null) for owner-level proofs if not given. */
  agentId: string | null;
  /** 32 lowercase hex digits. */
  nonce: string;
  /** `vrai-proof:v1:<kind>:<subject>:<nonce>`. */
  token: string;
  /** What the user signs (EIP-191) or, for github, may paste whole into the gist. */
  message: string;
  /** Unix seconds. */
  issuedAt: number;
  /** Unix seconds; the challenge is expired at and after this instant. */
  expiresAt: number;
};

export type CreateChallengeParams = {
  kind: ProofKind;
  subject: string;
  ownerId: string;
  agentId?: string | null;
  /** Unix seconds (the injected clock). */
  now: number;
  /** Lifetime in seconds (> 0). */
  ttlS: number;
  /** Random source; defaults to `crypto.randomBytes`. */
  randomBytes?: (size: number) => Uint8Array;
};

/**
 * Issues a challenge for proving `subject` of `kind`.
 * @throws InvalidInputError `proof_subject_invalid`, `proof_domain_invalid`, `proof_agent_required`, `proof_evidence_invalid`
 * @example
 * const challenge = createChallenge({ kind: 'domain', subject: 'Example.com', ownerId: 'u1', agentId: 'a1', now, ttlS: 3600 });
 * challenge.token; // 'vrai-proof:v1:domain:example.com:3f2a…'
 */
export function createChallenge(params: CreateChallengeParams): Challenge {
  const { kind, ownerId, now, ttlS } = params;
  const agentId = params.agentId ?? null;
  if (!ownerId) throw proofError("proof_evidence_invalid", "a challenge needs the Vrai owner id");
  if (!Number.isSafeInteger(now) || now < 0) throw proofError("proof_evidence_invalid", `now must be whole unix seconds, got ${now}`);
  if (!Number.isSafeInteger(ttlS) || ttlS <= 0)
    throw proofError("proof_evidence_invalid", `ttlS must be a positive whole number, got ${ttlS}`);
  if (currentProofRule(kind).belongsTo === "agent" && !agentId) {
    throw proofError("proof_agent_required", `a ${kind} proof belongs to one agent (V6): the challenge must name it in agentId`);
  }
  const subject = proofKindModule(kind).normalizeSubject(params.subject);
  const nonce = Buffer.from((params.randomBytes ?? nodeRandomBytes)(NONCE_BYTES)).toString("hex");
  if (nonce.length !== NONCE_BYTES * 2) throw new Error(`randomBytes returned ${nonce.length / 2} bytes, expected ${NONCE_BYTES}`);
  const token = challengeToken(kind, subject, nonce);
  const expiresAt = now + ttlS;
  return {
    id: randomUUID(),
    kind,
    subject,
    ownerId,
    agentId,
    nonce,
    token,
    message: challengeMessage({ kind, subject, ownerId, agentId, nonce, token, expiresAt }),
    issuedAt: now,
    expiresAt,
  };
}

/** True when `challenge` can no longer be used at `now` (unix seconds): `now >= expiresAt`. */
export function isExpired(challenge: Pick<Challenge, "expiresAt">, now: number): boolean {
  return now >= challenge.expiresAt;
}

/** `vrai-proof:v1:<kind>:<subject>:<nonce>`. */
export function challengeToken(kind: ProofKind, subject: string, nonce: string): string {
  return `${CHALLENGE_TOKEN_PREFIX}:${kind}:${subject}:${nonce}`;
}

/**
 * The human-readable message of a challenge: one `Field: value` per line.
 * @example
 * Vrai identity proof
 * I control the wallet 0xf39f….
 * Kind: wallet
 * Subject: 0xf39f…
 * Vrai owner: u1
 * Vrai agent: none (owner-level proof)
 * Nonce: 3f2a…
 * Expires: 2026-01-01T01:00:00.000Z
 * Challenge: vrai-proof:v1:wallet:0xf39f…:3f2a…
 */
function challengeMessage(c: Omit<Challenge, "id" | "message" | "issuedAt">): string {
  return [
    "Vrai identity proof",
    proofKindModule(c.kind).purpose(c.subject),
    `Kind: ${c.kind}`,
    `Subject: ${c.subject}`,
    `Vrai owner: ${c.ownerId}`,
    `Vrai agent: ${c.agentId ?? "none (owner-level proof)"}`,
    `Nonce: ${c.nonce}`,
    `Expires: ${new Date(c.expiresAt * 1000).toISOString()}`,
    `Challenge: ${c.token}`,
  ].join("\n");
}

/** EIP-712 domain of Vrai proofs. No chainId: a wallet proof is not tied to a chain. */
export const VRAI_PROOF_DOMAIN = { name: "Vrai", version: "1" } as const;

/** EIP-712 types of Vrai proofs; `agent` is '' for owner-level proofs without an agent. */
export const VRAI_PROOF_TYPES = {
  VraiProof: [
    { name: "kind", type: "string" },
    { name: "subject", type: "string" },
    { name: "owner", type: "string" },
    { name: "agent", type: "string" },
    { name: "nonce", type: "string" },
    { name: "expiresAt", type: "uint64" },
  ],
} as const;

/**
 * The EIP-712 typed data a client signs for `challenge` (viem `signTypedData` input).
 * @example
 * const signature = await account.signTypedData(proofTypedData(challenge));
 */
export function proofTypedData(challenge: Pick<Challenge, "kind" | "subject" | "ownerId" | "agentId" | "nonce" | "expiresAt">) {
  return {
    domain: VRAI_PROOF_DOMAIN,
    types: VRAI_PROOF_TYPES,
    primaryType: "VraiProof" as const,
    message: {
      kind: challenge.kind,
      subject: challenge.subject,
      owner: challenge.ownerId,
      agent: challenge.agentId ?? "",
      nonce: challenge.nonce,
      expiresAt: BigInt(challenge.expiresAt),
    },
  };
}
