/**
 * GitHub proofs (V6): a public gist of the user whose content contains the challenge token, read
 * from the GitHub REST API (`GET /gists/{id}`). Files the API truncates (over 1 MB) are read from
 * their `raw_url`, which must lie under the configured raw base.
 */
import { z } from 'zod';
import { retry } from '../../../retry';
import { proofError, ProofSourceUnreachableError, unreachableRetry } from '../errors';
import { boundedGet, isTransientStatus } from '../http';
import { normalizeGithubLogin } from '../subjects';
import type { GithubEvidence, KindVerifier, ResolvedDeps, VerifiedProof } from '../types';

type GithubProof = Extract<VerifiedProof, { kind: 'github' }>;

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

/** Verifies and re-checks GitHub gist proofs against `deps.githubApiBaseUrl`. */
export function createGithubVerifier(deps: ResolvedDeps): KindVerifier<GithubEvidence, GithubProof> {
  const headers: Record<string, string> = {
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'vrai-proof-verifier',
    ...(deps.githubToken ? { authorization: `Bearer ${deps.githubToken}` } : {}),
  };
  const rawBase = new URL(deps.githubRawBaseUrl);

  const get = (url: string, maxBytes: number, deadline?: AbortSignal) =>
    retry(
      async () => {
        const response = await boundedGet(deps.fetch, url, { timeoutMs: deps.httpTimeoutMs, maxBytes, headers, signal: deadline });
        const rateLimited = (response.status === 403 || response.status === 401) && response.headers.get('x-ratelimit-remaining') === '0';
        if (isTransientStatus(response.status) || rateLimited) {
          throw new ProofSourceUnreachableError(`GET ${url} answered ${response.status}`);
        }
        return response;
      },
      unreachableRetry(deps, deadline),
    );

  /** Throws unless gist `gistId` is public, owned by `login` and contains `token`. */
  async function checkGist(gistId: string, login: string, token: string, deadline?: AbortSignal): Promise<void> {
    const response = await get(`${deps.githubApiBaseUrl.replace(/\/+$/, '')}/gists/${encodeURIComponent(gistId)}`, MAX_API_BYTES, deadline);
    if (response.status === 404 || response.status === 410) throw proofError('proof_gist_not_found', `gist ${gistId} does not exist`);
    if (response.status !== 200) throw proofError('proof_source_invalid', `the GitHub API answered ${response.status} for gist ${gistId}`);
    if (response.cut) throw proofError('proof_source_invalid', `gist ${gistId} is larger than ${MAX_API_BYTES} bytes`);
    const gist = parseGist(response.text, gistId);
    if (!gist.public) throw proofError('proof_gist_not_public', `gist ${gistId} is secret: only public gists prove an account`);
    const ownerLogin = gist.owner?.login;
    if (!ownerLogin || ownerLogin.toLowerCase() !== login) {
      throw proofError('proof_gist_owner_mismatch', `gist ${gistId} belongs to ${ownerLogin ?? 'nobody (anonymous)'}, not ${login}`);
    }
    for (const file of Object.values(gist.files)) {
      if (file && (await fileContent(file, deadline)).includes(token)) return;
    }
    throw proofError('proof_challenge_missing', `no file of gist ${gistId} contains ${token}`);
  }

  async function fileContent(file: { content?: string; truncated?: boolean; raw_url?: string }, deadline?: AbortSignal): Promise<string> {
    if (!file.truncated && file.content !== undefined) return file.content;
    if (!file.raw_url) return file.content ?? '';
    if (!isUnderRawBase(file.raw_url)) {
      throw proofError('proof_source_invalid', `raw_url ${file.raw_url} is not under ${rawBase.href}`);
    }
    const response = await get(file.raw_url, MAX_RAW_BYTES, deadline);
    if (response.status !== 200) throw proofError('proof_source_invalid', `GET ${file.raw_url} answered ${response.status}`);
    return response.text;
  }

  function isUnderRawBase(url: string): boolean {
    try {
      const parsed = new URL(url);
      const basePath = rawBase.pathname.endsWith('/') ? rawBase.pathname : `${rawBase.pathname}/`;
      return parsed.origin === rawBase.origin && (parsed.pathname + '/').startsWith(basePath);
    } catch {
      return false;
    }
  }

  return {
    async verify(challenge, evidence, deadline) {
      const username = normalizeGithubLogin(evidence.username);
      if (username !== challenge.subject) {
        throw proofError('proof_subject_mismatch', `the challenge is for GitHub user ${challenge.subject}, the evidence names ${username}`);
      }
      await checkGist(evidence.gistId, username, challenge.token, deadline);
      return { kind: 'github', subject: username, username, gistId: evidence.gistId, token: challenge.token };
    },
    async recheck(proof) {
      await checkGist(proof.gistId, proof.username, proof.token);
      return { type: 'ok' };
    },
  };
}

function parseGist(text: string, gistId: string): z.infer<typeof gistSchema> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw proofError('proof_source_invalid', `the GitHub API answered gist ${gistId} with invalid JSON`, error);
  }
  const parsed = gistSchema.safeParse(json);
  if (!parsed.success) throw proofError('proof_source_invalid', `the GitHub API answered gist ${gistId} in an unknown shape`, parsed.error);
  return parsed.data;
}
