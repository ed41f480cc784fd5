/** A JSON client of the HTTP API for tests, and the owner-with-an-agent most proof tests start from. */

export type ApiAnswer = { status: number; json: any };

export type ApiClient = {
  /** Sends `body` as JSON (when given) with the bearer `token` (when given) and parses the JSON answer. */
  call(method: string, path: string, token?: string, body?: unknown): Promise<ApiAnswer>;
  /** A new owner (`token`) and one agent of it (`agentId`, `key`). */
  ownerWithAgent(): Promise<{ owner: any; agent: any }>;
  /** A check-in of the agent with `key` (its bearer) and `idempotencyKey`. */
  checkIn(agentId: string, key: string, idempotencyKey: string): Promise<ApiAnswer>;
};

/**
 * A client of the server at `baseUrl()` (read at each call, so it can be made before the server starts).
 * @example
 * const { call, ownerWithAgent } = apiClient(() => server.url);
 */
export function apiClient(baseUrl: () => string): ApiClient {
  async function call(method: string, path: string, token?: string, body?: unknown): Promise<ApiAnswer> {
    const res = await fetch(baseUrl() + path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  }
  async function ownerWithAgent() {
    const owner = (await call("POST", "/v1/owners", undefined, {})).json;
    const agent = (await call("POST", "/v1/agents", owner.token, {})).json;
    return { owner, agent };
  }
  async function checkIn(agentId: string, key: string, idempotencyKey: string): Promise<ApiAnswer> {
    const res = await fetch(`${baseUrl()}/v1/agents/${agentId}/checkins`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "idempotency-key": idempotencyKey },
    });
    return { status: res.status, json: (await res.json()) as any };
  }
  return { call, ownerWithAgent, checkIn };
}
