import { toRfc3339 } from "../method";
import { InvalidInputError } from "../errors";
import type { OperatorRepository } from "../store/operators";
import type { Clock } from "./clock";
import { UNNAMED_OPERATOR } from "./operator";
import { ConflictError, NotFoundError, UnauthorizedError } from "./errors";
import { generateSecret, hashSecret, secretMatches } from "./secrets";

/**
 * The actor of the bootstrap administrator: whoever holds OPERATOR_TOKEN on the API, and whoever
 * runs `vrai operator` against the store (adding and revoking operators takes the database itself).
 */
export const ADMIN_OPERATOR = "admin";

const NAME = "[a-z][a-z0-9_-]{0,31}";

/** V7 "who": an operator's name, as the audit log, penalties and outages record it. */
export const OPERATOR_NAME = new RegExp(`^${NAME}$`);

/**
 * Names no operator may take: the administrator, `operator` (the actor of everything written before
 * operators had names), and the other actors of the audit log, so each actor names one party.
 */
const RESERVED_NAMES: ReadonlySet<string> = new Set([ADMIN_OPERATOR, UNNAMED_OPERATOR, "owner", "scheduler", "replay"]);

/** An operator token: the name it belongs to, then a 256-bit secret (`secrets.ts`). */
const OPERATOR_TOKEN = new RegExp(`^vop_(${NAME})\\.`);

/** Named operators (V7): their credentials, and who a token authenticates. */
export type Operators = {
  /**
   * Adds an operator; its token is returned here once and only its hash is stored.
   * @throws InvalidInputError a name that is not `OPERATOR_NAME` or is reserved; ConflictError a name taken before
   */
  add(name: string): Promise<{ name: string; token: string }>;
  /**
   * Revokes an operator from now on: its token is refused; what it did stays recorded under its name.
   * @throws NotFoundError no operator of that name; ConflictError already revoked
   */
  revoke(name: string): Promise<{ name: string; revokedAt: number }>;
  /**
   * The actor a token authenticates: `admin` for the bootstrap token, else the name of the
   * unrevoked operator whose token it is. 401 otherwise.
   */
  authenticate(token: string): Promise<string>;
};

/**
 * Named operators on their repository.
 * @param deps.bootstrapTokenHash SHA-256 of OPERATOR_TOKEN (absent: only named operators authenticate)
 */
export function createOperators(deps: { operators: OperatorRepository; clock: Clock; bootstrapTokenHash?: string }): Operators {
  const { operators, clock } = deps;

  async function add(name: string): Promise<{ name: string; token: string }> {
    if (!OPERATOR_NAME.test(name)) {
      throw new InvalidInputError(
        "operator_name_invalid",
        `operator name must be 1 to 32 lowercase letters, digits, _ or -, starting with a letter, got ${JSON.stringify(name)}`,
      );
    }
    if (RESERVED_NAMES.has(name))
      throw new InvalidInputError("operator_name_reserved", `operator name ${name} is reserved (one of ${[...RESERVED_NAMES].join(", ")})`);
    const token = `vop_${name}.${generateSecret("t")}`;
    const at = clock.now();
    const added = await operators.insert(
      { name, tokenHash: hashSecret(token), createdAt: at, revokedAt: null },
      { at, actor: ADMIN_OPERATOR, action: "operator.add", subject: name, details: {} },
    );
    if (!added)
      throw new ConflictError(
        "operator_exists",
        `operator ${name} already exists (a name is never given to another operator, even once revoked)`,
      );
    return { name, token };
  }

  async function revoke(name: string): Promise<{ name: string; revokedAt: number }> {
    const found = await operators.get(name);
    if (!found) throw new NotFoundError("operator_not_found", `operator ${JSON.stringify(name)} does not exist`);
    const at = clock.now();
    if (
      found.revokedAt !== null ||
      !(await operators.revoke(name, at, { at, actor: ADMIN_OPERATOR, action: "operator.revoke", subject: name, details: {} }))
    ) {
      throw new ConflictError("operator_already_revoked", `operator ${name} was already revoked`);
    }
    return { name, revokedAt: at };
  }

  async function authenticate(token: string): Promise<string> {
    if (deps.bootstrapTokenHash !== undefined && secretMatches(token, deps.bootstrapTokenHash)) return ADMIN_OPERATOR;
    const match = OPERATOR_TOKEN.exec(token);
    const found = match ? await operators.get(match[1]) : null;
    if (!found || !secretMatches(token, found.tokenHash))
      throw new UnauthorizedError("invalid_operator_token", "the operator token is not valid");
    if (found.revokedAt !== null)
      throw new UnauthorizedError("operator_revoked", `operator ${found.name} was revoked at ${toRfc3339(found.revokedAt)}`);
    return found.name;
  }

  return { add, revoke, authenticate };
}
