/**
 * How a score is kept in the `scores` table and read back (V9; migrations 010 and 016), apart from the
 * SQL that moves the rows (src/store/sql-store.ts), which only maps them.
 *
 * A score is kept in one of three forms, by when it was written:
 * - compact, with its result packed (from migration 016): its inputs as their compact facts
 *   (src/store/score-facts.ts, the settled day lines read back from `agent_days`) and its result in the
 *   method's compact form (`packResult`), which the latest-score cache keeps too and `renderResult` serves;
 * - compact, without its result (migrations 010 to 015): the result is computed again from the rebuilt
 *   inputs when it is read;
 * - as text (before migration 010, and a score inserted without its claim and document): the canonical
 *   inputs and the result's JSON, with the packed result beside them from migration 016.
 * Inputs rebuilt from facts are checked against the stored SHA-256: a fact that changed under a stored
 * score is an error (`score_inputs_mismatch`), or, not strict, returned as rebuilt for `vrai recompute
 * --verify` to report.
 */
import { BaseError } from "../errors";
import {
  canonicalScoreInputs,
  packResult,
  packResultText,
  renderResult,
  scoreFromInputs,
  sha256Hex,
  type MethodVersion,
  type ScoreResult,
} from "../method";
import type { NewScore, ScoreRow, ScoreSummary } from "../service/ports";
import { decodeScoreFacts, encodeScoreFacts, type SettledDay } from "./score-facts";

/** A score's columns as the store reads them. */
export type ScoreColumns = {
  id: number;
  agentId: string;
  method: MethodVersion;
  at: number;
  trigger: "daily" | "change";
  day: string | null;
  sha256: string;
  total: number;
  /** The canonical inputs, for a score kept as text. */
  inputs: string | null;
  /** The result's JSON text, for a score kept as text. */
  resultJson: string | null;
  /** The compact inputs (migration 010). */
  facts: Uint8Array | null;
  /** The compact result (migration 016). */
  packed: Uint8Array | null;
  /** The agent's `agent_days` lines of the score's claim in its window, for a compact score whose inputs or result are read. */
  settled: ReadonlyMap<string, SettledDay>;
};

/** What an insert writes of a new score, besides its summary's columns. */
export type PackedScore = {
  inputs: string | null;
  resultJson: string | null;
  claimId: number | null;
  facts: Uint8Array | null;
  packed: Uint8Array | null;
  established: boolean | null;
};

/**
 * The stored form of `score`: compact when its claim and document come with it, else as text. Its
 * result is packed; one of a shape the engine does not make (none of its own) is kept as text instead.
 */
export function packScore(score: NewScore): PackedScore {
  const packed = packResult(score.result, score.at);
  if (score.claimId === undefined || score.document === undefined || packed === null) {
    return { inputs: score.inputs, resultJson: JSON.stringify(score.result), claimId: null, facts: null, packed, established: null };
  }
  return {
    inputs: null,
    resultJson: null,
    claimId: score.claimId,
    facts: encodeScoreFacts(score.document, score.at),
    packed,
    established: score.result.state === "established",
  };
}

/** The inputs document of a compact score, rebuilt, its canonical text and SHA-256 checked (`strict`) against the stored one. */
function rebuiltInputs(c: ScoreColumns, strict: boolean): { canonical: string; sha256: string } {
  if (c.facts === null) throw new BaseError("score_form_unknown", `score ${c.id} keeps neither its inputs nor their compact form`);
  const canonical = canonicalScoreInputs(decodeScoreFacts(c.facts, { agent: c.agentId, method: c.method, at: c.at }, c.settled));
  const sha256 = sha256Hex(canonical);
  if (strict && sha256 !== c.sha256) {
    throw new BaseError(
      "score_inputs_mismatch",
      `score ${c.id}: its inputs rebuilt from the stored facts hash to ${sha256}, not the stored ${c.sha256}`,
    );
  }
  return { canonical, sha256 };
}

/** The result of a compact score without a packed one (migrations 010 to 015): computed from its rebuilt inputs (V9), checked like them when `strict`. */
function computedResult(c: ScoreColumns, strict: boolean): ScoreResult {
  if (c.facts === null) throw new BaseError("score_form_unknown", `score ${c.id} keeps neither its result nor its inputs`);
  const document = decodeScoreFacts(c.facts, { agent: c.agentId, method: c.method, at: c.at }, c.settled);
  const { result, sha256 } = scoreFromInputs(document);
  if (strict && sha256 !== c.sha256)
    throw new BaseError(
      "score_inputs_mismatch",
      `score ${c.id}: its inputs rebuilt from the stored facts hash to ${sha256}, not the stored ${c.sha256}`,
    );
  return result;
}

const keyOf = (c: ScoreColumns) => ({ agentId: c.agentId, at: c.at, sha256: c.sha256, total: c.total });

/** The summary of a stored score: its result's text and, where it has one, its compact result. */
export function summaryOf(c: ScoreColumns): ScoreSummary {
  const head = {
    id: c.id,
    agentId: c.agentId,
    method: c.method,
    at: c.at,
    trigger: c.trigger,
    day: c.day,
    sha256: c.sha256,
    total: c.total,
  };
  if (c.packed !== null) {
    const { packed } = c;
    const key = keyOf(c);
    let text: string | undefined;
    // Rendered when first read, once: the latest-score cache keeps the compact result alone, and fills itself at start
    // with summaries it never renders (issue #30).
    return {
      ...head,
      packed,
      get resultJson() {
        text ??= renderResult(packed, key);
        return text;
      },
    };
  }
  if (c.resultJson !== null) return { ...head, resultJson: c.resultJson, packed: packResultText(c.resultJson, c.at) };
  const result = computedResult(c, true);
  return { ...head, resultJson: JSON.stringify(result), packed: packResult(result, c.at) };
}

/** A whole stored score: its inputs (rebuilt from a compact score's facts) and its result. */
export function scoreRowOf(c: ScoreColumns, options: { strict: boolean }): ScoreRow {
  const inputs = c.inputs ?? rebuiltInputs(c, options.strict).canonical;
  const result: ScoreResult =
    c.packed !== null
      ? (JSON.parse(renderResult(c.packed, keyOf(c))) as ScoreResult)
      : c.resultJson !== null
        ? (JSON.parse(c.resultJson) as ScoreResult)
        : computedResult(c, options.strict);
  return {
    id: c.id,
    agentId: c.agentId,
    method: c.method,
    at: c.at,
    trigger: c.trigger,
    day: c.day,
    inputs,
    sha256: c.sha256,
    result,
    total: c.total,
  };
}
