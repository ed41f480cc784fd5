/**
 * What a proof kind's module holds (V6): everything about one kind of identity proof in one place.
 * The table of kinds (`./index.ts`) has one module per `ProofKind`; the challenge, the verifier's
 * dispatch, the API's schemas and its document, the method page, the configuration and the
 * re-checks are derived from it. What the score counts of a kind (its points, whether it belongs to
 * the owner or to one agent, how often it is re-checked) is the method's, per method version
 * (`MethodRules.identity` in src/method/score/methods.ts).
 */
import type { z } from "zod";
import type { ProofKind } from "../../../method";
import type { Challenge } from "../challenge";
import type { KindVerifier, ProofContext, ResolvedDeps } from "../types";

/** What a stored proof of a kind holds: JSON the store keeps and hands back to `recheck`. */
export type StoredProof<K extends ProofKind = ProofKind> = { kind: K; subject: string };

/** One thing to publish for a challenge: where, under what name, and exactly what. */
export type Publication = {
  /** `dns-txt`: a TXT record; `https-file`: a file served over HTTPS; `gist`: a public GitHub gist. */
  type: "dns-txt" | "https-file" | "gist";
  /** The record's name, the file's URL, or what the gist is. */
  name: string;
  /** The record's value, the file's body, or the text the gist must contain. */
  value: string;
};

/** What the owner does with a challenge, in the order to do it, and what to send back. */
export type ProofInstructions = {
  /** The steps in plain words. */
  steps: string[];
  /** Where to publish the challenge (one of them is enough), for a kind proven by publishing it. */
  publish: Publication[];
  /** What to sign and with which wallet, for a kind proven by a signature. */
  sign: { message: string; by: string } | null;
  /** The evidence to send to `POST /v1/proofs`, with what to fill in shown in angle brackets. */
  evidence: Record<string, string | number>;
};

/** The module of proof kind `K`: its evidence `E`, what a verification of it proves, `P`, and the settings it reads, `S`. */
export type ProofKindModule<K extends ProofKind, E, P extends StoredProof<K>, S extends z.ZodRawShape = Record<never, never>> = {
  readonly kind: K;
  /** Its name on pages and in messages, e.g. "GitHub". */
  readonly title: string;
  /** What a person proves with it, in running text, e.g. "a GitHub account". */
  readonly noun: string;
  /** What it proves and how, in one sentence, for the API document and the method page. */
  readonly summary: string;
  /** What the method page adds about its re-checks, beyond their cadence (the method's). */
  readonly recheckNote?: string;
  /** The subject in its one canonical spelling, so that challenges, evidence and bindings compare as plain strings. @throws InvalidInputError */
  normalizeSubject(input: string): string;
  /** A subject as a person may type it (not in its canonical spelling), for examples and tests. */
  readonly subjectExample: string;
  /** The first line of the challenge's message: what its signer or publisher claims. */
  purpose(subject: string): string;
  /** Whether it is proven by a wallet's signature of the challenge (its answer then carries EIP-712 typed data). */
  readonly signed: boolean;
  /** What to do with `challenge`, for an agent in `context` (e.g. the ERC-8004 identity a domain's file names). */
  instructions(challenge: Challenge, context: ProofContext): ProofInstructions;
  /** The evidence a submission carries: strict, so that a mistyped field is refused, not ignored. */
  readonly evidence: z.ZodType<E>;
  /** An example of it, for the API document. */
  readonly evidenceExample: E;
  /** Environment variables it reads: its fields of the configuration's schema, each with its check and default. */
  readonly settings: S;
  /** Its verification and re-check, given the shared dependencies and its settings as configured. */
  verifier(deps: ResolvedDeps, settings: z.output<z.ZodObject<S>>): KindVerifier<E, P>;
  /** The key kept unique among active proofs (V6: bound to one agent, or one owner): `<kind>:<canonical subject>`, lowercase. */
  binding(proof: P): string;
  /**
   * The binding of the proof of the same agent this one was verified against, when it rests on one (a domain proven
   * by the standard's endpoint-domain verification rests on the ERC-8004 proof whose identity its file lists): it
   * is removed with that proof. Given what the store keeps, which may be of an older shape.
   */
  reliesOn?(proof: P): string | null;
};

/** Any kind's module, as code that works for every kind sees it (the table pairs each evidence and proof with its kind). */
export type AnyProofKindModule = ProofKindModule<ProofKind, unknown, StoredProof, z.ZodRawShape>;
