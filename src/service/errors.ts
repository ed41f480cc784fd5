import { BaseError } from "../errors";

/** The caller did not prove who it is (missing or wrong token or key): HTTP 401. */
export class UnauthorizedError extends BaseError {
  constructor(code: string, message: string) {
    super(code, message, { status: 401 });
  }
}

/** The caller is known but may not do this: HTTP 403. */
export class ForbiddenError extends BaseError {
  constructor(code: string, message: string) {
    super(code, message, { status: 403 });
  }
}

/** The thing named does not exist: HTTP 404. */
export class NotFoundError extends BaseError {
  constructor(code: string, message: string) {
    super(code, message, { status: 404 });
  }
}

/** The request conflicts with the current state: HTTP 409. */
export class ConflictError extends BaseError {
  constructor(code: string, message: string) {
    super(code, message, { status: 409 });
  }
}

/**
 * An agent its owner unclaimed (issue #29): no owner holds it and, with no claim, it has no score (V2). A read of it is
 * 404 (nothing of it is served); a change other than a new claim is 409.
 */
export function agentUnclaimedError(agentId: string, status: 404 | 409): BaseError {
  return status === 404
    ? new NotFoundError(
        "agent_unclaimed",
        `agent ${agentId} is unclaimed: its owner released it, and it has no score until an owner claims it`,
      )
    : new ConflictError(
        "agent_unclaimed",
        `agent ${agentId} is unclaimed: its owner released it, and nothing changes it but a new claim (POST /v1/agents/${agentId}/claim)`,
      );
}
