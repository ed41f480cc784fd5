/**
 * GitHub proofs (V6): a public gist of the user whose content contains the challenge token, read
 * from the GitHub REST API (`GET /gists/{id}`). Files the API truncates (over 1 MB) are read from
 * their `raw_url`, which must lie under the configured raw base.
 */
import { z } from "zod";
import { retry } from "../../../retry";
import { proofError, ProofSourceUnreachableError, unreachableRetry } from "../errors";
import { boundedGet, isTransientStatus } from "../http";
import type { KindVerifier, ResolvedDeps } from "../types";
import type { ProofKindModule } from "./kind";

/** GitHub logins: 1–39 letters, digits and hyphens, not starting with a hyphen. */
const GITHUB_LOGIN = /^[a-z0-9][a-z0-9-]{0,38}$/i;

/** Lowercases a GitHub login after checking its syntax. @throws `proof_subject_invalid` */
export function normalizeGithubLogin(input: string): string {
  if (!GITHUB_LOGIN.test(input)) throw proofError("proof_subject_invalid", `invalid GitHub username ${JSON.stringify(input)}`);
  return input.toLowerCase();
}

const evidence = z.strictObject({
  username: z.string().min(1).max(39),
  /** Gist ids are hex (older ones decimal). */
  gistId: z.string().regex(/^[0-9a-fA-F]{1,64}$/, "a gist id (hex digits)"),
});
export type GithubEvidence = z.infer<typeof evidence>;

/** What a GitHub proof holds: the gist that proved it, read again at each re-check. */
export type GithubProof = { kind: "github"; subject: string; username: string; gistId: string; token: string };

const settings = {
  /** The GitHub REST API. */
  GITHUB_API_BASE_URL: z.url().default("https://api.github.com"),
  /** Where a truncated gist file's `raw_url` must point. */
  GITHUB_RAW_BASE_URL: z.url().default("https://gist.githubusercontent.com/"),
  /** A token raises the GitHub API's limit from 60 to 5,000 requests an hour. */
  GITHUB_TOKEN: z.string().min(1).optional(),
};
type GithubSettings = z.output<z.ZodObject<typeof settings>>;

/** The GitHub kind (V6: owner-level). */
export const github: ProofKindModule<"github", GithubEvidence, GithubProof, typeof settings> = {
  kind: "github",
  title: "GitHub",
  noun: "a GitHub account",
  summary: "a GitHub account: a public gist of the account containing the challenge token, read through the GitHub API",
  normalizeSubject: normalizeGithubLogin,
  subjectExample: "OctoCat",
  purpose: (subject) => `I control the GitHub account ${subject}.`,
  signed: false,
  instructions: (challenge) => ({
    steps: [
      `Signed in to GitHub as ${challenge.subject}, create a public gist (https://gist.github.com) ` +
        "whose text contains the challenge token (or the whole message).",
      "Send the gist id (the last part of its URL) as the evidence, before the challenge expires.",
    ],
    publish: [{ type: "gist", name: `a public gist of ${challenge.subject}`, value: challenge.token }],
    sign: null,
    evidence: { username: challenge.subject, gistId: "<the gist id>" },
  }),
  evidence,
  evidenceExample: { username: "octocat", gistId: "aa5a315d61ae9438b18d" },
  settings,
  verifier: createGithubVerifier,
  binding: (proof) => `github:${proof.username.toLowerCase()}`,
};

/** Cap on the API's JSON (a gist inlines up to 1 MB per file). */
const MAX_API_BYTES = 8 * 1024 * 1024;
/** How much of a truncated file's raw content is searched for the token. */
const MAX_RAW_BYTES = 2 * 1024 * 1024;

/** The part of GitHub's gist JSON the check reads. */
const gistSchema = z.object({
  public: z.boolean(),
  owner: z.object({ login: z.string() }).nullish(),
  files: z.record(
    z.string(),
    z.object({ content: z.string().optional(), truncated: z.boolean().optional(), raw_url: z.string().optional() }).nullable(),
  ),
});

