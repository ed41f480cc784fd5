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