/** Verifies and re-checks GitHub gist proofs against the GitHub API of `settings`. */
export function createGithubVerifier(deps: ResolvedDeps, settings: GithubSettings): KindVerifier<GithubEvidence, GithubProof> {
  const headers: Record<string, string> = {
    accept: "application/vnd.github+json",
    "x-github-api-version": "2022-11-28",
    "user-agent": "vrai-proof-verifier",
    ...(settings.GITHUB_TOKEN ? { authorization: `Bearer ${settings.GITHUB_TOKEN}` } : {}),
  };
  const apiBase = settings.GITHUB_API_BASE_URL.replace(/\/+$/, "");
  const rawBase = new URL(settings.GITHUB_RAW_BASE_URL);

  const get = (url: string, maxBytes: number, deadline?: AbortSignal) =>
    retry(
      async () => {
        const response = await boundedGet(deps.fetch, url, { timeoutMs: deps.httpTimeoutMs, maxBytes, headers, signal: deadline });
        const rateLimited = (response.status === 403 || response.status === 401) && response.headers.get("x-ratelimit-remaining") === "0";
        if (isTransientStatus(response.status) || rateLimited) {
          throw new ProofSourceUnreachableError(`GET ${url} answered ${response.status}`);
        }
        return response;
      },
      unreachableRetry(deps, deadline),
    );

  /** Throws unless gist `gistId` is public, owned by `login` and contains `token`. */
  async function checkGist(gistId: string, login: string, token: string, deadline?: AbortSignal): Promise<void> {
    const response = await get(`${apiBase}/gists/${encodeURIComponent(gistId)}`, MAX_API_BYTES, deadline);
    if (response.status === 404 || response.status === 410) throw proofError("proof_gist_not_found", `gist ${gistId} does not exist`);
    if (response.status !== 200) throw proofError("proof_source_invalid", `the GitHub API answered ${response.status} for gist ${gistId}`);
    if (response.cut) throw proofError("proof_source_invalid", `gist ${gistId} is larger than ${MAX_API_BYTES} bytes`);
    const gist = parseGist(response.text, gistId);
    if (!gist.public) throw proofError("proof_gist_not_public", `gist ${gistId} is secret: only public gists prove an account`);
    const ownerLogin = gist.owner?.login;
    if (!ownerLogin || ownerLogin.toLowerCase() !== login) {
      throw proofError("proof_gist_owner_mismatch", `gist ${gistId} belongs to ${ownerLogin ?? "nobody (anonymous)"}, not ${login}`);
    }
    for (const file of Object.values(gist.files)) {
      if (file && (await fileContent(file, deadline)).includes(token)) return;
    }
    throw proofError("proof_challenge_missing", `no file of gist ${gistId} contains ${token}`);
  }

  async function fileContent(file: { content?: string; truncated?: boolean; raw_url?: string }, deadline?: AbortSignal): Promise<string> {
    if (!file.truncated && file.content !== undefined) return file.content;
    if (!file.raw_url) return file.content ?? "";
    if (!isUnderRawBase(file.raw_url)) {
      throw proofError("proof_source_invalid", `raw_url ${file.raw_url} is not under ${rawBase.href}`);
    }
    const response = await get(file.raw_url, MAX_RAW_BYTES, deadline);
    if (response.status !== 200) throw proofError("proof_source_invalid", `GET ${file.raw_url} answered ${response.status}`);
    return response.text;
  }

  function isUnderRawBase(url: string): boolean {
    try {
      const parsed = new URL(url);
      const basePath = rawBase.pathname.endsWith("/") ? rawBase.pathname : `${rawBase.pathname}/`;
      return parsed.origin === rawBase.origin && `${parsed.pathname}/`.startsWith(basePath);
    } catch {
      return false;
    }
  }

  return {
    async verify(challenge, evidence, deadline) {
      const username = normalizeGithubLogin(evidence.username);
      if (username !== challenge.subject) {
        throw proofError("proof_subject_mismatch", `the challenge is for GitHub user ${challenge.subject}, the evidence names ${username}`);
      }
      await checkGist(evidence.gistId, username, challenge.token, deadline);
      return { kind: "github", subject: username, username, gistId: evidence.gistId, token: challenge.token };
    },
    async recheck(proof) {
      await checkGist(proof.gistId, proof.username, proof.token);
      return { type: "ok" };
    },
  };
}

function parseGist(text: string, gistId: string): z.infer<typeof gistSchema> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw proofError("proof_source_invalid", `the GitHub API answered gist ${gistId} with invalid JSON`, error);
  }
  const parsed = gistSchema.safeParse(json);
  if (!parsed.success) throw proofError("proof_source_invalid", `the GitHub API answered gist ${gistId} in an unknown shape`, parsed.error);
  return parsed.data;
}
